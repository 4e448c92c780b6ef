#include "audit/host_inventory.hpp"

#include <gtest/gtest.h>

#include "audit/inventory_checks.hpp"
#include "support/fake_process_runner.hpp"

namespace cmax::audit {
namespace {

constexpr const char* kCpuInfo2Sockets = R"(processor	: 0
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8480C
physical id	: 0
cpu cores	: 2
flags		: fpu vme sse hypervisor avx512f

processor	: 1
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8480C
physical id	: 0
cpu cores	: 2
flags		: fpu vme sse hypervisor avx512f

processor	: 2
physical id	: 1
cpu cores	: 2
flags		: fpu

processor	: 3
physical id	: 1
cpu cores	: 2
flags		: fpu
)";

TEST(Parsers, CpuInfo) {
  const CpuInfo cpu = ParseCpuInfo(kCpuInfo2Sockets);
  EXPECT_EQ(cpu.vendor, "GenuineIntel");
  EXPECT_EQ(cpu.model, "Intel(R) Xeon(R) Platinum 8480C");
  EXPECT_EQ(cpu.logical_cpus, 4);
  EXPECT_EQ(cpu.sockets, 2);
  EXPECT_EQ(cpu.cores, 4);
  EXPECT_TRUE(cpu.hypervisor_flag);
  // ARM kernels print no physical id: one socket is assumed.
  const CpuInfo arm = ParseCpuInfo("processor\t: 0\nBogoMIPS\t: 2000\n\nprocessor\t: 1\n");
  EXPECT_EQ(arm.logical_cpus, 2);
  EXPECT_EQ(arm.sockets, 1);
  EXPECT_EQ(ParseCpuInfo("").logical_cpus, 0);
}

TEST(Parsers, MemInfoAndOsRelease) {
  const MemInfo mem = ParseMemInfo(
      "MemTotal:       24683312 kB\nMemFree:  1 kB\nMemAvailable:   24200000 kB\n"
      "HugePages_Total:      16\nHugepagesize:       2048 kB\ngarbage line\n");
  EXPECT_EQ(mem.total_kib, 24683312u);
  EXPECT_EQ(mem.available_kib, 24200000u);
  EXPECT_EQ(mem.hugepages_total, 16u);
  EXPECT_EQ(mem.hugepage_size_kib, 2048u);
  const OsRelease os = ParseOsRelease(
      "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n"
      "VERSION_ID=\"12\"\nID=debian\n# comment\n");
  EXPECT_EQ(os.id, "debian");
  EXPECT_EQ(os.version_id, "12");
  EXPECT_EQ(os.pretty_name, "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(ParseOsRelease("PRETTY_NAME='Ubuntu 24.04 \\\"LTS\\\"'").pretty_name,
            "Ubuntu 24.04 \"LTS\"");
}

TEST(Parsers, CpuLists) {
  EXPECT_EQ(CountCpuList("0-3,8-11").value(), 8);
  EXPECT_EQ(CountCpuList("5").value(), 1);
  EXPECT_EQ(CountCpuList("\n").value(), 0);
  EXPECT_FALSE(CountCpuList("3-1"));
  EXPECT_FALSE(CountCpuList("a-b"));
  EXPECT_FALSE(CountCpuList("1,,2"));
}

TEST(Parsers, NvidiaDriverVersionFile) {
  auto proprietary = ParseNvidiaVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.06  Wed Jun 26 06:46:07 UTC "
      "2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  ASSERT_TRUE(proprietary);
  EXPECT_EQ(proprietary->version, "535.183.06");
  EXPECT_FALSE(proprietary->open_kernel_module);
  auto open = ParseNvidiaVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  "
      "(dvs-builder@U16-I3-B03-4-3)  Thu Jan  9 21:41:55 UTC 2025\n");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->version, "570.86.15");
  EXPECT_TRUE(open->open_kernel_module);
  auto arm = ParseNvidiaVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.133.20  Release Build\n");
  ASSERT_TRUE(arm);
  EXPECT_EQ(arm->version, "570.133.20");
  EXPECT_FALSE(ParseNvidiaVersion(""));
  EXPECT_FALSE(ParseNvidiaVersion("NVRM version: something else\n"));
  EXPECT_FALSE(ParseNvidiaVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  \n"));
  EXPECT_EQ(ParseNvidiaModel("Model: \t\t NVIDIA H200\nIRQ:   0\n"), "NVIDIA H200");
}

