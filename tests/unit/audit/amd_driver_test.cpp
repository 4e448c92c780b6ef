// AMD's driver for versions.amd-driver: the Instinct models a device's name gives, the PCI ID
// database, modinfo, dpkg-query and apt-cache as they print (tables of their shapes), and the
// whole chain on a node laid out in a MemoryFileSystem with the programs answered by a fake
// runner: a DKMS build from AMD's repository proved to a release, and each link that can break
// leaving the release unknown with the reason.
#include "audit/amd_driver.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "support/fake_process_runner.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;
using Models = std::vector<std::string>;

TEST(AmdDriver, NamesTheInstinctModelsOfADevice) {
  EXPECT_EQ(InstinctModels("Aldebaran/MI200 [Instinct MI250X/MI250]"), (Models{"MI250X", "MI250"}));
  EXPECT_EQ(InstinctModels("Aqua Vanjaram [Instinct MI300X]"), Models{"MI300X"});
  EXPECT_EQ(InstinctModels("AMD Instinct MI300X OAM"), Models{"MI300X"});
  EXPECT_EQ(InstinctModels("AMD Instinct MI355X"), Models{"MI355X"});
  EXPECT_EQ(InstinctModels("Arcturus GL-XL [Instinct MI100]"), Models{"MI100"});
  EXPECT_EQ(InstinctModels("Navi 31 [Radeon RX 7900 XT/7900 XTX]"), Models{});
  EXPECT_EQ(InstinctModels("XMI3000X MI3000 AMI300X"), Models{});  // not a model's word
  EXPECT_EQ(InstinctModels(""), Models{});
}

constexpr const char* kPciIds =
    "# pci.ids excerpt\n"
    "1000  Broadcom / LSI\n"
    "\t74a1  Not AMD's\n"
    "1002  Advanced Micro Devices, Inc. [AMD/ATI]\n"
    "\t740c  Aldebaran/MI200 [Instinct MI250X/MI250]\n"
    "\t74a1  Aqua Vanjaram [Instinct MI300X]\n"
    "\t\t1002 74a1  Instinct MI300X VF\n"
    "1003  ULSI Systems\n"
    "\t74a5  Not AMD's either\n"
    "C 03  Display controller\n";

TEST(AmdDriver, FindsADeviceInThePciIdDatabase) {
  EXPECT_EQ(PciIdsDeviceName(kPciIds, "1002", "74a1"), "Aqua Vanjaram [Instinct MI300X]");
  EXPECT_EQ(PciIdsDeviceName(kPciIds, "1002", "740c"), "Aldebaran/MI200 [Instinct MI250X/MI250]");
  EXPECT_EQ(PciIdsDeviceName(kPciIds, "1002", "74a5"), "");  // another vendor's
  EXPECT_EQ(PciIdsDeviceName(kPciIds, "1000", "74a1"), "Not AMD's");
  EXPECT_EQ(PciIdsDeviceName(kPciIds, "1002", "74a"), "");
  EXPECT_EQ(PciIdsDeviceName("", "1002", "74a1"), "");
}

constexpr const char* kModinfo =
    "filename:       /lib/modules/6.8.0-52-generic/updates/dkms/amdgpu.ko.zst\n"
    "version:        6.12.12\n"
    "license:        GPL and additional rights\n"
    "description:    AMD GPU\n"
    "srcversion:     8A1B5B00C0FFEE1234567AB\n"
    "depends:        amdxcp,drm_ttm_helper,amd-sched\n"
    "parm:           vramlimit:Restrict VRAM for testing, in megabytes (int)\n";

