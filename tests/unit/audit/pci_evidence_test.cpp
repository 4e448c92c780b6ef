// What the audit reads of the PCI tree and the module system without running a program: ACS
// control from config space (table of config spaces as sysfs gives them, root and not), the
// bridges between each GPU and RDMA NIC of a node laid out in a MemoryFileSystem the way sysfs
// links them, BlueField functions and RShim, and the modules Lmod or Environment Modules offer.
#include "audit/pci_evidence.hpp"

#include <gtest/gtest.h>
#include <map>
#include <string>

#include "audit/environment_modules.hpp"
#include "audit/hpc_sdk.hpp"
#include "support/fake_process_runner.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

void PutDword(std::string& config, size_t at, uint32_t value) {
  for (size_t i = 0; i < 4; ++i) config[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// An extended capability header: id, version 1, the next one's offset.
uint32_t Header(uint16_t id, uint32_t next) {
  return id | (1U << 16) | (next << 20);
}

// A bridge's 4,096 bytes with AER at 0x100, then ACS at 0x148 holding `control`.
std::string BridgeConfig(uint16_t control) {
  std::string config(4096, '\0');
  PutDword(config, 0x100, Header(0x0001, 0x148));
  PutDword(config, 0x148, Header(0x000D, 0));
  PutDword(config, 0x14c, 0x007fU | (uint32_t{control} << 16));
  return config;
}

TEST(PciEvidence, ReadsAcsControlFromConfigSpace) {
  const auto acs = ParseAcsControl(BridgeConfig(0x001d));
  ASSERT_TRUE(acs.has_value());
  EXPECT_TRUE(acs->present);
  EXPECT_EQ(acs->bits, 0x001d);
  EXPECT_EQ(AcsControlText(acs->bits),
            "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-");
  EXPECT_TRUE(AcsRedirects(0x0004));                              // ReqRedir
  EXPECT_TRUE(AcsRedirects(0x0008));                              // CmpltRedir
  EXPECT_TRUE(AcsRedirects(0x0020));                              // EgressCtrl
  EXPECT_FALSE(AcsRedirects(0x0001 | 0x0002 | 0x0010 | 0x0040));  // nothing rerouted

  EXPECT_EQ(ParseAcsControl(std::string(64, '\x11')), std::nullopt);  // not root: 64 bytes
  // 256 bytes: the extended space out of reach (no MMCONFIG), not "no ACS".
  EXPECT_EQ(ParseAcsControl(std::string(256, '\0')), std::nullopt);
  EXPECT_EQ(ParseAcsControl(std::string(4096, '\xff')), std::nullopt);  // did not answer

  std::string none(4096, '\0');  // an empty extended list
  EXPECT_FALSE(ParseAcsControl(none)->present);
  PutDword(none, 0x100, Header(0x0001, 0));  // AER only
  EXPECT_FALSE(ParseAcsControl(none)->present);

  std::string loop(4096, '\0');
  PutDword(loop, 0x100, Header(0x0001, 0x140));
  PutDword(loop, 0x140, Header(0x0002, 0x100));
  EXPECT_EQ(ParseAcsControl(loop), std::nullopt);
  std::string into_header(4096, '\0');
  PutDword(into_header, 0x100, Header(0x0001, 0x040));
  EXPECT_EQ(ParseAcsControl(into_header), std::nullopt);
  std::string cut = BridgeConfig(0x0004).substr(0, 0x14c);  // ACS header, registers cut off
  EXPECT_EQ(ParseAcsControl(cut), std::nullopt);
}

TEST(PciEvidence, ReadsTheAddressesOfASysfsPath) {
  EXPECT_EQ(
      PciPath("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/"
              "0000:03:00.0"),
      (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:03:00.0"}));
  EXPECT_EQ(PciPath("../../../0000:17:00.0"), std::vector<std::string>{"0000:17:00.0"});
  EXPECT_EQ(PciPath("../../../0000:C1:00.1"), std::vector<std::string>{"0000:c1:00.1"});
  EXPECT_TRUE(PciPath("../../devices/virtual/net/lo").empty());
  EXPECT_TRUE(PciPath("pci0000:00").empty());
}

// A node: GPU 0000:03:00.0 and mlx5_0 (0000:04:00.0) behind one switch (upstream 0000:01:00.0,
// downstream ports 0000:02:08.0 and 0000:02:10.0, the GPU's redirecting), mlx5_1 on another root
// port, a software RDMA device (rxe0), a BlueField-3 and its RShim.
sys::MemoryFileSystem Node(uint16_t gpu_port_control) {
  sys::MemoryFileSystem fs;
  const std::string bus = "/sys/bus/pci/devices/";
  const auto device = [&](const std::string& address, const std::string& path,
                          const std::string& vendor, const std::string& klass,
                          const std::string& id = "0x0000") {
    fs.AddLink(bus + address, "../../../devices/pci0000:00/" + path);
    fs.AddFile(bus + address + "/vendor", vendor + "\n");
    fs.AddFile(bus + address + "/class", klass + "\n");
    fs.AddFile(bus + address + "/device", id + "\n");
  };
  device("0000:00:01.0", "0000:00:01.0", "0x8086", "0x060400");
  device("0000:01:00.0", "0000:00:01.0/0000:01:00.0", "0x1000", "0x060400");
  device("0000:02:08.0", "0000:00:01.0/0000:01:00.0/0000:02:08.0", "0x1000", "0x060400");
  device("0000:02:10.0", "0000:00:01.0/0000:01:00.0/0000:02:10.0", "0x1000", "0x060400");
  device("0000:03:00.0", "0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0", "0x10de",
         "0x030200");
  device("0000:04:00.0", "0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0", "0x15b3",
         "0x020700", "0x1021");
  device("0000:00:02.0", "0000:00:02.0", "0x8086", "0x060400");
  device("0000:05:00.0", "0000:00:02.0/0000:05:00.0", "0x15b3", "0x020700", "0x1021");
  device("0000:06:00.0", "0000:00:03.0/0000:06:00.0", "0x15b3", "0x020000", "0xa2dc");
  fs.AddFile(bus + "0000:01:00.0/config", std::string(4096, '\0'));  // upstream: no ACS
  fs.AddFile(bus + "0000:02:08.0/config", BridgeConfig(gpu_port_control));
  fs.AddFile(bus + "0000:02:10.0/config", BridgeConfig(0x0001));
  fs.AddLink("/sys/class/infiniband/mlx5_0/device", "../../../0000:04:00.0");
  fs.AddLink("/sys/class/infiniband/mlx5_1/device", "../../../0000:05:00.0");
  fs.AddLink("/sys/class/infiniband/rxe0/device", "../../devices/virtual/net/eth0");
  fs.AddFile("/dev/rshim1/misc", "");  // any instance counts, not only the first
  return fs;
}

TEST(PciEvidence, FindsTheBridgesBetweenEachGpuAndNic) {
  AuditEvidence out;
  CollectPciEvidence(Node(0x000d), out);
  const json& pairs = out.at("pci.acs.path_bridges");
  ASSERT_EQ(pairs.size(), 2U) << pairs.dump(1);  // the GPU with mlx5_0 and with mlx5_1
  EXPECT_EQ(pairs[0]["gpu"], "0000:03:00.0");
  EXPECT_EQ(pairs[0]["nic"], "mlx5_0 (0000:04:00.0)");
  EXPECT_EQ(pairs[0]["shared"], "0000:01:00.0");
  const json& bridges = pairs[0]["bridges"];
  ASSERT_EQ(bridges.size(), 3U);
  EXPECT_EQ(bridges[0], (json{{"bridge", "0000:01:00.0"}, {"acsctl", ""}, {"redirects", false}}));
  EXPECT_EQ(bridges[1]["bridge"], "0000:02:08.0");
  EXPECT_EQ(bridges[1]["acsctl"],
            "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-");
  EXPECT_EQ(bridges[1]["redirects"], true);
  EXPECT_EQ(bridges[2]["bridge"], "0000:02:10.0");
  EXPECT_EQ(bridges[2]["redirects"], false);
  EXPECT_EQ(pairs[1]["nic"], "mlx5_1 (0000:05:00.0)");
  EXPECT_EQ(pairs[1]["shared"], nullptr);  // meets the GPU at the root complex only
  EXPECT_TRUE(pairs[1]["bridges"].empty());
  EXPECT_EQ(out.at("network.bluefield.devices"), json{"0000:06:00.0"});
  EXPECT_EQ(out.at("network.bluefield.rshim"), true);
  EXPECT_EQ(out.at("network.bluefield.tmfifo"), false);
}

TEST(PciEvidence, ABridgeWhoseConfigIsCutIsUnreadNotClear) {
  sys::MemoryFileSystem fs = Node(0x0000);
  fs.AddFile("/sys/bus/pci/devices/0000:02:08.0/config", std::string(64, '\0'));  // not root
  AuditEvidence out;
  CollectPciEvidence(fs, out);
  EXPECT_EQ(out.at("pci.acs.path_bridges")[0]["bridges"][1],
            (json{{"bridge", "0000:02:08.0"}, {"acsctl", nullptr}}));
}

TEST(PciEvidence, NoPciTreeIsNotCollected) {
  AuditEvidence out;
  CollectPciEvidence(sys::MemoryFileSystem(), out);
  EXPECT_TRUE(out.empty());
}

TEST(EnvironmentModules, ReadsModulesPathFiles) {
  EXPECT_EQ(ParseModulesPath("#\n# comment\n/etc/lmod/modules\n  /opt/modulefiles/   # site\n"
                             "/usr/share/modules/$MODULE_VERSION/modulefiles\n\n"),
            (std::vector<std::string>{"/etc/lmod/modules", "/opt/modulefiles/"}));
  EXPECT_TRUE(ParseModulesPath("").empty());
}

TEST(EnvironmentModules, FindsTheKeyModulesOfLmod) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/usr/share/lmod/lmod/libexec/lmod", "");
  fs.AddFile("/etc/lmod/modulespath", "/etc/lmod/modules\n/opt/modulefiles/\n");
  fs.AddFile("/opt/modulefiles/cuda/12.9.lua", "");
  fs.AddFile("/opt/modulefiles/cuda/13.0.lua", "");
  fs.AddFile("/opt/modulefiles/cuda/.modulerc.lua", "");
  fs.AddFile("/opt/modulefiles/gcc/13.lua", "");
  fs.AddFile("/site/mods/hpcx.lua", "");
  AuditEvidence out;
  const std::map<std::string, std::string> environment = {{"MODULEPATH", "/site/mods:/nowhere"}};
  CollectEnvironmentModules(fs, environment, out);
  EXPECT_EQ(out.at("software.modules.available"),
            (json{{"system", "lmod"},
                  {"paths", {"/site/mods", "/opt/modulefiles"}},
                  {"key", {"cuda/12.9", "cuda/13.0", "hpcx"}}}));
}

TEST(EnvironmentModules, TellsNoModuleSystemFromNoKeyModule) {
  AuditEvidence none;
  CollectEnvironmentModules(sys::MemoryFileSystem(), {}, none);
  EXPECT_EQ(none.at("software.modules.available"), nullptr);

  sys::MemoryFileSystem fs;
  fs.AddFile("/usr/lib/x86_64-linux-gnu/modulecmd.tcl", "");
  fs.AddFile("/usr/share/modules/modulefiles/dot", "");
  AuditEvidence tcl;
  CollectEnvironmentModules(fs, {}, tcl);
  EXPECT_EQ(tcl.at("software.modules.available"),
            (json{{"system", "environment-modules"},
                  {"paths", {"/usr/share/modules/modulefiles"}},
                  {"key", json::array()}}));
}

TEST(HpcSdk, ReadsWhatTheCompilersSay) {
  EXPECT_EQ(ParseHpcSdkCompilerRelease("\nnvc 26.9-0 64-bit target on x86-64 Linux -tp znver4 \n"
                                       "NVIDIA Compilers and Tools\n"),
            "26.9");
  EXPECT_EQ(ParseHpcSdkCompilerRelease("nvfortran 25.11-1 64-bit target on aarch64 Linux\n"),
            "25.11");
  EXPECT_EQ(ParseHpcSdkCompilerRelease("nvc++ 26.1 64-bit target\n"), "26.1");
  EXPECT_EQ(ParseHpcSdkCompilerRelease("gcc (Debian 12.2.0-14) 12.2.0\n"), "");
  EXPECT_EQ(ParseHpcSdkCompilerRelease(""), "");
}

TEST(HpcSdk, TheNewestReleaseItsCompilersAndItsParts) {
  sys::MemoryFileSystem fs;
  const std::string old = "/opt/nvidia/hpc_sdk/Linux_x86_64/25.11";
  const std::string home = "/opt/nvidia/hpc_sdk/Linux_x86_64/26.9";
  fs.AddFile(old + "/compilers/bin/nvc", "");
  for (const char* compiler : {"nvc", "nvc++"}) fs.AddFile(home + "/compilers/bin/" + compiler, "");
  for (const char* part : {"cuda/13.0/bin/nvcc", "comm_libs/nccl/lib/libnccl.so",
                           "profilers/Nsight_Systems/bin/nsys", "compilers/lib/libnvc.so"}) {
    fs.AddFile(home + "/" + part, "");
  }
  fs.AddFile("/opt/nvidia/hpc_sdk/Linux_x86_64/2024", "");  // not a release
  // The other architecture's newer release on a shared /opt: its compilers cannot run here.
  fs.AddFile("/opt/nvidia/hpc_sdk/Linux_aarch64/26.11/compilers/bin/nvc", "");
  fs.AddFile("/opt/nvidia/hpc_sdk/modulefiles/nvhpc/26.9", "");
  cmax::testing::FakeProcessRunner runner;
  runner.AnswerStdout("nvc", "\nnvc 26.9-0 64-bit target on x86-64 Linux\n");
  runner.AnswerStdout("nvc++", "\nnvc++ 26.7-0 64-bit target on x86-64 Linux\n");
  AuditEvidence out;
  CollectHpcSdk(fs, runner, std::chrono::seconds(5), out);
  EXPECT_EQ(out.at("software.nvhpc.release"), "26.9");
  EXPECT_EQ(out.at("software.nvhpc.compilers"),
            (json{{"nvc", "26.9"}, {"nvc++", "26.7"}, {"nvfortran", nullptr}}));
  EXPECT_EQ(out.at("software.nvhpc.payload"), (json{{"path", home}, {"missing", {"math_libs"}}}));

  AuditEvidence none;
  CollectHpcSdk(sys::MemoryFileSystem(), runner, std::chrono::seconds(5), none);
  EXPECT_EQ(none.at("software.nvhpc.release"), nullptr);
  EXPECT_FALSE(none.contains("software.nvhpc.compilers"));
}

}  // namespace
}  // namespace cmax::audit