TEST(Parsers, SlurmAndKubeconfig) {
  EXPECT_EQ(ParseSlurmVersion("slurm 22.05.8\n"), "22.05.8");
  EXPECT_EQ(ParseSlurmVersion("garbage"), "");
  EXPECT_EQ(ParseKubeconfigContext("apiVersion: v1\ncurrent-context: \"prod-east\"\n"),
            "prod-east");
  EXPECT_EQ(ParseKubeconfigContext("contexts:\n- current-context: nested\n"), "");
}

// An 8-GPU HGX node seen through /proc and /sys: one GPU has fallen off the driver.
sys::MemoryFileSystem HgxNode(int gpus_known_to_driver) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/etc/os-release",
             "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nID=ubuntu\nVERSION_ID=\"22.04\"\n");
  fs.AddFile("/proc/sys/kernel/osrelease", "5.15.0-105-generic\n");
  fs.AddFile("/proc/sys/kernel/arch", "x86_64\n");
  fs.AddFile("/proc/cpuinfo", kCpuInfo2Sockets);
  fs.AddFile("/proc/meminfo", "MemTotal: 2097152000 kB\nMemAvailable: 2000000000 kB\n");
  fs.AddFile("/sys/devices/system/node/node0/cpulist", "0-1\n");
  fs.AddFile("/sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       1048576000 kB\n");
  fs.AddFile("/sys/devices/system/node/node1/cpulist", "2-3\n");
  fs.AddFile("/sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:       1048576000 kB\n");
  fs.AddFile("/sys/devices/system/node/online", "0-1\n");
  fs.AddFile("/sys/class/dmi/id/sys_vendor", "Supermicro\n");
  fs.AddFile("/proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n");
  const char* buses[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                         "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
  for (int i = 0; i < 8; ++i) {
    const std::string dir = std::string("/sys/bus/pci/devices/") + buses[i];
    fs.AddFile(dir + "/vendor", "0x10de\n");
    fs.AddFile(dir + "/device", "0x2335\n");
    fs.AddFile(dir + "/class", "0x030200\n");
    fs.AddFile(dir + "/numa_node", i < 4 ? "0\n" : "1\n");
    fs.AddLink(dir + "/driver", "../../../bus/pci/drivers/nvidia");
    if (i < gpus_known_to_driver) {
      // The driver prints bus ids in upper case hex on some versions.
      std::string bus = buses[i];
      for (char& c : bus) c = static_cast<char>(std::toupper(c));
      fs.AddFile("/proc/driver/nvidia/gpus/" + bus + "/information", "Model: \t\t NVIDIA H200\n");
    }
  }
  const std::string nic = "/sys/bus/pci/devices/0000:19:00.0";
  fs.AddFile(nic + "/vendor", "0x15b3\n");
  fs.AddFile(nic + "/device", "0x1021\n");
  fs.AddFile(nic + "/class", "0x020700\n");
  return fs;
}

// By value: callers pass temporaries, and a reference into one would dangle.
Finding Find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.check_id == id) return f;
  }
  ADD_FAILURE() << "no finding " << id;
  return {};
}

TEST(Collectors, HealthyHgxNode) {
  const sys::MemoryFileSystem fs = HgxNode(8);
  const HostFacts host = CollectHost(fs, "gpu-node-1");
  EXPECT_EQ(host.os.id, "ubuntu");
  EXPECT_EQ(host.kernel_release, "5.15.0-105-generic");
  EXPECT_EQ(host.numa.size(), 2u);
  EXPECT_EQ(host.numa[1].cpus, 2);
  EXPECT_EQ(host.numa[1].mem_total_kib, 1048576000u);
  ASSERT_EQ(host.pci.size(), 9u);
  EXPECT_EQ(host.pci[0].driver, "nvidia");
  EXPECT_EQ(host.pci[0].class_code, 0x030200u);
  EXPECT_TRUE(host.virtualization.hypervisor) << "the cpuinfo has the hypervisor flag";
  const Target target = DetectEnvironment(host);
  EXPECT_EQ(target.environment, "vm");

  const GpuFacts gpu = CollectGpu(fs, host);
  EXPECT_EQ(gpu.nvidia_pci.size(), 8u);
  EXPECT_EQ(gpu.driver.version, "570.86.15");
  EXPECT_EQ(gpu.driver.gpus.size(), 8u);
  const auto findings = GpuFindings(gpu);
  EXPECT_EQ(Find(findings, "gpu.devices").status, CheckStatus::kPass);
  EXPECT_EQ(Find(findings, "gpu.driver").status, CheckStatus::kPass);
  EXPECT_EQ(Find(findings, "gpu.visible").status, CheckStatus::kPass);
  const auto host_findings = HostFindings(host, target);
  EXPECT_EQ(Find(host_findings, "host.pci").observed, "9 PCI devices: 8 NVIDIA GPU, 1 network");
}