TEST(AmdDriver, ReadsWhatModinfoDpkgAndAptSay) {
  const ModuleInfo info = ParseModinfo(kModinfo);
  EXPECT_EQ(info.filename, "/lib/modules/6.8.0-52-generic/updates/dkms/amdgpu.ko.zst");
  EXPECT_EQ(info.version, "6.12.12");
  EXPECT_EQ(info.srcversion, "8A1B5B00C0FFEE1234567AB");
  EXPECT_EQ(ParseModinfo("filename:       (builtin)\n").filename, "(builtin)");
  EXPECT_EQ(ParseModinfo("modinfo: ERROR: Module amdgpu not found.\n").filename, "");

  EXPECT_EQ(ParseDpkgOwner("amdgpu-dkms: /usr/src/amdgpu-6.12.12-2187269.24.04/dkms.conf\n"),
            "amdgpu-dkms");
  EXPECT_EQ(ParseDpkgOwner("amdgpu-dkms:amd64: /usr/src/amdgpu-6.12.12/dkms.conf\n"),
            "amdgpu-dkms");
  EXPECT_EQ(ParseDpkgOwner("linux-modules-extra-6.8.0-52-generic: /lib/modules/x/amdgpu.ko.zst"),
            "linux-modules-extra-6.8.0-52-generic");
  EXPECT_EQ(ParseDpkgOwner("a, b: /usr/src/amdgpu/dkms.conf\n"), "");  // not one owner
  EXPECT_EQ(ParseDpkgOwner("diversion by local from: /usr/src/x\namdgpu-dkms: /usr/src/x\n"), "");
  EXPECT_EQ(ParseDpkgOwner("dpkg-query: no path found matching pattern /x\n"), "");

  const char* policy =
      "amdgpu-dkms:\n"
      "  Installed: 1:6.12.12.60402-2187269.24.04\n"
      "  Candidate: 1:6.14.14.70001-2201111.24.04\n"
      "  Version table:\n"
      "     1:6.14.14.70001-2201111.24.04 600\n"
      "        600 https://repo.radeon.com/amdgpu/31.40/ubuntu noble/main amd64 Packages\n"
      " *** 1:6.12.12.60402-2187269.24.04 600\n"
      "        600 https://repo.radeon.com/amdgpu/30.10/ubuntu noble/main amd64 Packages\n"
      "        100 /var/lib/dpkg/status\n"
      "     1:6.10.5.60302-2109964.24.04 600\n"
      "        600 https://repo.radeon.com/amdgpu/6.3.2/ubuntu noble/main amd64 Packages\n";
  // The installed version's origin, not the candidate's (an update not installed is no fix).
  EXPECT_EQ(InstalledOrigins(policy),
            (std::vector<std::string>{"https://repo.radeon.com/amdgpu/30.10/ubuntu noble/main"}));
  EXPECT_EQ(InstalledOrigins("amdgpu-dkms:\n  Installed: (none)\n  Candidate: 1:6\n"),
            std::nullopt);
  EXPECT_EQ(InstalledOrigins(" *** 1:6.8 100\n        100 /var/lib/dpkg/status\n"),
            std::vector<std::string>{});  // installed by hand: no repository

  EXPECT_EQ(AmdRepositoryRelease("https://repo.radeon.com/amdgpu/31.40/ubuntu noble/main"),
            "31.40");
  EXPECT_EQ(AmdRepositoryRelease("http://repo.radeon.com/amdgpu/6.4.2/ubuntu jammy/main"), "6.4.2");
  EXPECT_EQ(AmdRepositoryRelease("https://repo.radeon.com/amdgpu/latest/ubuntu noble/main"), "");
  EXPECT_EQ(AmdRepositoryRelease("https://repo.radeon.com/rocm/apt/7.0 noble/main"), "");
  EXPECT_EQ(AmdRepositoryRelease("http://archive.ubuntu.com/ubuntu noble-updates/main"), "");
  EXPECT_EQ(AmdRepositoryRelease("https://evil.example/repo.radeon.com/amdgpu/31.40/ubuntu x"), "");
}

constexpr const char* kKernel = "6.8.0-52-generic";
constexpr const char* kDkms = "6.12.12-2187269.24.04";
constexpr const char* kSrc = "8A1B5B00C0FFEE1234567AB";

