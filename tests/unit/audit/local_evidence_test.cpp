// The local audit: the parsers of what programs and files say, the evidence read from a GPU node
// seen through /proc, /sys, /etc and /boot (a MemoryFileSystem) with the programs answered by a
// stand-in runner, and one recorded run with a finding per check.
#include "audit/local_evidence.hpp"

#include <algorithm>
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <string_view>

#include "audit/audit_run.hpp"
#include "audit/catalogue.hpp"
#include "core/strings.hpp"
#include "store/store.hpp"
#include "support/fake_process_runner.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;
using namespace std::string_view_literals;

TEST(LocalEvidenceParsers, ReadWhatProgramsAndFilesSay) {
  EXPECT_EQ(ParseNvccRelease("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, "
                             "release 13.0, V13.0.48\n"),
            "13.0");
  EXPECT_EQ(ParseNvccRelease("no release here"), "");
  EXPECT_EQ(ParseNvccRelease("nothing"), "");
  EXPECT_EQ(FirstVersionWord("runc version 1.1.12\ncommit: v1.1.12-0-g51d5e94\nspec: 1.0.2-dev\n"),
            "1.1.12");
  EXPECT_EQ(FirstVersionWord("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: f202b80\n"),
            "1.17.8");
  EXPECT_EQ(FirstVersionWord("Version : 4.2.3\nBuild ID : 14"), "4.2.3");
  EXPECT_EQ(FirstVersionWord("\ndcgmi  version: 4.7.0\n"), "4.7.0");
  EXPECT_EQ(FirstVersionWord("29.7.0\n"), "29.7.0");
  EXPECT_EQ(FirstVersionWord("v2.1.0"), "2.1.0");
  EXPECT_EQ(FirstVersionWord("docker: 'version' is not a command\n"), "");
  EXPECT_EQ(FirstVersionWord(""), "");
  const auto conf = ParseKeyValues("# tuned\nNCCL_IB_HCA = mlx5\n\nNCCL_ALGO=Ring\nbogus\n=x\n");
  EXPECT_EQ(conf,
            (std::map<std::string, std::string>{{"NCCL_ALGO", "Ring"}, {"NCCL_IB_HCA", "mlx5"}}));
  const std::string limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max locked memory         8388608              8388608              bytes     \n"
      "Max open files            1024                 1048576              files     \n"
      "Max stack size            unlimited            unlimited            bytes     \n";
  EXPECT_EQ(SoftLimit(limits, "Max locked memory"), "8388608");
  EXPECT_EQ(SoftLimit(limits, "Max open files"), "1024");
  EXPECT_EQ(SoftLimit(limits, "Max stack size"), "unlimited");
  EXPECT_EQ(SoftLimit(limits, "Max nothing"), std::nullopt);
  const std::string cache =
      std::string("ld.so-1.7.0\0glibc-ld.so.cache1.1"sv) +
      std::string("libnccl.so.2\0/usr/lib/x86_64-linux-gnu/libnccl.so.2\0\0"sv) +
      std::string("libc.so.6\0/lib/x86_64-linux-gnu/libc.so.6\0"sv);
  EXPECT_EQ(CachedLibraries(cache, "libnccl.so"),
            std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libnccl.so.2"});
  EXPECT_TRUE(CachedLibraries(cache, "libgdrapi.so").empty());
  // A forged cache: matches with no NUL after them name nothing (and are read once).
  std::string forged;
  for (int i = 0; i < 100000; ++i) forged += "/libnccl.so";
  EXPECT_TRUE(CachedLibraries(forged, "libnccl.so").empty());
  EXPECT_TRUE(CachedLibraries(forged + '\0', "libnccl.so").empty()) << "longer than a path";
}

// A GPU node as the audit reads it: driver 580.95.05 (below its branch's minimum), GDRCopy
// loaded, a ConnectX-7, performance governors, and nvcc, runc and a docker that does not answer.
sys::MemoryFileSystem GpuNode() {
  sys::MemoryFileSystem fs;
  fs.AddFile("/etc/os-release", "ID=ubuntu\nVERSION_ID=\"24.04\"\n");
  fs.AddFile("/proc/sys/kernel/osrelease", "6.8.0-124-generic\n");
  fs.AddFile("/proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\n");
  fs.AddFile("/proc/driver/nvidia/params",
             "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n");
  fs.AddFile("/sys/module/nvidia/parameters/NVreg_EnableStreamMemOPs", "1\n");
  fs.AddFile("/proc/modules", "gdrdrv 24576 0 - Live 0x0\nnvidia 1234 1 gdrdrv, Live 0x0\n");
  fs.AddFile("/dev/gdrdrv", "");
  fs.AddFile("/etc/ld.so.cache", std::string("x\0/usr/lib/libgdrapi.so.2\0", 26));
  fs.AddFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  fs.AddFile("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
  fs.AddFile("/sys/devices/system/cpu/online", "0-1\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/fw_ver", "28.43.4702\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/device/vendor", "0x15b3\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/pkeys/0", "0xffff\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/pkeys/1", "0x8001\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/pkeys/2", "0x0000\n");
  fs.AddFile("/proc/net/tcp",
             "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
             "   0: 00000000:24B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0\n");
  fs.AddFile("/sys/class/infiniband/mlx5_1/device/vendor", "0x15b3\n");  // fw_ver unreadable
  fs.AddFile("/sys/class/infiniband/irdma0/device/vendor", "0x8086\n");  // not a ConnectX
  fs.AddFile("/boot/vmlinuz-6.8.0-124-generic", "");
  fs.AddFile("/boot/vmlinuz-6.8.0-137-generic", "");
  fs.AddFile("/proc/sys/kernel/perf_event_paranoid", "2\n");
  fs.AddFile("/proc/sys/kernel/kptr_restrict", "0\n");
  fs.AddFile("/proc/self/limits",
             "Max locked memory         unlimited            unlimited            bytes\n"
             "Max open files            1048576              1048576              files\n");
  fs.AddFile("/proc/self/status", "Name:\tcmax\nUid:\t0\t0\t0\t0\n");
  fs.AddFile("/etc/nccl.conf", "NCCL_IB_HCA=mlx5\n");
  fs.AddFile("/sys/class/net/lo/operstate", "unknown\n");
  fs.AddFile("/sys/class/net/eth0/operstate", "up\n");
  fs.AddFile("/etc/pam.d/common-auth", "auth [success=1] pam_sss.so use_first_pass\n");
  fs.AddFile("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro iommu=pt\n");
  fs.AddFile("/sys/kernel/iommu_groups/0/type", "identity\n");
  for (const char* program : {"nvcc", "runc", "docker", "perf", "useradd", "groupadd"}) {
    fs.AddFile(std::string("/usr/bin/") + program, "");
  }
  return fs;
}

TEST(CollectLocalEvidence, ReadsAGpuNode) {
  const sys::MemoryFileSystem fs = GpuNode();
  cmax::testing::FakeProcessRunner runner;
  runner.AnswerStdout("nvcc", "Cuda compilation tools, release 13.1, V13.1.20\n");
  runner.AnswerStdout("runc", "runc version 1.3.6\n");
  sys::ProcessResult hung;
  hung.timed_out = true;
  runner.Answer("docker", hung);
  const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/local/bin:/usr/bin"});
  EXPECT_EQ(e.at("gpu.driver.version"), "580.95.05");
  EXPECT_EQ(e.at("gpu.driver.open_kernel"), true);
  EXPECT_EQ(e.at("gpu.driver.params.profiling_admin_only"), 1);
  EXPECT_EQ(e.at("gpu.driver.peermem_loaded"), false);
  EXPECT_EQ(e.at("gpu.gdrcopy.module"), true);
  EXPECT_EQ(e.at("gpu.gdrcopy.device"), true);
  EXPECT_EQ(e.at("gpu.gdrcopy.library"), "/usr/lib/libgdrapi.so.2");
  EXPECT_EQ(e.at("software.nccl.libraries"), json::array());
  EXPECT_EQ(e.at("host.cpu.governors"), json({{"performance", 2}}));
  EXPECT_EQ(e.at("network.ib.device_names"), json({"irdma0", "mlx5_0", "mlx5_1"}));
  EXPECT_EQ(e.at("network.ib.devices[].fw_ver"), json({"28.43.4702", nullptr}));
  EXPECT_EQ(e.at("network.rdma.type"), "infiniband");
  EXPECT_EQ(e.at("host.kernel.release"), "6.8.0-124-generic");
  EXPECT_EQ(e.at("host.kernel.installed"), json({"6.8.0-124-generic", "6.8.0-137-generic"}));
  EXPECT_EQ(e.at("host.sysctl.kernel.perf_event_paranoid"), 2);
  EXPECT_EQ(e.at("host.limits.memlock"), "unlimited");
  EXPECT_EQ(e.at("host.limits.nofile"), 1048576);
  EXPECT_EQ(e.at("access.sudo_noninteractive"), true);  // root
  EXPECT_EQ(e.at("gpu.controls.vboost"), nullptr);      // no nvidia-smi
  EXPECT_EQ(e.at("network.nccl.conf"), json({{"NCCL_IB_HCA", "mlx5"}}));
  EXPECT_EQ(e.at("network.nccl.device_selection"),
            json({{"NCCL_IB_HCA", {{"value", "mlx5"}, {"source", "/etc/nccl.conf"}}},
                  {"NCCL_SOCKET_IFNAME", nullptr}}));
  EXPECT_EQ(e.at("network.interfaces"), json({"eth0", "lo"}));
  EXPECT_EQ(e.at("software.perf.path"), "/usr/bin/perf");
  EXPECT_EQ(e.at("access.pam_modules"), json({"pam_sss"}));
  EXPECT_EQ(e.at("access.sssd"), false);
  EXPECT_EQ(e.at("host.kernel.cmdline"), "BOOT_IMAGE=/vmlinuz ro iommu=pt");
  EXPECT_EQ(e.at("host.iommu.groups"), 1);
  EXPECT_EQ(e.at("audit.coverage.nodes_read"), json({{"read", 1}, {"total", 1}}));
  EXPECT_EQ(e.at("software.ncu.path"), nullptr);
  EXPECT_EQ(e.at("software.nvcc.release"), "13.1");
  EXPECT_EQ(e.at("containers.runc.version"), "1.3.6");
  EXPECT_EQ(e.at("containers.nvidia_ctk.version"), nullptr);     // not on PATH: looked, absent
  EXPECT_FALSE(e.contains("containers.docker.server_version"));  // did not answer in time
  EXPECT_FALSE(e.contains("containers.docker.user_access"));     // nor whether it lets us in
  EXPECT_EQ(e.at("gpu.driver.params.enable_stream_memops"), 1);
  EXPECT_EQ(e.at("gpu.driver.params.peer_mapping_override"), 0);
  EXPECT_EQ(e.at("health.dcgm_exporter.listening"), true);  // 0x24B8 = 9400, state 0A
  EXPECT_EQ(e.at("health.dcgm_exporter.service"), false);
  EXPECT_EQ(e.at("network.ib.ports[].pkeys"),
            json({{{"port", "mlx5_0/1"}, {"pkeys", {"0x8001", "0xffff"}}}}));
  // Every program ran with a deadline, and nothing but version queries ran.
  for (const sys::ProcessSpec& spec : runner.calls) {
    EXPECT_LE(spec.timeout, std::chrono::seconds(5));
    const std::string last = spec.argv.back();
    EXPECT_TRUE(last == "--version" || last == "{{.Server.Version}}") << spec.argv[0];
  }
}

// Whether the user may set vboost is asked of sudo's policy (sudo -l runs nothing); as root it is
// not asked, and without a driver not at all.
TEST(CollectLocalEvidence, AsksSudoWhetherVboostMayBeSet) {
  sys::MemoryFileSystem fs = GpuNode();
  fs.AddFile("/proc/self/status", "Name:\tcmax\nUid:\t1000\t1000\t1000\t1000\n");
  fs.AddFile("/usr/bin/nvidia-smi", "");
  fs.AddFile("/usr/bin/sudo", "");
  const auto vboost_call = [](const cmax::testing::FakeProcessRunner& runner) {
    for (const sys::ProcessSpec& spec : runner.calls) {
      if (std::ranges::find(spec.argv, "-l") != spec.argv.end()) return spec.argv;
    }
    return std::vector<std::string>{};
  };
  {
    cmax::testing::FakeProcessRunner runner;
    runner.AnswerStdout("sudo -n", "/usr/bin/nvidia-smi boost-slider --vboost 2\n");
    const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
    EXPECT_EQ(e.at("gpu.controls.vboost"),
              (json{{"method", "sudo"},
                    {"allowed", true},
                    {"detail", "/usr/bin/nvidia-smi boost-slider --vboost 2"}}));
    EXPECT_EQ(vboost_call(runner),
              (std::vector<std::string>{"/usr/bin/sudo", "-n", "-k", "-l", "/usr/bin/nvidia-smi",
                                        "boost-slider", "--vboost", "2"}));
  }
  {
    cmax::testing::FakeProcessRunner runner;
    sys::ProcessResult refused;
    refused.exit_code = 1;
    refused.stderr_text = "sudo: a password is required\n";
    runner.Answer("sudo -n", refused);
    const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
    EXPECT_EQ(e.at("gpu.controls.vboost")["allowed"], false);
    EXPECT_EQ(e.at("gpu.controls.vboost")["detail"], "sudo: a password is required");
  }
  {  // sudo failing on its own is no answer; nor is one that never comes
    cmax::testing::FakeProcessRunner runner;
    sys::ProcessResult broken;
    broken.exit_code = 1;
    broken.stderr_text = "sudo: /etc/sudoers is world writable\n";
    runner.Answer("sudo -n", broken);
    const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
    EXPECT_EQ(e.at("gpu.controls.vboost")["allowed"], nullptr);
    EXPECT_EQ(e.at("gpu.controls.vboost")["detail"], "sudo: /etc/sudoers is world writable");
    sys::ProcessResult hung;
    hung.timed_out = true;
    runner.Answer("sudo -n", hung);
    EXPECT_EQ(
        CollectLocalEvidence(fs, runner, {.path = "/usr/bin"}).at("gpu.controls.vboost"),
        (json{
            {"method", "sudo"}, {"allowed", nullptr}, {"detail", "sudo did not answer in time"}}));
  }
  {
    cmax::testing::FakeProcessRunner runner;
    fs.AddFile("/proc/self/status", "Name:\tcmax\nUid:\t0\t0\t0\t0\n");
    const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
    EXPECT_EQ(e.at("gpu.controls.vboost"), (json{{"method", "root"}, {"allowed", nullptr}}));
    EXPECT_TRUE(vboost_call(runner).empty());
  }
  {
    cmax::testing::FakeProcessRunner runner;
    sys::MemoryFileSystem no_driver;
    no_driver.AddFile("/usr/bin/nvidia-smi", "");
    const AuditEvidence e = CollectLocalEvidence(no_driver, runner, {.path = "/usr/bin"});
    EXPECT_FALSE(e.contains("gpu.controls.vboost"));
  }
}

// A Slurm node: its clients, srun's MPI plugins and options, the controller's configuration, an
// NHC health check that calls dcgmi, and sacct that fails (no accounting).
TEST(CollectLocalEvidence, ReadsASlurmNode) {
  sys::MemoryFileSystem fs = GpuNode();
  for (const char* program :
       {"sinfo", "squeue", "scontrol", "salloc", "sbatch", "srun", "sacct", "dcgmi", "ofed_info"}) {
    fs.AddFile(std::string("/usr/bin/") + program, "");
  }
  fs.AddFile("/usr/sbin/nhc", "#!/bin/bash\n# NHC\n");
  fs.AddFile("/etc/nhc/nhc.conf", "* || check_cmd_status -t 60 -r 0 dcgmi diag -r 1\n");
  cmax::testing::FakeProcessRunner runner;
  runner.AnswerStdout("srun --mpi=list",
                      "MPI plugin types are...\n\tnone\n\tpmi2\n\tpmix\n"
                      "specific pmix plugin versions available: pmix_v4,pmix_v5\n");
  runner.AnswerStdout("srun --help",
                      "Usage: srun [OPTIONS(0)...]\n      --container-image=[...]\n");
  runner.AnswerStdout("scontrol",
                      "Configuration data as of 2026-12-02T10:00:00\n"
                      "AccountingStorageType   = accounting_storage/slurmdbd\n"
                      "HealthCheckProgram      = /usr/sbin/nhc\n"
                      "TopologyPlugin          = (null)\n");
  runner.AnswerStdout("sacct", "sacct: error: Problem talking to the database\n", 1);
  runner.AnswerStdout("ofed_info", "MLNX_OFED_LINUX-24.10-1.1.4.0:\n");
  runner.AnswerStdout("dcgmi", "\ndcgmi  version: 4.7.0\n");
  fs.AddFile("/usr/bin/docker", "");
  runner.AnswerStdout("docker", "permission denied while trying to connect to the Docker daemon\n",
                      1);
  const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
  EXPECT_EQ(e.at("containers.docker.user_access"), false);
  EXPECT_FALSE(e.contains("containers.docker.server_version"));
  EXPECT_EQ(e.at("scheduler.slurm.commands")["srun"], "/usr/bin/srun");
  EXPECT_EQ(e.at("scheduler.slurm.mpi_types"),
            json({"none", "pmi2", "pmix", "pmix_v4", "pmix_v5"}));
  EXPECT_EQ(e.at("scheduler.slurm.srun_container_image"), true);
  EXPECT_EQ(e.at("scheduler.slurm.accounting_storage_type"), "accounting_storage/slurmdbd");
  EXPECT_EQ(e.at("scheduler.slurm.topology_plugin"), nullptr);
  EXPECT_EQ(e.at("scheduler.slurm.health_check_program"), "/usr/sbin/nhc");
  EXPECT_EQ(e.at("scheduler.slurm.health_check_calls_dcgm"), true);

  EXPECT_EQ(e.at("scheduler.slurm.sacct_ok"), false);
  EXPECT_EQ(e.at("health.dcgm.version"), "4.7.0");
  EXPECT_EQ(e.at("health.dcgm.hostengine"), nullptr);
  EXPECT_EQ(
      e.at("network.rdma.stack"),
      json({{"devices", 3}, {"ofed", "MLNX_OFED_LINUX-24.10-1.1.4.0"}, {"rdma_core", false}}));
  // A health check program that cannot be read: no verdict either way on what it calls.
  runner.AnswerStdout("scontrol", "HealthCheckProgram      = /usr/sbin/not-here\n");
  EXPECT_FALSE(CollectLocalEvidence(fs, runner, {.path = "/usr/bin"})
                   .contains("scheduler.slurm.health_check_calls_dcgm"));

  // SLURM_CONF naming a missing file: no client is asked (each would retry for a minute).
  runner.calls.clear();
  const AuditEvidence lost =
      CollectLocalEvidence(fs, runner, {.path = "/usr/bin", .slurm_conf = "/nowhere/slurm.conf"});
  EXPECT_EQ(lost.at("scheduler.slurm.config_missing"), "/nowhere/slurm.conf");
  EXPECT_FALSE(lost.contains("scheduler.slurm.mpi_types"));
  for (const sys::ProcessSpec& spec : runner.calls) {
    EXPECT_NE(spec.argv[0], "/usr/bin/srun");
    EXPECT_NE(spec.argv[0], "/usr/bin/scontrol");
  }
  // Older Slurm writes the list to stderr with its prefix: the same types.
  EXPECT_EQ(ParseMpiTypes("srun: MPI types are...\nsrun: none\nsrun: pmi2\nsrun: pmix_v3\n"),
            (std::vector<std::string>{"none", "pmi2", "pmix_v3"}));
  EXPECT_TRUE(ParseMpiTypes("").empty());
}

// The last 7 days of the kernel log, from the journal: Xids and SXids counted by code; records
// older than the week are left out; with no journal, dmesg; with neither, not collected.
TEST(CollectLocalEvidence, CountsTheWeeksXidsFromTheJournal) {
  const std::string journal =
      "2026-11-20T09:00:00+0000 gpu1 kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1, old\n"
      "2026-11-30T09:22:35+0000 gpu1 kernel: NVRM: Xid (PCI:0000:17:00): 13, pid=2, name=a\n"
      "2026-11-30T09:22:36+0000 gpu1 kernel: NVRM: Xid (PCI:0000:17:00): 13, pid=3, name=b\n"
      "2026-12-01T01:00:00+0000 gpu1 kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, "
      "Non-fatal, Link 0 egress non-posted PRIV error\n"
      "2026-12-01T02:00:00+0000 gpu1 kernel: usb 1-1: new high-speed USB device\n";
  sys::MemoryFileSystem fs;
  fs.AddFile("/usr/bin/journalctl", "");
  cmax::testing::FakeProcessRunner runner;
  runner.AnswerStdout("journalctl", journal);
  const WallTime now = *ParseIso8601("2026-12-02T10:00:00Z");
  AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin", .now = now});
  const json& counts = e.at("health.kernel.xid_counts_7d");
  EXPECT_EQ(counts["xid"], json({{"13", 2}}));
  EXPECT_EQ(counts["sxid"], json({{"12028", 1}}));
  EXPECT_EQ(counts["records"], 4);
  EXPECT_EQ(counts["oldest"], "2026-11-30T09:22:35.000Z");  // how far back the week's log reaches
  EXPECT_EQ(counts["truncated"], false);
  EXPECT_NE(counts["source"].get<std::string>().find("journalctl -k"), std::string::npos);

  fs.AddFile("/usr/bin/dmesg", "");
  runner.AnswerStdout("journalctl", "", 1);  // no journal here
  runner.AnswerStdout("dmesg",
                      "2026-12-01T09:22:32,123456+00:00 NVRM: Xid (PCI:0000:17:00): 48, pid=8\n");
  e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin", .now = now});
  EXPECT_EQ(e.at("health.kernel.xid_counts_7d")["xid"], json({{"48", 1}}));
  EXPECT_NE(e.at("health.kernel.xid_counts_7d")["source"].get<std::string>().find("dmesg"),
            std::string::npos);

  runner.AnswerStdout("dmesg", "dmesg: read kernel buffer failed: Operation not permitted\n", 1);
  e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin", .now = now});
  EXPECT_FALSE(e.contains("health.kernel.xid_counts_7d"));  // UNKNOWN, never a clean week
}

// The idle checks' readings come from NVML, only where a driver is: per GPU its temperature,
// power in watts, and whether it is idle (no process and utilisation 0; unknown when either
// could not be read).
TEST(CollectLocalEvidence, ReadsEachGpusIdleTemperatureAndPowerFromNvml) {
  const sys::MemoryFileSystem fs = GpuNode();
  cmax::testing::FakeProcessRunner runner;
  sys::NvmlSnapshot snapshot;
  sys::GpuReading idle;
  idle.index = 0;
  idle.name = "NVIDIA H100 80GB HBM3";
  idle.temperature_c = 34;
  idle.power_mw = 71500;
  idle.utilization_percent = 0;
  idle.compute_processes = 0;
  sys::GpuReading busy = idle;
  busy.index = 1;
  busy.compute_processes = 2;
  sys::GpuReading unknown = idle;
  unknown.index = 2;
  unknown.utilization_percent.reset();
  unknown.power_mw.reset();
  snapshot.gpus = {idle, busy, unknown};
  const AuditEvidence e = CollectLocalEvidence(
      fs, runner,
      {.path = "/usr/bin", .nvml = [&] { return Result<sys::NvmlSnapshot>(snapshot); }});
  const json& power = e.at("gpu.idle.power_w");
  ASSERT_EQ(power.size(), 3U);
  EXPECT_EQ(power[0],
            json({{"gpu", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"idle", true}, {"value", 71.5}}));
  EXPECT_EQ(power[1]["idle"], false);
  EXPECT_EQ(power[2]["idle"], nullptr);
  EXPECT_EQ(power[2]["value"], nullptr);
  EXPECT_EQ(e.at("gpu.idle.temperature_c")[0]["value"], 34);
  EXPECT_EQ(e.at("gpu.name")[1], "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(e.contains("gpu.topology.nvlink"));  // no GPU said anything about its links

  // NVLink: one GPU with an active link is enough; links all down are none; a lost GPU could
  // be the one with links, so without an active one seen it is not collected.
  const auto nvlink_of = [&](std::vector<sys::GpuReading> gpus) {
    sys::NvmlSnapshot with = snapshot;
    with.gpus = std::move(gpus);
    const AuditEvidence read = CollectLocalEvidence(
        fs, runner, {.path = "/usr/bin", .nvml = [&] { return Result<sys::NvmlSnapshot>(with); }});
    const auto it = read.find("gpu.topology.nvlink");
    return it == read.end() ? json("not collected") : it->second;
  };
  sys::GpuReading linked = idle;
  linked.nvlink_links = 18;
  linked.nvlink_inactive = 1;
  sys::GpuReading down = idle;
  down.nvlink_links = 18;
  down.nvlink_inactive = 18;
  sys::GpuReading lost = idle;
  lost.lost = true;
  sys::GpuReading none = idle;
  none.nvlink_none = true;  // a PCIe GPU: the driver says it has no NVLink
  EXPECT_EQ(nvlink_of({none, none}), false);
  EXPECT_EQ(nvlink_of({none, idle}), "not collected");  // one GPU did not say
  EXPECT_EQ(nvlink_of({down, linked}), true);
  EXPECT_EQ(nvlink_of({down, down}), false);
  EXPECT_EQ(nvlink_of({down, lost}), "not collected");
  EXPECT_EQ(nvlink_of({linked, lost}), true);
  EXPECT_EQ(nvlink_of({}), "not collected");

  // NVML that does not load: not collected, with why; no driver: not here.
  const AuditEvidence failed = CollectLocalEvidence(
      fs, runner,
      {.path = "/usr/bin", .nvml = [] {
         return Result<sys::NvmlSnapshot>(Fail(ErrorCode::kUnavailable, "NVML library not found"));
       }});
  EXPECT_FALSE(failed.contains("gpu.idle.power_w"));
  EXPECT_EQ(failed.at("gpu.nvml.error"), "NVML library not found");
  const sys::MemoryFileSystem empty;
  EXPECT_EQ(CollectLocalEvidence(empty, runner, {.path = "/usr/bin"}).at("gpu.idle.power_w"),
            nullptr);
  EXPECT_EQ(e.at("gpu.driver.source"), "/proc/driver/nvidia/version");

  // No /proc/driver/nvidia (a container that does not mount it, the lab's simulated GPUs):
  // NVML names the driver, and its GPUs are read; what only /proc says stays unread.
  sys::NvmlSnapshot named = snapshot;
  named.driver_version = "535.54.03";
  sys::MemoryFileSystem device_only;
  device_only.AddFile("/dev/nvidiactl", "");
  const AuditEvidence from_nvml = CollectLocalEvidence(
      device_only, runner,
      {.path = "/usr/bin", .nvml = [&] { return Result<sys::NvmlSnapshot>(named); }});
  EXPECT_EQ(from_nvml.at("gpu.driver.version"), "535.54.03");
  EXPECT_EQ(from_nvml.at("gpu.driver.source"), "nvml");
  EXPECT_EQ(from_nvml.at("gpu.idle.power_w").size(), 3U);
  EXPECT_FALSE(from_nvml.contains("gpu.driver.open_kernel"));
  // A named library (the lab's simulated NVML) is asked with no device either; with neither,
  // NVML is not started at all (it could load the kernel module).
  int asked = 0;
  const auto counted = [&] {
    ++asked;
    return Result<sys::NvmlSnapshot>(named);
  };
  EXPECT_EQ(
      CollectLocalEvidence(empty, runner, {.path = "/usr/bin", .nvml = counted, .nvml_named = true})
          .at("gpu.driver.version"),
      "535.54.03");
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(CollectLocalEvidence(empty, runner, {.path = "/usr/bin", .nvml = counted})
                .at("gpu.driver.version"),
            nullptr);
  EXPECT_EQ(asked, 1);
  // NVML that names no driver, or does not load, on a host without one: no driver here.
  for (const Result<sys::NvmlSnapshot>& answer :
       {Result<sys::NvmlSnapshot>(snapshot),
        Result<sys::NvmlSnapshot>(Fail(ErrorCode::kUnavailable, "NVML library not found"))}) {
    const AuditEvidence absent = CollectLocalEvidence(
        device_only, runner, {.path = "/usr/bin", .nvml = [&] { return answer; }});
    EXPECT_EQ(absent.at("gpu.driver.version"), nullptr);
    EXPECT_FALSE(absent.contains("gpu.nvml.error"));
  }
}

// What the host is (OS, architecture, VM), what a guest could do with nested KVM, a Grace
// guest's SMMU, and inside a job step the GPUs it was given and NCCL's queue pairs.
TEST(CollectLocalEvidence, ReadsTheHostsKindAndAJobStepsVariables) {
  sys::MemoryFileSystem fs = GpuNode();
  fs.AddFile("/proc/cpuinfo",
             "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vmx sse hypervisor\n");
  fs.AddFile("/dev/kvm", "");
  fs.AddFile("/sys/module/kvm_intel/parameters/nested", "Y\n");
  fs.AddFile("/etc/nccl.conf", "NCCL_IB_QPS_PER_CONNECTION=4\n");
  cmax::testing::FakeProcessRunner runner;
  AuditEvidence e = CollectLocalEvidence(
      fs, runner,
      {.path = "/usr/bin",
       .environment = {
           {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_GPUS", "0"}, {"CUDA_VISIBLE_DEVICES", "0"}}});
  EXPECT_EQ(e.at("host.os.id"), "ubuntu");
  EXPECT_EQ(e.at("host.os.version_id"), "24.04");
  EXPECT_EQ(e.at("host.virtualization.kind"), "vm");  // the hypervisor flag
  EXPECT_EQ(e.at("host.cpu.flags.virt"), "vmx");
  EXPECT_EQ(e.at("host.dev.kvm"), true);
  EXPECT_EQ(e.at("host.kvm.nested"), true);
  EXPECT_FALSE(e.contains("host.smmu.cmdqv"));  // not an Arm host
  EXPECT_EQ(e.at("scheduler.step.cuda_visible_devices")["CUDA_VISIBLE_DEVICES"], "0");
  EXPECT_TRUE(e.at("scheduler.step.cuda_visible_devices")["NVIDIA_VISIBLE_DEVICES"].is_null());
  EXPECT_EQ(e.at("network.nccl.ib_qps_per_connection"),
            json({{"value", 4}, {"source", "/etc/nccl.conf"}}));
  // The variable wins over the file; outside a job step there is no step to judge.
  e = CollectLocalEvidence(
      fs, runner,
      {.path = "/usr/bin",
       .environment = {{"NCCL_IB_QPS_PER_CONNECTION", "2"}, {"NCCL_SOCKET_IFNAME", "=eth0"}}});
  EXPECT_EQ(e.at("network.nccl.ib_qps_per_connection")["value"], 2);
  EXPECT_EQ(e.at("network.nccl.device_selection")["NCCL_SOCKET_IFNAME"],
            json({{"value", "=eth0"}, {"source", "environment"}}));
  EXPECT_FALSE(e.contains("scheduler.step.cuda_visible_devices"));
  // A Grace guest: the SMMU and whether CMDQV is there.
  fs.AddFile("/proc/sys/kernel/arch", "aarch64\n");
  fs.AddFile("/sys/class/iommu/smmu3.0x0000000016000000/type", "");
  e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
  EXPECT_EQ(e.at("host.arch"), "aarch64");
  EXPECT_EQ(e.at("host.smmu.cmdqv"), json({{"smmuv3", true}, {"cmdqv", false}}));
  EXPECT_EQ(e.at("network.nccl.ib_qps_per_connection")["value"], 4);
  EXPECT_EQ(e.at("host.ipmi.devices"), json::array());
  EXPECT_TRUE(e.at("host.ipmi.mc_info").is_null());  // no device: nothing asked
}

// A Grace Blackwell tray: the GPU's memory onlined as a CPU-less NUMA node, the driver's
// memory mode, and a BMC that answers IPMI from the node.
TEST(CollectLocalEvidence, ReadsNumaNodesTheMemoryModeAndIpmi) {
  sys::MemoryFileSystem fs = GpuNode();
  fs.AddFile("/sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       500000000 kB\n");
  fs.AddFile("/sys/devices/system/node/node0/cpulist", "0-71\n");
  fs.AddFile("/sys/devices/system/node/node2/meminfo", "Node 2 MemTotal:       195000000 kB\n");
  fs.AddFile("/sys/devices/system/node/node2/cpulist", "\n");
  fs.AddFile("/sys/devices/system/node/possible", "0-3\n");  // not a node
  fs.AddFile("/proc/driver/nvidia/params",
             "RmProfilingAdminOnly: 1\nCoherentGPUMemoryMode: \"driver\"\n");
  fs.AddFile("/dev/ipmi0", "");
  fs.AddFile("/usr/bin/ipmitool", "");
  cmax::testing::FakeProcessRunner runner;
  runner.AnswerStdout("ipmitool mc", "Device ID                 : 32\nFirmware Revision : 1.10\n");
  const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
  EXPECT_EQ(e.at("host.numa.nodes"), json({{{"node", 0}, {"mem_kib", 500000000}, {"cpus", 72}},
                                           {{"node", 2}, {"mem_kib", 195000000}, {"cpus", 0}}}));
  EXPECT_EQ(e.at("gpu.driver.params.coherent_gpu_memory_mode"), "driver");
  EXPECT_EQ(e.at("host.ipmi.devices"), json({"/dev/ipmi0"}));
  EXPECT_EQ(e.at("host.ipmi.mc_info"), true);
  runner.AnswerStdout("ipmitool mc", "Could not open device at /dev/ipmi0\n", 1);
  EXPECT_EQ(CollectLocalEvidence(fs, runner, {.path = "/usr/bin"}).at("host.ipmi.mc_info"), false);
}

TEST(CollectLocalEvidence, AnEmptyHostIsAbsenceNotPass) {
  const sys::MemoryFileSystem fs;
  cmax::testing::FakeProcessRunner runner;
  const AuditEvidence e = CollectLocalEvidence(fs, runner, {.path = "/usr/bin"});
  EXPECT_EQ(e.at("gpu.driver.version"), nullptr);
  EXPECT_FALSE(e.contains("host.cpu.governors"));  // no /sys/devices/system/cpu: not read
  EXPECT_EQ(e.at("access.sudo_noninteractive"), false);
  EXPECT_FALSE(e.contains("host.sysctl.kernel.perf_event_paranoid"));  // unreadable: not collected
  EXPECT_TRUE(runner.calls.empty());
}

// An audit's io for these tests: the store in `dir`, the rest as given.
AuditIo AuditIoFor(const cmax::testing::TempDir& dir, sys::FileSystem& fs,
                   cmax::testing::FakeProcessRunner& runner, Clock& clock, std::string path) {
  return {.db_path = dir.File("cmax.db"),
          .cmax_version = "test",
          .fs = &fs,
          .runner = &runner,
          .clock = &clock,
          .path = std::move(path)};
}

TEST(RunLocalAudit, RecordsOneFindingPerCheckAndTheTableUsed) {
  cmax::testing::TempDir dir;
  sys::MemoryFileSystem fs = GpuNode();
  cmax::testing::FakeProcessRunner runner;
  runner.AnswerStdout("nvcc", "Cuda compilation tools, release 13.1, V13.1.20\n");
  runner.AnswerStdout("runc", "runc version 1.3.6\n");
  ManualClock clock(*ParseIso8601("2026-09-28T00:00:00Z"));
  const AuditIo io = AuditIoFor(dir, fs, runner, clock, "/usr/bin");
  auto report = RunLocalAudit({}, io);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->record.run.command, "audit");
  EXPECT_EQ(report->record.findings.size(), AuditCatalogue::Builtin().Checks().size());
  EXPECT_EQ(report->exit_code, 1);  // the driver is below its branch's minimum
  EXPECT_EQ(report->notice, "");    // the table is 3 days old here
  const auto find = [&](const std::string& id) {
    for (const Finding& f : report->record.findings) {
      if (f.check_id == id) return f;
    }
    ADD_FAILURE() << id;
    return Finding{};
  };
  EXPECT_EQ(find("versions.nvidia-driver").status, CheckStatus::kFail);
  EXPECT_EQ(find("versions.cuda-toolkit").status, CheckStatus::kPass);
  bool recorded_sha = false;
  for (const EvidenceItem& item : report->record.evidence) {
    if (item.key == "audit.minimums.sha256") {
      recorded_sha = item.value_json == json(MinimumTable::Builtin().Sha256()).dump();
    }
  }
  EXPECT_TRUE(recorded_sha);
  EXPECT_EQ(report->summary, "");  // no cluster this host is a client of
  // A Slurm client (sinfo and its slurm.conf) and a kubeconfig: say how to audit them instead.
  fs.AddFile("/usr/bin/sinfo", "");
  fs.AddFile("/etc/slurm/slurm.conf", "ClusterName=c\n");
  fs.AddFile("/home/u/.kube/config", "apiVersion: v1\n");
  AuditIo client = io;
  client.env = [](const std::string& name) {
    return name == "HOME" ? std::string("/home/u") : std::string();
  };
  auto hinted = RunLocalAudit({}, client);
  ASSERT_TRUE(hinted) << hinted.error().message;
  EXPECT_NE(hinted->summary.find("`cmax audit --slurm` audits every node"), std::string::npos)
      << hinted->summary;
  EXPECT_NE(hinted->summary.find("`cmax audit --kubernetes`"), std::string::npos)
      << hinted->summary;
  // --exit-zero: the same findings, exit 0.
  auto zero = RunLocalAudit({.exit_zero = true}, io);
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->exit_code, 0);
  // What the user gave is refused before a run is opened.
  cmax::testing::TempDir empty;
  AuditIo elsewhere = io;
  elsewhere.db_path = empty.File("cmax.db");
  auto bad_profile = RunLocalAudit({.profile = "secuirty"}, elsewhere);
  ASSERT_FALSE(bad_profile);
  EXPECT_EQ(bad_profile.error().code, ErrorCode::kInvalidArgument);
  fs.AddFile("/tmp/table.json", "{\"schema\": \"cmax.audit-minimums/v1\"}");
  auto bad_table = RunLocalAudit({.minimums = "/tmp/table.json"}, elsewhere);
  ASSERT_FALSE(bad_table);
  EXPECT_EQ(bad_table.error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(empty.File("cmax.db")));
}

// From a container with the host's / mounted at /host (docker run -v /:/host, an audit pod):
// the host's files and programs are read, the container's --minimums and store are used.
TEST(RunLocalAudit, AHostMountedInAContainerIsReadThroughItsRoot) {
  cmax::testing::TempDir dir;
  sys::MemoryFileSystem fs;
  fs.AddFile("/etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n");  // the container's
  fs.AddFile("/host/etc/os-release", "ID=ubuntu\nVERSION_ID=\"24.04\"\n");
  fs.AddFile("/host/usr/bin/nvcc", "");
  cmax::testing::FakeProcessRunner runner;
  ManualClock clock(*ParseIso8601("2026-09-28T00:00:00Z"));
  AuditIo io = AuditIoFor(dir, fs, runner, clock, "/opt/image/bin");
  // The container's own variables: its NVML's devices, its Slurm configuration and its home.
  std::map<std::string, std::string> container = {{"NVIDIA_VISIBLE_DEVICES", "all"},
                                                  {"SLURM_CONF", "/opt/image/slurm.conf"},
                                                  {"HOME", "/home/image"}};
  io.env = [&container](const std::string& name) {
    const auto it = container.find(name);
    return it == container.end() ? std::string() : it->second;
  };
  fs.AddFile("/opt/image/slurm.conf", "");  // the container's, which the host has not
  fs.AddFile("/host/usr/bin/sinfo", "");
  fs.AddFile("/host/etc/slurm/slurm.conf", "ClusterName=host\n");
  auto report = RunLocalAudit({.host_root = "/host"}, io);
  ASSERT_TRUE(report) << report.error().message;
  std::map<std::string, std::string> evidence;
  for (const EvidenceItem& item : report->record.evidence) evidence[item.key] = item.value_json;
  EXPECT_EQ(evidence["host.os.id"], "\"ubuntu\"");
  // The host's Slurm configuration is its own /etc/slurm/slurm.conf, not the container's
  // SLURM_CONF looked for below the root (which would report it missing), and says the host is
  // a Slurm client.
  EXPECT_EQ(evidence.count("scheduler.slurm.config_missing"), 0U)
      << evidence["scheduler.slurm.config_missing"];
  EXPECT_NE(report->summary.find("Slurm client"), std::string::npos) << report->summary;
  // Programs are the host's: found on its PATH below the root, run chrooted into it.
  ASSERT_FALSE(runner.calls.empty());
  for (const sys::ProcessSpec& call : runner.calls) {
    ASSERT_GE(call.argv.size(), 3U);
    EXPECT_EQ(call.argv[0], "chroot") << Join(call.argv, " ");
    EXPECT_EQ(call.argv[1], "/host") << Join(call.argv, " ");
  }
  EXPECT_TRUE(std::ranges::any_of(
      runner.calls, [](const sys::ProcessSpec& call) { return call.argv[2] == "/usr/bin/nvcc"; }));
  // The container's variables are its own, not the host's nor a tenant's.
  HostRootView view;
  auto through = ThroughHostRoot("/host", io, view);
  ASSERT_TRUE(through);
  EXPECT_EQ(AuditEnvironment(*through).count("NVIDIA_VISIBLE_DEVICES"), 0U);
  EXPECT_EQ(AuditEnvironment(io).at("NVIDIA_VISIBLE_DEVICES"), "all");
  for (const std::string_view name : sys::kContainersOwnVariables) {
    EXPECT_EQ(through->env(std::string(name)), "") << name;
  }
  EXPECT_EQ(through->env("HOME"), "/root");  // the host's root's, not the image's /home/image
  EXPECT_EQ(through->env("CMAX_NODE_NAME"), "");
  container = {{"CMAX_NODE_NAME", "gpu7"}};
  EXPECT_EQ(through->env("CMAX_NODE_NAME"), "gpu7");  // this process's own, passed on
  // --minimums is the container's file: read there (a broken table), not below the root
  // (which would be "no such file").
  fs.AddFile("/tmp/table.json", "{\"schema\": \"cmax.audit-minimums/v1\"}");
  auto bad_table = RunLocalAudit({.minimums = "/tmp/table.json", .host_root = "/host"}, io);
  ASSERT_FALSE(bad_table);
  EXPECT_EQ(bad_table.error().code, ErrorCode::kInvalidArgument) << bad_table.error().message;
  // A root that is not an absolute folder is refused before anything is read.
  for (const char* root : {"host", "/nowhere"}) {
    auto refused = RunLocalAudit({.host_root = root}, io);
    ASSERT_FALSE(refused) << root;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument) << root;
  }
}

}  // namespace
}  // namespace cmax::audit