TEST(Collectors, GpuLostByTheDriverFails) {
  const sys::MemoryFileSystem fs = HgxNode(7);
  const GpuFacts gpu = CollectGpu(fs, CollectHost(fs, "gpu-node-1"));
  const Finding visible = Find(GpuFindings(gpu), "gpu.visible");
  EXPECT_EQ(visible.status, CheckStatus::kFail);
  EXPECT_EQ(visible.severity, Severity::kCritical);
  EXPECT_EQ(visible.observed, "7 of 8");
  EXPECT_NE(visible.message.find("0000:db:00.0"), std::string::npos);
}

TEST(Collectors, GpusWithoutDriverFailAndNoGpusSkip) {
  sys::MemoryFileSystem fs = HgxNode(0);
  sys::MemoryFileSystem no_driver;
  no_driver.AddFile("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de");
  no_driver.AddFile("/sys/bus/pci/devices/0000:18:00.0/class", "0x030200");
  const auto failing = GpuFindings(CollectGpu(no_driver, CollectHost(no_driver, "h")));
  EXPECT_EQ(Find(failing, "gpu.driver").status, CheckStatus::kFail);
  EXPECT_EQ(Find(failing, "gpu.visible").status, CheckStatus::kSkip);

  sys::MemoryFileSystem empty;
  const HostFacts host = CollectHost(empty, "h");
  EXPECT_FALSE(host.problems.empty()) << "unreadable files are noted, not fatal";
  const auto skipped = GpuFindings(CollectGpu(empty, host));
  for (const Finding& f : skipped) EXPECT_EQ(f.status, CheckStatus::kSkip) << f.check_id;
  const auto host_findings = HostFindings(host, DetectEnvironment(host));
  EXPECT_EQ(Find(host_findings, "host.os").status, CheckStatus::kWarn);
  EXPECT_EQ(DetectEnvironment(host).environment, "bare-metal");
}

TEST(Collectors, EnvironmentDetection) {
  sys::MemoryFileSystem container;
  container.AddFile("/proc/1/cgroup", "0::/kubepods/besteffort/pod1234/abcd\n");
  container.AddFile("/proc/cpuinfo", "processor\t: 0\nflags\t: fpu hypervisor\n");
  EXPECT_EQ(DetectEnvironment(CollectHost(container, "h")).environment, "container");

  sys::MemoryFileSystem docker_image_in_vm;
  docker_image_in_vm.AddFile("/.dockerenv", "");
  docker_image_in_vm.AddFile("/proc/cpuinfo", "processor\t: 0\nflags\t: fpu hypervisor\n");
  EXPECT_EQ(DetectEnvironment(CollectHost(docker_image_in_vm, "h")).environment, "vm");

  sys::MemoryFileSystem docker_only;
  docker_only.AddFile("/.dockerenv", "");
  EXPECT_EQ(DetectEnvironment(CollectHost(docker_only, "h")).environment, "container");

  sys::MemoryFileSystem azure;
  azure.AddFile("/sys/class/dmi/id/sys_vendor", "Microsoft Corporation");
  azure.AddFile("/sys/class/dmi/id/product_name", "Virtual Machine");
  const HostFacts azure_host = CollectHost(azure, "h");
  EXPECT_EQ(DetectEnvironment(azure_host).environment, "vm");
  EXPECT_EQ(azure_host.virtualization.hypervisor_vendor, "Microsoft Corporation");

  sys::MemoryFileSystem surface;
  surface.AddFile("/sys/class/dmi/id/sys_vendor", "Microsoft Corporation");
  surface.AddFile("/sys/class/dmi/id/product_name", "Surface Pro");
  EXPECT_EQ(DetectEnvironment(CollectHost(surface, "h")).environment, "bare-metal");
}