// A node with two MI300X functions (one names itself, one is named by pci.ids), an AMD audio
// function and another vendor's GPU, amdgpu built by DKMS from AMD's 31.40 repository.
sys::MemoryFileSystem Node() {
  sys::MemoryFileSystem fs;
  const std::string bus = "/sys/bus/pci/devices/";
  const auto device = [&](const std::string& address, const char* vendor, const char* id,
                          const char* pci_class) {
    fs.AddFile(bus + address + "/vendor", std::string(vendor) + "\n");
    fs.AddFile(bus + address + "/device", std::string(id) + "\n");
    fs.AddFile(bus + address + "/class", std::string(pci_class) + "\n");
  };
  device("0000:05:00.0", "0x1002", "0x74a1", "0x120000");
  fs.AddFile(bus + "0000:05:00.0/product_name", "AMD Instinct MI300X OAM\n");
  device("0000:15:00.0", "0x1002", "0x74a1", "0x120000");
  device("0000:15:00.1", "0x1002", "0x1640", "0x040300");  // its audio: not a GPU
  device("0000:25:00.0", "0x10de", "0x2330", "0x030200");
  fs.AddFile("/usr/share/misc/pci.ids", kPciIds);
  fs.AddFile("/sys/module/amdgpu/version", "6.12.12\n");
  fs.AddFile("/sys/module/amdgpu/srcversion", std::string(kSrc) + "\n");
  fs.AddFile("/proc/sys/kernel/osrelease", std::string(kKernel) + "\n");
  fs.AddFile(
      std::string("/var/lib/dkms/amdgpu/") + kDkms + "/" + kKernel + "/x86_64/module/amdgpu.ko.zst",
      "");
  fs.AddFile("/var/lib/dkms/amdgpu/6.10.5-2109964.24.04/6.8.0-40-generic/x86_64/module/amdgpu.ko",
             "");  // an older kernel's build
  fs.AddFile(std::string("/usr/src/amdgpu-") + kDkms + "/dkms.conf", "PACKAGE_NAME=amdgpu\n");
  for (const char* program : {"/usr/sbin/modinfo", "/usr/bin/dpkg-query", "/usr/bin/apt-cache"}) {
    fs.AddFile(program, "");
  }
  return fs;
}

constexpr const char* kPolicy =
    "amdgpu-dkms:\n"
    "  Installed: 1:6.12.12.60402-2187269.24.04\n"
    "  Candidate: 1:6.12.12.60402-2187269.24.04\n"
    "  Version table:\n"
    " *** 1:6.12.12.60402-2187269.24.04 600\n"
    "        600 https://repo.radeon.com/amdgpu/31.40/ubuntu noble/main amd64 Packages\n"
    "        100 /var/lib/dpkg/status\n";

void AnswerAll(cmax::testing::FakeProcessRunner& runner) {
  runner.AnswerStdout("modinfo amdgpu", kModinfo);
  runner.AnswerStdout("modinfo -F", std::string(kSrc) + "\n");
  runner.AnswerStdout("dpkg-query -S",
                      std::string("amdgpu-dkms: /usr/src/amdgpu-") + kDkms + "/dkms.conf\n");
  runner.AnswerStdout("dpkg-query -W", "1:6.12.12.60402-2187269.24.04");
  runner.AnswerStdout("apt-cache -o", kPolicy);
}

AuditEvidence Collect(const sys::FileSystem& fs, cmax::testing::FakeProcessRunner& runner) {
  AuditEvidence out;
  CollectAmdDriver(fs, runner, "/usr/bin:/usr/sbin", std::chrono::seconds(5), out);
  return out;
}

std::string ProblemOf(const AuditEvidence& out) {
  EXPECT_EQ(out.at("gpu.amd.driver.version"), nullptr);
  return out.at("gpu.amd.driver").value("problem", "");
}