TEST(Collectors, SlurmClientWithAnsweringController) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/usr/bin/sinfo", "");
  fs.AddFile("/usr/bin/scontrol", "");
  fs.AddFile("/lab/etc/slurm.conf", "ClusterName=x\n");
  testing::FakeProcessRunner runner;
  runner.AnswerStdout("sinfo", "slurm 22.05.8\n");
  runner.AnswerStdout("scontrol", "Slurmctld(primary) at localhost is UP\n");
  HostEnvironment env;
  env.vars = {{"PATH", "/usr/bin"}, {"SLURM_CONF", "/lab/etc/slurm.conf"}};
  const SchedulerFacts facts = CollectScheduler(fs, runner, env, std::chrono::seconds(2));
  EXPECT_EQ(facts.slurm.version, "22.05.8");
  EXPECT_TRUE(facts.slurm.controller_up);
  EXPECT_EQ(DetectScheduler(facts), "slurm-client");
  ASSERT_EQ(runner.calls.size(), 2u);
  EXPECT_EQ(runner.calls[1].argv, (std::vector<std::string>{"/usr/bin/scontrol", "ping"}));
  EXPECT_EQ(runner.calls[1].env_add, std::vector<std::string>{"SLURM_CONF=/lab/etc/slurm.conf"});
  EXPECT_EQ(runner.calls[1].timeout, std::chrono::seconds(2));
  EXPECT_EQ(Find(SchedulerFindings(facts), "scheduler.slurm").status, CheckStatus::kPass);
}

TEST(Collectors, SlurmControllerThatDoesNotAnswerWarns) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/usr/bin/sinfo", "");
  fs.AddFile("/usr/bin/scontrol", "");
  fs.AddFile("/etc/slurm/slurm.conf", "");
  testing::FakeProcessRunner runner;
  runner.AnswerStdout("sinfo", "slurm 23.11.1\n");
  sys::ProcessResult hung;
  hung.timed_out = true;
  runner.Answer("scontrol", hung);
  HostEnvironment env;
  env.vars = {{"PATH", "/usr/bin"}};
  const SchedulerFacts facts = CollectScheduler(fs, runner, env, std::chrono::seconds(1));
  EXPECT_FALSE(facts.slurm.controller_up);
  const Finding f = Find(SchedulerFindings(facts), "scheduler.slurm");
  EXPECT_EQ(f.status, CheckStatus::kWarn);
  EXPECT_NE(f.message.find("no answer within"), std::string::npos) << f.message;
}

TEST(Collectors, NoSchedulerAtAll) {
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;
  HostEnvironment env;
  env.vars = {{"PATH", "/usr/bin"}, {"HOME", "/root"}};
  const SchedulerFacts facts = CollectScheduler(fs, runner, env, std::chrono::seconds(1));
  EXPECT_TRUE(runner.calls.empty());
  EXPECT_EQ(DetectScheduler(facts), "standalone");
  for (const Finding& f : SchedulerFindings(facts)) EXPECT_EQ(f.status, CheckStatus::kSkip);
}

TEST(Collectors, KubernetesContexts) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/home/u/.kube/config", "current-context: dev\n");
  fs.AddFile("/var/run/secrets/kubernetes.io/serviceaccount/token", "t");
  testing::FakeProcessRunner runner;
  HostEnvironment env;
  env.vars = {{"HOME", "/home/u"}};
  SchedulerFacts facts = CollectScheduler(fs, runner, env, std::chrono::seconds(1));
  EXPECT_EQ(facts.kubernetes.context, "dev");
  EXPECT_FALSE(facts.kubernetes.in_cluster) << "a token without the service host is not enough";
  EXPECT_EQ(DetectScheduler(facts), "kubernetes");
  env.vars["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
  facts = CollectScheduler(fs, runner, env, std::chrono::seconds(1));
  EXPECT_TRUE(facts.kubernetes.in_cluster);
  EXPECT_EQ(Find(SchedulerFindings(facts), "scheduler.kubernetes").observed, "in-cluster");
}

TEST(Evidence, IsValidJsonForEveryKey) {
  const sys::MemoryFileSystem fs = HgxNode(8);
  const HostFacts host = CollectHost(fs, "gpu-node-1");
  std::vector<EvidenceItem> all = HostEvidence(host);
  for (const auto& item : GpuEvidence(CollectGpu(fs, host))) all.push_back(item);
  for (const auto& item : SchedulerEvidence({}, DetectEnvironment(host))) all.push_back(item);
  for (const EvidenceItem& item : all) {
    EXPECT_FALSE(item.value_json.empty()) << item.key;
    EXPECT_TRUE(item.value_json.front() == '{' || item.value_json.front() == '[' ||
                item.value_json.front() == '"')
        << item.key;
  }
}

}  // namespace
}  // namespace cmax::audit