TEST(AmdDriver, ProvesTheReleaseOfADkmsBuildFromAmdsRepository) {
  cmax::testing::FakeProcessRunner runner;
  AnswerAll(runner);
  const AuditEvidence out = Collect(Node(), runner);
  EXPECT_EQ(out.at("gpu.amd.devices"), 2);
  EXPECT_EQ(out.at("gpu.nvidia.devices"), 1);
  EXPECT_EQ(out.at("gpu.amd.models"), json{"MI300X"});
  EXPECT_EQ(out.at("gpu.amd.driver.version"), "31.40");
  const json& driver = out.at("gpu.amd.driver");
  EXPECT_EQ(driver["dkms"], kDkms);
  EXPECT_EQ(driver["package"], "amdgpu-dkms");
  EXPECT_EQ(driver["release"], "31.40");
  EXPECT_FALSE(driver.contains("problem"));
  // What was asked: the DKMS source's owner, and the built module's srcversion by its path.
  bool asked_owner = false;
  bool asked_built = false;
  for (const sys::ProcessSpec& spec : runner.calls) {
    if (spec.argv.size() == 3 && spec.argv[1] == "-S") {
      asked_owner = spec.argv[2] == std::string("/usr/src/amdgpu-") + kDkms + "/dkms.conf";
    }
    if (spec.argv.size() == 4 && spec.argv[1] == "-F") {
      asked_built = spec.argv[3].ends_with(std::string(kKernel) + "/x86_64/module/amdgpu.ko.zst");
    }
  }
  EXPECT_TRUE(asked_owner);
  EXPECT_TRUE(asked_built);
}

TEST(AmdDriver, EachBrokenLinkLeavesTheReleaseUnknown) {
  {  // an update installed, the old module still loaded
    sys::MemoryFileSystem fs = Node();
    fs.AddFile("/sys/module/amdgpu/srcversion", "0000OLDBUILD000000000000\n");
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    EXPECT_NE(ProblemOf(Collect(fs, runner)).find("an update not loaded yet"), std::string::npos);
  }
  {  // the package came from the distribution
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout(
        "apt-cache -o",
        " *** 1:6.12.12.60402-2187269.24.04 500\n"
        "        500 http://archive.ubuntu.com/ubuntu noble-updates/main amd64 Packages\n");
    EXPECT_NE(ProblemOf(Collect(Node(), runner)).find("not AMD's repository"), std::string::npos);
  }
  {  // two repositories offer the installed version
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout(
        "apt-cache -o",
        " *** 1:6.12.12.60402-2187269.24.04 600\n"
        "        600 https://repo.radeon.com/amdgpu/31.40/ubuntu noble/main amd64 Packages\n"
        "        500 https://mirror.example/amdgpu/ubuntu noble/main amd64 Packages\n");
    EXPECT_NE(ProblemOf(Collect(Node(), runner)).find("offered by 2 repositories"),
              std::string::npos);
  }
  {  // the DKMS source owned by another package
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout("dpkg-query -S", "my-amdgpu: /usr/src/x/dkms.conf\n");
    EXPECT_NE(ProblemOf(Collect(Node(), runner)).find("belongs to my-amdgpu, not amdgpu-dkms"),
              std::string::npos);
  }
  {  // the installed module is not what DKMS built
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout("modinfo -F", "FFFFFFFFFFFFFFFFFFFFFFF\n");
    EXPECT_NE(ProblemOf(Collect(Node(), runner)).find("not DKMS's build"), std::string::npos);
  }
  {  // the package apt lists as installed is not the one dpkg has
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout("dpkg-query -W", "1:6.14.14.70001-2201111.24.04");
    EXPECT_NE(ProblemOf(Collect(Node(), runner)).find("does not list amdgpu-dkms"),
              std::string::npos);
  }
  {  // an AMD repository that names no release
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout(
        "apt-cache -o",
        " *** 1:6.12.12.60402-2187269.24.04 600\n"
        "        600 https://repo.radeon.com/amdgpu/latest/ubuntu noble/main amd64 Packages\n");
    EXPECT_NE(ProblemOf(Collect(Node(), runner)).find("names no numbered release"),
              std::string::npos);
  }
  {  // one repository listed for two architectures is one origin
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout(
        "apt-cache -o",
        " *** 1:6.12.12.60402-2187269.24.04 600\n"
        "        600 https://repo.radeon.com/amdgpu/31.40/ubuntu noble/main amd64 Packages\n"
        "        600 https://repo.radeon.com/amdgpu/31.40/ubuntu noble/main i386 Packages\n");
    EXPECT_EQ(Collect(Node(), runner).at("gpu.amd.driver.version"), "31.40");
  }
  {  // two DKMS builds for the running kernel: which one is loaded is not known
    sys::MemoryFileSystem fs = Node();
    fs.AddFile(std::string("/var/lib/dkms/amdgpu/6.14.14/") + kKernel + "/x86_64/module/amdgpu.ko",
               "");
    fs.AddFile(std::string("/var/lib/dkms/amdgpu/original_module/") + kKernel + "/x86_64/x", "");
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    EXPECT_NE(ProblemOf(Collect(fs, runner)).find("DKMS records 2 amdgpu builds"),
              std::string::npos);
  }
  {  // a distribution's module built into the kernel
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    runner.AnswerStdout("modinfo amdgpu", "filename:       (builtin)\n");
    EXPECT_NE(ProblemOf(Collect(Node(), runner)).find("built into the kernel"), std::string::npos);
  }
  {  // not Debian or Ubuntu: no dpkg-query
    sys::MemoryFileSystem fs = Node();
    cmax::testing::FakeProcessRunner runner;
    AnswerAll(runner);
    AuditEvidence out;
    CollectAmdDriver(fs, runner, "/usr/sbin", std::chrono::seconds(5), out);
    EXPECT_NE(ProblemOf(out).find("dpkg-query is not here"), std::string::npos);
  }
  {  // no module loaded
    sys::MemoryFileSystem fs;
    fs.AddFile("/sys/bus/pci/devices/0000:05:00.0/vendor", "0x1002\n");
    fs.AddFile("/sys/bus/pci/devices/0000:05:00.0/class", "0x038000\n");
    cmax::testing::FakeProcessRunner runner;
    const AuditEvidence out = Collect(fs, runner);
    EXPECT_EQ(out.at("gpu.amd.devices"), 1);
    EXPECT_EQ(out.at("gpu.amd.models"), json::array());  // nothing names it
    EXPECT_EQ(ProblemOf(out), "the amdgpu module is not loaded");
    EXPECT_TRUE(runner.calls.empty());
  }
  {  // modinfo cannot run: nothing else is asked
    cmax::testing::FakeProcessRunner runner;
    EXPECT_EQ(ProblemOf(Collect(Node(), runner)), "modinfo amdgpu did not answer");
    EXPECT_EQ(runner.calls.size(), 1U);
  }
}

TEST(AmdDriver, ANodeWithoutAnAmdGpuRunsNothing) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/sys/bus/pci/devices/0000:25:00.0/vendor", "0x10de\n");
  fs.AddFile("/sys/bus/pci/devices/0000:25:00.0/class", "0x030200\n");
  cmax::testing::FakeProcessRunner runner;
  const AuditEvidence out = Collect(fs, runner);
  EXPECT_EQ(out.at("gpu.amd.devices"), 0);
  EXPECT_FALSE(out.contains("gpu.amd.driver.version"));
  EXPECT_TRUE(runner.calls.empty());
  // No PCI tree: not collected at all.
  EXPECT_TRUE(Collect(sys::MemoryFileSystem(), runner).empty());
}

}  // namespace
}  // namespace cmax::audit
