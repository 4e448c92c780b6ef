// The audit's judgement on evidence: a table of checks, evidence and the status each must get
// (healthy, broken, absent and not collected), and the rules every check follows whatever its
// evidence: one finding per check, N/A outside its targets, no side effect unless allowed,
// UNKNOWN when nothing was collected, never PASS by default.
#include "audit/grading.hpp"

#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cmax::audit {
namespace {

using nlohmann::json;

const CheckSpec& Check(std::string_view id) {
  for (const CheckSpec& check : AuditCatalogue::Builtin().Checks()) {
    if (check.id == id) return check;
  }
  ADD_FAILURE() << "no check " << id;
  return AuditCatalogue::Builtin().Checks().front();
}

GradeContext Context(AuditTarget target = AuditTarget::kStandalone) {
  return {.target = target,
          .minimums = &MinimumTable::Builtin(),
          .now = *ParseIso8601("2026-09-28T00:00:00Z")};
}

// A side-effect check graded as if allowed: the table judges its rule, not the flag.
Finding Grade(std::string_view id, const AuditEvidence& evidence,
              AuditTarget target = AuditTarget::kStandalone) {
  GradeContext context = Context(target);
  context.allow_side_effects = !Check(id).side_effect.empty();
  return GradeChecks({&Check(id)}, evidence, context).front();
}

struct Case {
  const char* id;
  AuditEvidence evidence;
  CheckStatus want;
  const char* observed_has = "";
};

// A node with AMD GPUs of these models and the release proved for its loaded amdgpu (null: not
// proved, with the reason).
AuditEvidence AmdEvidence(const std::vector<std::string>& models, const json& release) {
  json driver = {{"package", "amdgpu-dkms"}};
  if (release.is_null()) driver["problem"] = "the amdgpu module is not loaded";
  return {{"gpu.amd.devices", 8},
          {"gpu.amd.models", models},
          {"gpu.amd.driver.version", release},
          {"gpu.amd.driver", driver}};
}

// A node's HPC SDK: its release, what nvfortran says (nvc and nvc++ say the release), and the
// parts missing from it.
AuditEvidence NvhpcEvidence(const char* release, const json& nvfortran, const json& missing) {
  return {{"software.nvhpc.release", release},
          {"software.nvhpc.compilers",
           {{"nvc", release}, {"nvc++", release}, {"nvfortran", nvfortran}}},
          {"software.nvhpc.payload",
           {{"path", std::string("/opt/nvidia/hpc_sdk/Linux_x86_64/") + release},
            {"missing", missing}}}};
}

// The topology file /etc/nccl.conf names: there or not, and what is wrong with it.
json TopoFile(const json& found, const json& problem) {
  return {{"path", "/etc/nccl/topo.xml"},
          {"source", "/etc/nccl.conf"},
          {"found", found},
          {"bytes", 512},
          {"problem", problem}};
}

// One GPU-NIC pair under a switch whose downstream port has this ACS control (null: unread).
json AcsPair(const json& acsctl, bool redirects) {
  json bridge = {{"bridge", "0000:17:08.0"}, {"acsctl", acsctl}};
  if (!acsctl.is_null()) bridge["redirects"] = redirects;
  return json::array({{{"gpu", "0000:18:00.0"},
                       {"nic", "mlx5_0"},
                       {"shared", "0000:17:00.0"},
                       {"bridges", {{{"bridge", "0000:17:00.0"}, {"acsctl", ""}}, bridge}}}});
}

TEST(GradeChecks, JudgesEachCheckOnItsEvidence) {
  const AuditEvidence driver = {{"gpu.driver.version", "580.159.03"}};
  const auto with_driver = [&](AuditEvidence more) {
    more.insert(driver.begin(), driver.end());
    return more;
  };
  const std::vector<Case> cases = {
      {"versions.nvidia-driver", driver, CheckStatus::kPass, "580.159.03"},
      {"versions.nvidia-driver", {{"gpu.driver.version", "580.95.05"}}, CheckStatus::kFail},
      {"versions.nvidia-driver", {{"gpu.driver.version", "560.35.03"}}, CheckStatus::kUnknown},
      {"versions.nvidia-driver", {{"gpu.driver.version", nullptr}}, CheckStatus::kSkip},
      {"versions.nvidia-driver", {}, CheckStatus::kUnknown},
      {"versions.nvidia-driver", {{"gpu.driver.version", 580}}, CheckStatus::kUnknown},
      // AMD's driver: the release proved for the loaded module, against its models' minimum
      {"versions.amd-driver", AmdEvidence({"MI300X"}, "31.40"), CheckStatus::kPass, "31.40"},
      {"versions.amd-driver", AmdEvidence({"MI250X", "MI250"}, "30.20"), CheckStatus::kFail,
       "30.20"},
      {"versions.amd-driver", AmdEvidence({"MI400X"}, "40.10"), CheckStatus::kUnknown},
      {"versions.amd-driver", AmdEvidence({}, "31.40"), CheckStatus::kUnknown},
      {"versions.amd-driver", AmdEvidence({"MI300X"}, nullptr), CheckStatus::kUnknown,
       "release unknown"},
      {"versions.amd-driver",
       {{"gpu.amd.devices", 0}, {"gpu.amd.models", json::array()}},
       CheckStatus::kSkip},
      {"versions.amd-driver", {}, CheckStatus::kUnknown},
      {"versions.amd-driver", {{"gpu.amd.devices", "two"}}, CheckStatus::kUnknown},
      // NVIDIA's software where there is no NVIDIA GPU at all, and where the driver did not load
      {"software.ncu-installed",
       {{"gpu.driver.version", nullptr}, {"gpu.nvidia.devices", 0}, {"software.ncu.path", nullptr}},
       CheckStatus::kSkip},
      {"software.ncu-installed",
       {{"gpu.driver.version", nullptr}, {"gpu.nvidia.devices", 8}, {"software.ncu.path", nullptr}},
       CheckStatus::kFail},
      // vboost, by sudo's policy: allowed, refused, as root, B300 without a slider
      {"hardware.vboost",
       with_driver({{"gpu.controls.vboost", {{"method", "sudo"}, {"allowed", true}}}}),
       CheckStatus::kPass},
      {"hardware.vboost",
       with_driver(
           {{"gpu.controls.vboost",
             {{"method", "sudo"}, {"allowed", false}, {"detail", "a password is required"}}}}),
       CheckStatus::kWarn, "refused"},  // the check's severity: CONFIG
      {"hardware.vboost",
       with_driver({{"gpu.controls.vboost", {{"method", "root"}, {"allowed", nullptr}}}}),
       CheckStatus::kUnknown, "root"},
      {"hardware.vboost",
       with_driver({{"gpu.controls.vboost", {{"method", "sudo"}, {"allowed", nullptr}}}}),
       CheckStatus::kUnknown},
      {"hardware.vboost",
       with_driver({{"gpu.name", {"NVIDIA B300 SXM6 AC"}},
                    {"gpu.controls.vboost", {{"method", "sudo"}, {"allowed", false}}}}),
       CheckStatus::kSkip},
      {"hardware.vboost", with_driver({{"gpu.controls.vboost", nullptr}}), CheckStatus::kSkip},
      {"hardware.vboost", with_driver({}), CheckStatus::kUnknown},
      {"hardware.vboost", {{"gpu.driver.version", nullptr}}, CheckStatus::kSkip},
      {"hardware.vboost", with_driver({{"gpu.controls.vboost", "yes"}}), CheckStatus::kUnknown},
      {"versions.cuda-toolkit", {{"software.nvcc.release", "12.8"}}, CheckStatus::kFail},
      {"versions.cuda-toolkit", {{"software.nvcc.release", nullptr}}, CheckStatus::kSkip},
      {"versions.runc", {{"containers.runc.version", "1.3.6"}}, CheckStatus::kPass},
      {"versions.runc", {{"containers.runc.version", "1.1.12-0ubuntu3"}}, CheckStatus::kFail},
      {"versions.docker",
       {{"containers.docker.server_version", "\"29.7.0\""}},
       CheckStatus::kUnknown},
      {"versions.connectx-firmware",
       {{"network.ib.devices[].fw_ver", {"28.43.4702", "28.43.4800"}}},
       CheckStatus::kPass,
       "28.43.4702, 28.43.4800"},
      {"versions.connectx-firmware",
       {{"network.ib.devices[].fw_ver", {"28.43.4800", "28.39.2048"}}},
       CheckStatus::kFail},
      {"versions.connectx-firmware",
       {{"network.ib.devices[].fw_ver", {"28.43.4800", "garbage"}}},
       CheckStatus::kUnknown},
      {"versions.connectx-firmware",
       {{"network.ib.devices[].fw_ver", json::array()}},
       CheckStatus::kSkip},
      {"versions.connectx-firmware",
       {{"network.ib.devices[].fw_ver", {"", "28.43.4702"}}},
       CheckStatus::kUnknown},
      {"versions.connectx-firmware",
       {{"network.ib.devices[].fw_ver", {nullptr, "28.43.4702"}}},
       CheckStatus::kUnknown},
      {"software.perf-event-paranoid",
       {{"host.sysctl.kernel.perf_event_paranoid", 1}},
       CheckStatus::kPass},
      {"software.perf-event-paranoid",
       {{"host.sysctl.kernel.perf_event_paranoid", 4}},
       CheckStatus::kWarn,
       "4"},
      {"software.perf-event-paranoid",
       {{"host.sysctl.kernel.perf_event_paranoid", -1}},
       CheckStatus::kPass},
      {"software.kptr-restrict", {{"host.sysctl.kernel.kptr_restrict", 1}}, CheckStatus::kWarn},
      {"software.perf-installed", {{"software.perf.path", "/usr/bin/perf"}}, CheckStatus::kPass},
      {"software.perf-installed", {{"software.perf.path", nullptr}}, CheckStatus::kFail},
      {"software.nccl-installed", {{"software.nccl.libraries", json::array()}}, CheckStatus::kFail},
      {"software.nccl-installed",
       {{"software.nccl.libraries", {"/usr/lib/x86_64-linux-gnu/libnccl.so.2"}}},
       CheckStatus::kPass},
      {"hardware.gdrcopy",
       with_driver({{"gpu.gdrcopy.library", "libgdrapi.so.2"},
                    {"gpu.gdrcopy.module", true},
                    {"gpu.gdrcopy.device", true}}),
       CheckStatus::kPass},
      {"hardware.gdrcopy",
       with_driver({{"gpu.gdrcopy.library", nullptr},
                    {"gpu.gdrcopy.module", false},
                    {"gpu.gdrcopy.device", false}}),
       CheckStatus::kFail, "libgdrapi, the gdrdrv module, /dev/gdrdrv"},
      {"hardware.gdrcopy", {{"gpu.driver.version", nullptr}}, CheckStatus::kSkip},
      {"hardware.gpudirect-rdma",
       with_driver({{"gpu.driver.open_kernel", false}, {"gpu.driver.dma_buf", false}}),
       CheckStatus::kWarn},
      {"hardware.gpudirect-rdma",
       with_driver({{"gpu.driver.open_kernel", true}, {"gpu.driver.dma_buf", false}}),
       CheckStatus::kPass},
      {"hardware.nvidia-peermem-legacy",
       with_driver({{"gpu.driver.peermem_loaded", true}, {"gpu.driver.dma_buf", false}}),
       CheckStatus::kWarn},
      {"software.ncu-profiling",
       with_driver({{"software.ncu.path", "/usr/local/cuda/bin/ncu"},
                    {"gpu.driver.params.profiling_admin_only", 1}}),
       CheckStatus::kWarn},
      {"software.ncu-profiling", with_driver({{"software.ncu.path", nullptr}}), CheckStatus::kSkip},
      {"hardware.cpu-governor",
       {{"host.cpu.governors", {{"performance", 64}}}},
       CheckStatus::kPass},
      {"hardware.cpu-governor",
       {{"host.cpu.governors", {{"performance", 60}, {"powersave", 4}}}},
       CheckStatus::kWarn,
       "powersave on 4 CPUs"},
      {"hardware.cpu-governor", {{"host.cpu.governors", nullptr}}, CheckStatus::kSkip},
      {"software.resource-limits",
       {{"host.limits.memlock", "unlimited"}, {"host.limits.nofile", 1048576}},
       CheckStatus::kPass},
      {"software.resource-limits",
       {{"host.limits.memlock", 65536}, {"host.limits.nofile", 1024}},
       CheckStatus::kWarn,
       "memlock 65536, nofile 1024"},
      {"access.sudo", {{"access.sudo_noninteractive", false}}, CheckStatus::kWarn},
      {"access.user-management",
       {{"access.useradd", "/usr/sbin/useradd"}, {"access.groupadd", nullptr}},
       CheckStatus::kWarn},
      {"isolation.guest-kernel-current",
       {{"host.kernel.release", "6.8.0-124-generic"},
        {"host.kernel.installed", {"6.8.0-110-generic", "6.8.0-124-generic"}}},
       CheckStatus::kPass},
      {"isolation.guest-kernel-current",
       {{"host.kernel.release", "6.8.0-124-generic"},
        {"host.kernel.installed", {"6.8.0-137-generic", "6.8.0-124-generic"}}},
       CheckStatus::kFail,
       "6.8.0-137-generic installed"},
      {"isolation.guest-kernel-current",
       {{"host.kernel.release", "6.1.0-28-amd64"}, {"host.kernel.installed", nullptr}},
       CheckStatus::kSkip},
      {"networking.nccl-autoconfig", {{"network.nccl.conf", nullptr}}, CheckStatus::kPass},
      {"networking.nccl-autoconfig",
       {{"network.nccl.conf", {{"NCCL_IB_HCA", "mlx5"}, {"NCCL_ALGO", "Ring"}}}},
       CheckStatus::kWarn,
       "NCCL_ALGO=Ring"},
      {"isolation.nvlink-boundary", with_driver({{"gpu.topology.nvlink", true}}),
       CheckStatus::kAttest},
      {"isolation.nvlink-boundary",
       with_driver({{"gpu.topology.nvlink", true}, {"attestation.nvlink_domain_exclusive", true}}),
       CheckStatus::kPass},
      {"isolation.nvlink-boundary", with_driver({{"gpu.topology.nvlink", false}}),
       CheckStatus::kSkip},
      {"isolation.pcie-passthrough", {}, CheckStatus::kAttest},
      {"containers.nvidia-container-toolkit",
       with_driver({{"containers.nvidia_ctk.version", nullptr}}), CheckStatus::kFail},
      {"containers.nvidia-container-toolkit",
       {{"containers.nvidia_ctk.version", nullptr}, {"gpu.driver.version", nullptr}},
       CheckStatus::kSkip},
      {"containers.nvidia-container-toolkit",
       {{"containers.nvidia_ctk.version", "1.17.8"}},
       CheckStatus::kPass},
      {"orchestration.worker-check",
       {{"audit.coverage.nodes_read", {{"read", 1}, {"total", 1}}}},
       CheckStatus::kPass},
      {"orchestration.worker-check",
       {{"audit.coverage.nodes_read", {{"read", 7}, {"total", 8}}}},
       CheckStatus::kWarn,
       "7 of 8 nodes read"},
      {"access.external-idp",
       {{"access.sssd", false}, {"access.pam_modules", json::array()}},
       CheckStatus::kWarn},
      {"access.external-idp",
       {{"access.sssd", false}, {"access.pam_modules", {"pam_ldap"}}},
       CheckStatus::kPass},
      {"hardware.vm-iommu",
       with_driver(
           {{"host.kernel.cmdline", "ro quiet intel_iommu=on"}, {"host.iommu.groups", 140}}),
       CheckStatus::kWarn},
      {"hardware.vm-iommu",
       with_driver(
           {{"host.kernel.cmdline", "ro intel_iommu=on iommu=pt"}, {"host.iommu.groups", 140}}),
       CheckStatus::kPass},
      {"hardware.vm-iommu",
       with_driver({{"host.kernel.cmdline", "ro noiommu=pt"}, {"host.iommu.groups", 0}}),
       CheckStatus::kPass},
      {"hardware.vm-iommu",
       {{"gpu.driver.version", nullptr},
        {"network.ib.device_names", json::array()},
        {"host.kernel.cmdline", "ro"},
        {"host.iommu.groups", 3}},
       CheckStatus::kSkip},
      {"access.slurm-commands",
       {{"scheduler.slurm.commands", {{"sinfo", "/usr/bin/sinfo"}, {"sacct", "/usr/bin/sacct"}}}},
       CheckStatus::kPass},
      {"access.slurm-commands",
       {{"scheduler.slurm.commands", {{"sinfo", "/usr/bin/sinfo"}, {"sacct", nullptr}}}},
       CheckStatus::kWarn,
       "sacct missing"},
      {"orchestration.pyxis", {{"scheduler.slurm.srun_container_image", true}}, CheckStatus::kPass},
      {"orchestration.pyxis",
       {{"scheduler.slurm.srun_container_image", false}},
       CheckStatus::kWarn},
      {"orchestration.pyxis", {}, CheckStatus::kUnknown},
      {"orchestration.slurm-accounting",
       {{"scheduler.slurm.accounting_storage_type", "accounting_storage/slurmdbd"},
        {"scheduler.slurm.sacct_ok", true}},
       CheckStatus::kPass},
      {"orchestration.slurm-accounting",
       {{"scheduler.slurm.accounting_storage_type", "accounting_storage/slurmdbd"},
        {"scheduler.slurm.sacct_ok", false}},
       CheckStatus::kWarn,
       "sacct fails"},
      {"orchestration.slurm-accounting",
       {{"scheduler.slurm.accounting_storage_type", nullptr}, {"scheduler.slurm.sacct_ok", false}},
       CheckStatus::kWarn,
       "unset"},
      {"orchestration.slurm-accounting",
       {{"scheduler.slurm.accounting_storage_type", "accounting_storage/slurmdbd"}},
       CheckStatus::kUnknown},
      {"networking.topology-configured",
       {{"scheduler.slurm.topology_plugin", "topology/tree"}},
       CheckStatus::kPass},
      {"networking.topology-configured",
       {{"scheduler.slurm.topology_plugin", "topology/default"}},
       CheckStatus::kWarn},
      {"networking.topology-configured",
       {{"scheduler.slurm.topology_plugin", nullptr}},
       CheckStatus::kWarn,
       "unset"},
      {"health.dcgm-installed",
       with_driver({{"health.dcgm.version", "4.7.0"}, {"health.dcgm.hostengine", nullptr}}),
       CheckStatus::kPass},
      {"health.dcgm-installed",
       with_driver({{"health.dcgm.version", nullptr}, {"health.dcgm.hostengine", nullptr}}),
       CheckStatus::kFail},
      {"health.dcgm-installed",
       {{"gpu.driver.version", nullptr}, {"health.dcgm.version", nullptr}},
       CheckStatus::kSkip},
      {"health.dcgm-in-slurm-healthcheck",
       {{"health.dcgm.version", "4.7.0"},
        {"scheduler.slurm.health_check_program", "/usr/sbin/nhc"},
        {"scheduler.slurm.health_check_calls_dcgm", true}},
       CheckStatus::kPass},
      {"health.dcgm-in-slurm-healthcheck",
       {{"health.dcgm.version", "4.7.0"},
        {"scheduler.slurm.health_check_program", "/usr/sbin/nhc"},
        {"scheduler.slurm.health_check_calls_dcgm", false}},
       CheckStatus::kWarn},
      {"health.dcgm-in-slurm-healthcheck",
       {{"health.dcgm.version", "4.7.0"}, {"scheduler.slurm.health_check_program", nullptr}},
       CheckStatus::kWarn},
      {"health.dcgm-in-slurm-healthcheck",
       {{"health.dcgm.version", "4.7.0"},
        {"scheduler.slurm.health_check_program", "/etc/slurm/hc.sh"}},
       CheckStatus::kUnknown},
      {"health.dcgm-in-slurm-healthcheck", {{"health.dcgm.version", nullptr}}, CheckStatus::kSkip},
      {"software.mofed",
       {{"network.rdma.stack", {{"devices", 2}, {"ofed", "MLNX_OFED_LINUX-24.10-1.1.4.0"}}}},
       CheckStatus::kPass,
       "MLNX_OFED"},
      {"software.mofed",
       {{"network.rdma.stack", {{"devices", 2}, {"ofed", nullptr}, {"rdma_core", true}}}},
       CheckStatus::kPass},
      {"software.mofed",
       {{"network.rdma.stack", {{"devices", 2}, {"ofed", nullptr}, {"rdma_core", false}}}},
       CheckStatus::kFail},
      {"software.mofed",
       {{"network.rdma.stack", {{"devices", 0}, {"ofed", nullptr}}}},
       CheckStatus::kSkip},
      {"software.mofed",
       {{"network.rdma.stack", {{"devices", 2}, {"ofed", nullptr}}}},
       CheckStatus::kUnknown},
      {"health.xid-7d",
       {{"health.kernel.xid_counts_7d",
         {{"source", "journalctl"},
          {"records", 900},
          {"oldest", "2026-09-20T00:00:00.000Z"},
          {"xid", json::object()}}}},
       CheckStatus::kPass,
       "no Xid in 900 records"},
      {"health.xid-7d",  // a log since a reboot two days ago cannot vouch for the week
       {{"health.kernel.xid_counts_7d",
         {{"source", "journalctl"},
          {"records", 90},
          {"oldest", "2026-09-26T00:00:00.000Z"},
          {"xid", json::object()}}}},
       CheckStatus::kUnknown},
      {"health.xid-7d",
       {{"health.kernel.xid_counts_7d",
         {{"source", "journalctl"}, {"records", 9}, {"xid", {{"13", 3}, {"43", 1}}}}}},
       CheckStatus::kWarn,
       "Xid 13 x3 (restart-app), Xid 43 x1 (none)"},
      {"health.xid-7d",
       {{"health.kernel.xid_counts_7d",
         {{"source", "dmesg"}, {"records", 9}, {"xid", {{"13", 3}, {"79", 1}}}}}},
       CheckStatus::kFail,
       "Xid 79 x1 (reboot-node)"},
      {"health.xid-7d",
       {{"health.kernel.xid_counts_7d",
         {{"source", "dmesg"}, {"records", 9}, {"truncated", true}, {"xid", json::object()}}}},
       CheckStatus::kUnknown},
      {"health.xid-7d", {{"health.kernel.xid_counts_7d", "garbage"}}, CheckStatus::kUnknown},
      {"health.xid-7d", {}, CheckStatus::kUnknown},
      {"hardware.idle-gpu-power",
       {{"gpu.idle.power_w",
         {{{"gpu", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"idle", true}, {"value", 72.5}},
          {{"gpu", 1}, {"name", "NVIDIA H100 80GB HBM3"}, {"idle", false}, {"value", 690}}}}},
       CheckStatus::kPass,
       "GPU 0 72 W"},
      {"hardware.idle-gpu-power",
       {{"gpu.idle.power_w",
         {{{"gpu", 3}, {"name", "NVIDIA B200"}, {"idle", true}, {"value", 260}}}}},
       CheckStatus::kWarn,
       "GPU 3 260 W (Blackwell ceiling 250 W)"},
      {"hardware.idle-gpu-power",
       {{"gpu.idle.power_w",
         {{{"gpu", 0}, {"name", "NVIDIA GB200"}, {"idle", true}, {"value", 260}}}}},
       CheckStatus::kPass},
      {"hardware.idle-gpu-power",
       {{"gpu.idle.power_w",
         {{{"gpu", 0}, {"name", "NVIDIA A100-SXM4-80GB"}, {"idle", true}, {"value", 60}}}}},
       CheckStatus::kUnknown},
      {"hardware.idle-gpu-power",
       {{"gpu.idle.power_w",
         {{{"gpu", 0}, {"name", "NVIDIA H200"}, {"idle", nullptr}, {"value", 60}}}}},
       CheckStatus::kUnknown},
      {"hardware.idle-gpu-power",
       {{"gpu.idle.power_w",
         {{{"gpu", 0}, {"name", "NVIDIA H200"}, {"idle", false}, {"value", 600}}}}},
       CheckStatus::kSkip},
      {"hardware.idle-gpu-power", {{"gpu.idle.power_w", nullptr}}, CheckStatus::kSkip},
      {"hardware.idle-gpu-power", {{"gpu.idle.power_w", json::array()}}, CheckStatus::kUnknown},
      {"hardware.idle-gpu-power",  // a shape no collector writes: UNKNOWN, not an internal error
       {{"gpu.idle.power_w", {{{"gpu", 0}, {"name", 5}, {"idle", true}, {"value", 60}}}}},
       CheckStatus::kUnknown},
      {"hardware.idle-gpu-temperature",
       {{"gpu.idle.temperature_c",
         {{{"gpu", 0}, {"name", "NVIDIA H200"}, {"idle", true}, {"value", 58}}}}},
       CheckStatus::kWarn,
       "GPU 0 58 C"},
      {"hardware.idle-gpu-temperature",
       {{"gpu.idle.temperature_c",
         {{{"gpu", 0}, {"name", "NVIDIA H200"}, {"idle", true}, {"value", 33}}}}},
       CheckStatus::kPass},
      {"hardware.idle-gpu-temperature", {}, CheckStatus::kUnknown},
      {"networking.nvshmem-readiness",
       with_driver({{"gpu.driver.params.enable_stream_memops", 1},
                    {"gpu.driver.params.peer_mapping_override", 1},
                    {"gpu.gdrcopy.module", true},
                    {"network.rdma.type", "infiniband"}}),
       CheckStatus::kPass},
      {"networking.nvshmem-readiness",
       with_driver({{"gpu.driver.params.enable_stream_memops", 0},
                    {"gpu.driver.params.peer_mapping_override", 1},
                    {"gpu.gdrcopy.module", true},
                    {"network.rdma.type", "none"}}),
       CheckStatus::kWarn,
       "EnableStreamMemOPs=1, an InfiniBand or RoCE path (the fabric is none) missing"},
      {"networking.nvshmem-readiness",
       with_driver({{"gpu.driver.params.enable_stream_memops", 1}, {"network.rdma.type", "roce"}}),
       CheckStatus::kUnknown},
      {"health.dcgm-exporter-running",
       {{"health.dcgm_exporter.listening", true}, {"health.dcgm_exporter.service", false}},
       CheckStatus::kPass},
      {"health.dcgm-exporter-running",
       {{"health.dcgm_exporter.listening", false}, {"health.dcgm_exporter.service", false}},
       CheckStatus::kFail},
      {"health.dcgm-exporter-running",
       {{"health.dcgm_exporter.listening", false}, {"health.dcgm_exporter.service", true}},
       CheckStatus::kWarn},
      {"containers.docker-on-workers",
       {{"containers.docker.user_access", true}},
       CheckStatus::kPass},
      {"containers.docker-on-workers",
       {{"containers.docker.user_access", false}},
       CheckStatus::kFail},
      {"networking.ib-pkeys",
       {{"network.ib.ports[].pkeys", {{{"port", "mlx5_0/1"}, {"pkeys", {"0x8001", "0xffff"}}}}}},
       CheckStatus::kPass},
      {"networking.ib-pkeys",
       {{"network.ib.ports[].pkeys", {{{"port", "mlx5_0/1"}, {"pkeys", {"0xffff"}}}}}},
       CheckStatus::kWarn,
       "mlx5_0/1 0xffff"},
      {"networking.ib-pkeys", {{"network.ib.ports[].pkeys", json::array()}}, CheckStatus::kSkip},
      {"networking.ib-pkeys",
       {{"network.ib.ports[].pkeys", {{{"port", "mlx5_0/1"}, {"pkeys", json::array()}}}}},
       CheckStatus::kUnknown},
      {"networking.ib-pkeys",
       {{"network.ib.ports[].pkeys", {{{"port", "mlx5_0/1"}, {"pkeys", nullptr}}}}},
       CheckStatus::kUnknown},
      // PCIe ACS between a GPU and an RDMA NIC under one switch.
      {"hardware.pcie-acs", {{"pci.acs.path_bridges", json::array()}}, CheckStatus::kSkip},
      {"hardware.pcie-acs",
       {{"pci.acs.path_bridges",
         {{{"gpu", "0000:18:00.0"},
           {"nic", "mlx5_1"},
           {"shared", nullptr},
           {"bridges", json::array()}}}}},
       CheckStatus::kSkip},
      {"hardware.pcie-acs",
       {{"pci.acs.path_bridges", AcsPair("ReqRedir- CmpltRedir-", false)}},
       CheckStatus::kPass,
       "1 GPU-NIC pair"},
      {"hardware.pcie-acs",
       {{"pci.acs.path_bridges", AcsPair("SrcValid+ ReqRedir+ CmpltRedir-", true)}},
       CheckStatus::kWarn,
       "bridge 0000:17:08.0 ReqRedir+ (GPU 0000:18:00.0, NIC mlx5_0)"},
      {"hardware.pcie-acs",
       {{"pci.acs.path_bridges", AcsPair(nullptr, false)}},
       CheckStatus::kUnknown},
      {"hardware.pcie-acs",
       {{"pci.acs.path_bridges", AcsPair("SrcValid+ ReqRedir+", true)},
        {"host.virtualization.kind", "vm"}},
       CheckStatus::kUnknown},
      {"hardware.pcie-acs", {}, CheckStatus::kUnknown},
      // BlueField: the host's RShim paths, and the controller read on the DPU.
      {"isolation.dpu-host-isolation",
       {{"network.bluefield.devices", json::array()}},
       CheckStatus::kSkip},
      {"isolation.dpu-host-isolation",
       {{"network.bluefield.devices", {"0000:a1:00.0"}},
        {"network.bluefield.rshim", false},
        {"network.bluefield.tmfifo", false}},
       CheckStatus::kPass},
      {"isolation.dpu-host-isolation",
       {{"network.bluefield.devices", {"0000:a1:00.0"}},
        {"network.bluefield.rshim", false},
        {"network.bluefield.tmfifo", true}},
       CheckStatus::kFail,
       "tmfifo_net*"},
      {"isolation.dpu-host-isolation",
       {{"network.bluefield.devices", {"0000:a1:00.0"}}},
       CheckStatus::kUnknown},
      {"versions.virtio-net-bluefield",
       {{"network.bluefield.devices", json::array()}},
       CheckStatus::kSkip},
      {"versions.virtio-net-bluefield",
       {{"network.bluefield.devices", {"0000:a1:00.0"}}},
       CheckStatus::kUnknown},
      {"isolation.virtio-net-bluefield-exposure",
       {{"network.bluefield.devices", json::array()}},
       CheckStatus::kSkip},
      {"isolation.virtio-net-bluefield-exposure", {}, CheckStatus::kUnknown},
      // Subnet manager and administrator keys: the provider's word on InfiniBand.
      {"networking.ib-sm-key", {{"network.rdma.type", "infiniband"}}, CheckStatus::kAttest},
      {"networking.ib-sm-key",
       {{"network.rdma.type", "infiniband"}, {"attestation.ib_sm_key", true}},
       CheckStatus::kPass},
      {"networking.ib-sm-key", {{"network.rdma.type", "roce"}}, CheckStatus::kSkip},
      {"networking.ib-sm-key", {}, CheckStatus::kUnknown},
      {"networking.ib-sa-key", {{"network.rdma.type", "infiniband"}}, CheckStatus::kAttest},
      {"networking.ib-sa-key", {{"network.rdma.type", "none"}}, CheckStatus::kSkip},
      // Slurm's prolog, from the audit's own job.
      {"orchestration.slurm-prolog-duration",
       {{"scheduler.slurm.prolog_seconds", {{"value", 0.4}, {"source", "scontrol show job"}}}},
       CheckStatus::kPass,
       "0.4 s"},
      {"orchestration.slurm-prolog-duration",
       {{"scheduler.slurm.prolog_seconds", {{"value", 41.3}, {"source", "scontrol show job"}}}},
       CheckStatus::kWarn,
       "41.3 s"},
      {"orchestration.slurm-prolog-duration",
       {{"scheduler.slurm.prolog_seconds", {{"value", "slow"}}}},
       CheckStatus::kUnknown},
      {"orchestration.slurm-prolog-duration", {}, CheckStatus::kUnknown},
      // ssh from each node to the next of the audit's job.
      {"access.ssh-between-nodes",
       {{"access.ssh_to_compute_node", {{"to", "gpu2"}, {"ok", true}, {"detail", ""}}}},
       CheckStatus::kPass,
       "ssh to gpu2"},
      {"access.ssh-between-nodes",
       {{"access.ssh_to_compute_node",
         {{"to", "gpu2"}, {"ok", false}, {"detail", "Permission denied (publickey)."}}}},
       CheckStatus::kWarn,
       "ssh to gpu2 failed: Permission denied (publickey)."},
      {"access.ssh-between-nodes", {{"access.ssh_to_compute_node", nullptr}}, CheckStatus::kSkip},
      {"access.ssh-between-nodes",
       {{"access.ssh_to_compute_node",
         {{"to", nullptr}, {"ok", nullptr}, {"detail", "scontrol show hostnames failed"}}}},
       CheckStatus::kUnknown},
      {"access.ssh-between-nodes", {}, CheckStatus::kUnknown},
      // The HPC SDK: present, whole, and not older than the table's minimum.
      {"software.nvhpc",
       {{"software.nvhpc.release", nullptr}},
       CheckStatus::kFail,
       "not installed"},
      {"software.nvhpc", NvhpcEvidence("26.9", "26.9", json::array()), CheckStatus::kPass, "26.9"},
      {"software.nvhpc", NvhpcEvidence("25.11", "25.11", json::array()), CheckStatus::kFail,
       "25.11"},
      {"software.nvhpc", NvhpcEvidence("26.9", "26.7", json::array()), CheckStatus::kFail,
       "26.9: nvfortran is 26.7"},
      {"software.nvhpc", NvhpcEvidence("26.9", nullptr, {"math_libs"}), CheckStatus::kFail,
       "26.9: no nvfortran, no math_libs"},
      {"software.nvhpc", {{"software.nvhpc.release", "26.9"}}, CheckStatus::kUnknown},
      // The NCCL topology file: broken on the node fails; good on the node is not yet proof
      // that containers see it.
      {"networking.nccl-topo-file", {{"network.nccl.topo_file", nullptr}}, CheckStatus::kSkip},
      {"networking.nccl-topo-file",
       {{"network.nccl.topo_file",
         TopoFile(true, "line 3: attribute busid's value is not quoted")}},
       CheckStatus::kFail,
       "/etc/nccl/topo.xml (from /etc/nccl.conf): line 3: attribute busid's value is not quoted"},
      {"networking.nccl-topo-file",
       {{"network.nccl.topo_file", TopoFile(false, nullptr)}},
       CheckStatus::kFail,
       "/etc/nccl/topo.xml (from /etc/nccl.conf): not there"},
      {"networking.nccl-topo-file",
       {{"network.nccl.topo_file", TopoFile(true, nullptr)},
        {"network.nccl.topo_file_sha256", std::string(64, 'a')}},
       CheckStatus::kUnknown},
      {"networking.nccl-topo-file",
       {{"network.nccl.topo_file", TopoFile(json("yes"), nullptr)}},
       CheckStatus::kUnknown},
      {"networking.nccl-topo-file", {}, CheckStatus::kUnknown},
      // NCCL's device selections, read as NCCL reads them, against the devices present.
      {"networking.nccl-devices",
       {{"network.nccl.device_selection",
         {{"NCCL_IB_HCA", nullptr}, {"NCCL_SOCKET_IFNAME", nullptr}}},
        {"network.ib.device_names", {"mlx5_0"}},
        {"network.interfaces", {"eth0", "lo"}}},
       CheckStatus::kSkip},
      {"networking.nccl-devices",
       {{"network.nccl.device_selection",
         {{"NCCL_IB_HCA", {{"value", "=mlx5_0:1,mlx5_1:1"}, {"source", "/etc/nccl.conf"}}},
          {"NCCL_SOCKET_IFNAME", {{"value", "^lo,docker"}, {"source", "environment"}}}}},
        {"network.ib.device_names", {"mlx5_0", "mlx5_1"}},
        {"network.interfaces", {"eth0", "lo"}}},
       CheckStatus::kPass,
       "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1, NCCL_SOCKET_IFNAME=^lo,docker"},
      {"networking.nccl-devices",
       {{"network.nccl.device_selection",
         {{"NCCL_IB_HCA", {{"value", "ibp"}, {"source", "/etc/nccl.conf"}}},
          {"NCCL_SOCKET_IFNAME", nullptr}}},
        {"network.ib.device_names", {"mlx5_0", "mlx5_1"}},
        {"network.interfaces", {"eth0", "lo"}}},
       CheckStatus::kFail,
       "NCCL_IB_HCA=ibp"},
      // One entry of two gone: NCCL runs on the other, at half the rails.
      {"networking.nccl-devices",
       {{"network.nccl.device_selection",
         {{"NCCL_IB_HCA", {{"value", "mlx5_0,mlx5_9"}, {"source", "environment"}}},
          {"NCCL_SOCKET_IFNAME", {{"value", "bond0"}, {"source", "environment"}}}}},
        {"network.ib.device_names", {"mlx5_0", "mlx5_1"}},
        {"network.interfaces", {"bond0", "lo"}}},
       CheckStatus::kFail,
       "NCCL_IB_HCA=mlx5_0,mlx5_9, NCCL_SOCKET_IFNAME=bond0"},
      {"networking.nccl-devices",
       {{"network.nccl.device_selection",
         {{"NCCL_IB_HCA", {{"value", "mlx5"}, {"source", "environment"}}},
          {"NCCL_SOCKET_IFNAME", nullptr}}},
        {"network.ib.device_names", json::array()},
        {"network.interfaces", {"eth0", "lo"}}},
       CheckStatus::kFail,
       "NCCL_IB_HCA=mlx5"},
      {"networking.nccl-devices",
       {{"network.nccl.device_selection", {{"NCCL_IB_HCA", {{"value", 3}}}}},
        {"network.ib.device_names", {"mlx5_0"}},
        {"network.interfaces", {"eth0"}}},
       CheckStatus::kUnknown},
      {"networking.nccl-devices", {}, CheckStatus::kUnknown},
      // Environment modules.
      {"software.lmod-modules",
       {{"software.modules.available",
         {{"system", "lmod"}, {"paths", {"/opt/modulefiles"}}, {"key", {"cuda/12.9", "nccl"}}}}},
       CheckStatus::kPass,
       "lmod: cuda/12.9, nccl"},
      {"software.lmod-modules",
       {{"software.modules.available",
         {{"system", "lmod"}, {"paths", {"/opt/modulefiles"}}, {"key", json::array()}}}},
       CheckStatus::kWarn,
       "no cuda, hpcx or nccl module"},
      {"software.lmod-modules",
       {{"software.modules.available", nullptr}},
       CheckStatus::kWarn,
       "no module command"},
      {"software.lmod-modules", {}, CheckStatus::kUnknown},
      {"health.dcgm-exporter-running",
       {{"gpu.driver.version", nullptr}, {"health.dcgm_exporter.listening", false}},
       CheckStatus::kSkip},
      {"isolation.januscape", {{"host.virtualization.kind", "none"}}, CheckStatus::kSkip},
      {"isolation.bmc-ipmi",
       {{"host.ipmi.devices", json::array()}, {"host.ipmi.mc_info", nullptr}},
       CheckStatus::kPass},
      {"isolation.bmc-ipmi",
       {{"host.ipmi.devices", {"/dev/ipmi0"}}, {"host.ipmi.mc_info", true}},
       CheckStatus::kFail,
       "/dev/ipmi0"},
      {"isolation.bmc-ipmi",
       {{"host.ipmi.devices", {"/dev/ipmi0"}}, {"host.ipmi.mc_info", false}},
       CheckStatus::kPass},
      {"isolation.bmc-ipmi",
       {{"host.ipmi.devices", {"/dev/ipmi0"}}, {"host.ipmi.mc_info", nullptr}},
       CheckStatus::kUnknown},
      {"hardware.hbm-memory-exposure", with_driver({{"gpu.name", {"NVIDIA H100 80GB HBM3"}}}),
       CheckStatus::kSkip},
      {"hardware.hbm-memory-exposure",
       with_driver({{"gpu.name", {"NVIDIA GB200"}},
                    {"host.numa.nodes",
                     {{{"node", 0}, {"mem_kib", 500000000}, {"cpus", 72}},
                      {{"node", 2}, {"mem_kib", 195000000}, {"cpus", 0}}}},
                    {"gpu.driver.params.coherent_gpu_memory_mode", nullptr}}),
       CheckStatus::kFail, "node 2 185 GiB"},
      {"hardware.hbm-memory-exposure",
       with_driver({{"gpu.name", {"NVIDIA GB200"}},
                    {"host.numa.nodes", {{{"node", 0}, {"mem_kib", 500000000}, {"cpus", 72}}}},
                    {"gpu.driver.params.coherent_gpu_memory_mode", "driver"}}),
       CheckStatus::kPass},
      {"hardware.hbm-memory-exposure",
       with_driver({{"gpu.name", {"NVIDIA GB200"}},
                    {"host.numa.nodes", {{{"node", 0}, {"mem_kib", 500000000}, {"cpus", 72}}}},
                    {"gpu.driver.params.coherent_gpu_memory_mode", nullptr}}),
       CheckStatus::kWarn},
      {"hardware.nvidia-peermem-legacy",
       with_driver({{"gpu.driver.peermem_loaded", true},
                    {"gpu.driver.dma_buf", false},
                    {"gpu.driver.open_kernel", true}}),
       CheckStatus::kPass, "open kernel module"},
      {"hardware.vm-iommu",
       with_driver({{"host.kernel.cmdline", "ro iommu.passthrough=1"}, {"host.iommu.groups", 40}}),
       CheckStatus::kPass},
      {"isolation.januscape",
       {{"host.virtualization.kind", "vm"},
        {"host.cpu.flags.virt", "svm"},
        {"host.dev.kvm", true},
        {"host.kvm.nested", true}},
       CheckStatus::kWarn,
       "svm, /dev/kvm present, nested on"},
      {"isolation.januscape",
       {{"host.virtualization.kind", "vm"},
        {"host.cpu.flags.virt", nullptr},
        {"host.dev.kvm", false},
        {"host.kvm.nested", nullptr}},
       CheckStatus::kPass},
      {"isolation.januscape",
       {{"host.virtualization.kind", "vm"},
        {"host.cpu.flags.virt", "vmx"},
        {"host.dev.kvm", false},
        {"host.kvm.nested", nullptr}},
       CheckStatus::kUnknown},
      {"isolation.fragnesia",
       {{"host.os.id", "ubuntu"},
        {"host.os.version_id", "24.04"},
        {"host.kernel.release", "6.8.0-60-generic"}},
       CheckStatus::kFail,
       "6.8.0-60-generic"},
      {"isolation.fragnesia",
       {{"host.os.id", "ubuntu"},
        {"host.os.version_id", "24.04"},
        {"host.kernel.release", "6.8.0-124-generic"}},
       CheckStatus::kPass},
      {"isolation.fragnesia",
       {{"host.os.id", "ubuntu"},
        {"host.os.version_id", "24.04"},
        {"host.kernel.release", "6.11.0-29-generic"}},
       CheckStatus::kSkip},
      {"isolation.fragnesia",
       {{"host.os.id", "debian"},
        {"host.os.version_id", "12"},
        {"host.kernel.release", "6.1.0-28-amd64"}},
       CheckStatus::kSkip},
      {"hardware.arm-smmu-cmdqv",
       {{"host.arch", "aarch64"},
        {"host.virtualization.kind", "vm"},
        {"host.smmu.cmdqv", {{"smmuv3", true}, {"cmdqv", false}}}},
       CheckStatus::kWarn},
      {"hardware.arm-smmu-cmdqv",
       {{"host.arch", "aarch64"},
        {"host.virtualization.kind", "vm"},
        {"host.smmu.cmdqv", {{"smmuv3", true}, {"cmdqv", true}}}},
       CheckStatus::kPass},
      {"hardware.arm-smmu-cmdqv", {{"host.arch", "x86_64"}}, CheckStatus::kSkip},
      {"software.cuda-visible-devices",
       {{"scheduler.step.cuda_visible_devices",
         {{"SLURM_STEP_GPUS", "0"},
          {"CUDA_VISIBLE_DEVICES", "-1"},
          {"NVIDIA_VISIBLE_DEVICES", "void"}}}},
       CheckStatus::kWarn},
      {"software.cuda-visible-devices",
       {{"scheduler.step.cuda_visible_devices",
         {{"SLURM_GPUS_ON_NODE", "8"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}}},
       CheckStatus::kPass},
      {"software.cuda-visible-devices",
       {{"scheduler.step.cuda_visible_devices", {{"CUDA_VISIBLE_DEVICES", nullptr}}}},
       CheckStatus::kSkip},
      {"software.cuda-visible-devices",
       {{"scheduler.step.cuda_visible_devices",
         {{"SLURM_GPUS_ON_NODE", "0"}, {"CUDA_VISIBLE_DEVICES", nullptr}}}},
       CheckStatus::kSkip},
      {"software.cuda-visible-devices",
       {{"scheduler.step.cuda_visible_devices",
         {{"SLURM_GPUS_ON_NODE", "1"}, {"NVIDIA_VISIBLE_DEVICES", "GPU-8f3a"}}}},
       CheckStatus::kPass,
       "NVIDIA_VISIBLE_DEVICES=GPU-8f3a"},
      {"networking.nccl-ib-qps",
       {{"network.nccl.ib_qps_per_connection", {{"value", 1}, {"source", "NCCL's default"}}},
        {"network.fabric.tiers", {{"nodes", 128}}}},
       CheckStatus::kUnknown},
      {"networking.nccl-ib-qps",
       {{"network.nccl.ib_qps_per_connection", {{"value", 1}, {"source", "NCCL's default"}}},
        {"network.fabric.tiers", {{"nodes", 128}, {"multi_tier", true}}}},
       CheckStatus::kWarn},
      {"networking.nccl-ib-qps",
       {{"network.nccl.ib_qps_per_connection", {{"value", 2}, {"source", "/etc/nccl.conf"}}},
        {"network.fabric.tiers", {{"nodes", 128}, {"multi_tier", true}}}},
       CheckStatus::kPass},
      {"networking.nccl-ib-qps",
       {{"network.nccl.ib_qps_per_connection", {{"value", 1}, {"source", "NCCL's default"}}},
        {"network.fabric.tiers", {{"nodes", 8}, {"multi_tier", false}}}},
       CheckStatus::kPass},
      {"isolation.kubernetes-nodes-proxy",
       {{"kubernetes.rbac.nodes_proxy_subjects", json::array()}},
       CheckStatus::kPass},
      {"isolation.kubernetes-nodes-proxy",
       {{"kubernetes.rbac.nodes_proxy_subjects",
         {"ServiceAccount monitoring/prom via ClusterRole prometheus (binding prom)"}}},
       CheckStatus::kFail,
       "monitoring/prom"},
      {"isolation.kubernetes-nodes-proxy",
       {{"kubernetes.rbac.nodes_proxy_subjects", "forbidden"}},
       CheckStatus::kUnknown},
      {"orchestration.kubelet-cpu-manager",
       {{"kubernetes.kubelet.cpu_manager_policy", "static"}},
       CheckStatus::kPass},
      {"orchestration.kubelet-cpu-manager",
       {{"kubernetes.kubelet.cpu_manager_policy", "none"}},
       CheckStatus::kWarn,
       "none"},
      {"orchestration.kubelet-cpu-manager",
       {{"kubernetes.kubelet.cpu_manager_policy", nullptr}},
       CheckStatus::kUnknown},
      {"storage.default-storageclass",
       {{"kubernetes.storage.default_class", "local"}},
       CheckStatus::kPass},
      {"storage.default-storageclass",
       {{"kubernetes.storage.default_class", nullptr}},
       CheckStatus::kWarn},
      {"storage.rwx",
       {{"kubernetes.storage.default_class", "local"},
        {"kubernetes.storage.rwx_provisioner", "shared"}},
       CheckStatus::kPass},
      {"storage.rwx",
       {{"kubernetes.storage.default_class", "local"},
        {"kubernetes.storage.rwx_provisioner", nullptr}},
       CheckStatus::kWarn,
       "no ReadWriteMany"},
      {"storage.rwx",
       {{"kubernetes.storage.default_class", nullptr},
        {"kubernetes.storage.rwx_provisioner", "shared"}},
       CheckStatus::kWarn,
       "no default"},
      {"storage.rwx", {{"kubernetes.storage.default_class", "local"}}, CheckStatus::kUnknown},
  };
  for (const Case& c : cases) {
    // On a target the check applies to (targets are SlurmOnlyChecksAndPcieIsolationByTarget's).
    const Finding f = Grade(c.id, c.evidence, Check(c.id).targets.front());
    EXPECT_EQ(StatusName(f.status), StatusName(c.want))
        << c.id << " " << json(c.evidence).dump() << ": " << f.message;
    EXPECT_NE(f.observed.find(c.observed_has), std::string::npos)
        << c.id << ": observed '" << f.observed << "'";
    EXPECT_FALSE(f.message.empty()) << c.id;
    if (f.status == CheckStatus::kFail || f.status == CheckStatus::kWarn) {
      EXPECT_FALSE(f.remediation.empty()) << c.id;
    }
  }
}

TEST(GradeChecks, AVersionBelowItsMinimumLinksTheTablesAdvisoriesAndCves) {
  const Finding below = Grade("versions.cuda-toolkit", {{"software.nvcc.release", "12.4"}});
  ASSERT_EQ(below.status, CheckStatus::kFail);
  EXPECT_NE(std::ranges::find(below.links, "https://www.cve.org/CVERecord?id=CVE-2025-33228"),
            below.links.end());
  const Finding at = Grade("versions.cuda-toolkit", {{"software.nvcc.release", "13.1"}});
  ASSERT_EQ(at.status, CheckStatus::kPass);
  EXPECT_EQ(std::ranges::count_if(at.links,
                                  [](const std::string& l) { return l.find("cve.org") != l.npos; }),
            0);
}

TEST(GradeChecks, TopologyOnKubernetes) {
  const auto topology = [](json counts) {
    return Grade("networking.topology-configured", {{"kubernetes.topology", std::move(counts)}},
                 AuditTarget::kKubernetes);
  };
  const Finding clique =
      topology({{"Kueue Topologies", 0}, {"nodes with an NVLink clique label", 4}});
  EXPECT_EQ(clique.status, CheckStatus::kPass);
  EXPECT_EQ(clique.observed, "4 nodes with an NVLink clique label");
  EXPECT_EQ(topology({{"Kueue Topologies", 0}, {"Volcano HyperNodes", 0}}).status,
            CheckStatus::kWarn);
  // Nothing seen, but a list the API refused: that may be where it is.
  EXPECT_EQ(topology({{"Kueue Topologies", nullptr}, {"Volcano HyperNodes", 0}}).status,
            CheckStatus::kUnknown);
  EXPECT_EQ(Grade("networking.topology-configured", {}, AuditTarget::kKubernetes).status,
            CheckStatus::kUnknown);
}

TEST(GradeChecks, SlurmOnlyChecksAndPcieIsolationByTarget) {
  const Finding pmix =
      Grade("orchestration.slurm-pmix", {{"scheduler.slurm.mpi_types", {"none", "pmix_v4"}}},
            AuditTarget::kSlurm);
  EXPECT_EQ(pmix.status, CheckStatus::kPass);
  EXPECT_EQ(Grade("orchestration.slurm-pmix", {{"scheduler.slurm.mpi_types", {"none", "pmi2"}}},
                  AuditTarget::kSlurm)
                .status,
            CheckStatus::kWarn);
  const Finding local = Grade("orchestration.slurm-pmix", {});
  EXPECT_EQ(local.status, CheckStatus::kSkip);
  EXPECT_EQ(local.message, "applies to slurm only");
  EXPECT_EQ(Grade("isolation.pcie-passthrough", {}, AuditTarget::kVm).status, CheckStatus::kSkip);
  EXPECT_EQ(
      Grade("isolation.ufm-secured", {{"network.rdma.type", "roce"}}, AuditTarget::kSlurm).status,
      CheckStatus::kSkip);
  EXPECT_EQ(
      Grade("isolation.ufm-secured", {{"network.rdma.type", "infiniband"}}, AuditTarget::kSlurm)
          .status,
      CheckStatus::kAttest);
}

// Whatever the evidence, every check gets one finding; nothing passes on no evidence.
TEST(GradeChecks, EveryCheckGetsOneFindingAndNoneOnNothingPasses) {
  const AuditCatalogue& catalogue = AuditCatalogue::Builtin();
  const auto all = *catalogue.Select("");
  for (const AuditTarget target :
       {AuditTarget::kSlurm, AuditTarget::kKubernetes, AuditTarget::kStandalone, AuditTarget::kVm,
        AuditTarget::kContainer}) {
    const std::vector<Finding> findings = GradeChecks(all, {}, Context(target));
    ASSERT_EQ(findings.size(), all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(findings[i].check_id, all[i]->id);
      EXPECT_NE(findings[i].status, CheckStatus::kPass) << all[i]->id;
      EXPECT_FALSE(findings[i].message.empty()) << all[i]->id;
      if (!all[i]->AppliesTo(target) || !all[i]->side_effect.empty()) {
        EXPECT_EQ(findings[i].status, CheckStatus::kSkip) << all[i]->id;
      }
    }
  }
  // A side effect allowed: the check is judged (here: not collected).
  GradeContext allowed = Context(AuditTarget::kKubernetes);
  allowed.allow_side_effects = true;
  const auto* diag = &Check("health.dcgm-diag");
  EXPECT_EQ(GradeChecks({diag}, {}, Context(AuditTarget::kKubernetes)).front().status,
            CheckStatus::kSkip);
  EXPECT_EQ(GradeChecks({diag}, {}, allowed).front().status, CheckStatus::kUnknown);
}

// The audit judges NCCL's device selections by `cmax nccl recipe`'s rule, so both say the same.
TEST(GradeChecks, NcclDeviceSelectionsSayWhatIsMissing) {
  const AuditEvidence evidence = {
      {"network.nccl.device_selection",
       {{"NCCL_IB_HCA", {{"value", "mlx5_0,mlx5_9"}, {"source", "/etc/nccl.conf"}}},
        {"NCCL_SOCKET_IFNAME", {{"value", "ib"}, {"source", "environment"}}}}},
      {"network.ib.device_names", {"mlx5_0", "mlx5_1"}},
      {"network.interfaces", {"eth0", "lo"}}};
  const Finding f = Grade("networking.nccl-devices", evidence, AuditTarget::kSlurm);
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_NE(f.message.find("NCCL_IB_HCA: 'mlx5_9' matches no RDMA device here (present: mlx5_0, "
                           "mlx5_1)"),
            std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("NCCL_SOCKET_IFNAME=ib (from environment) selects none of this node's "
                           "network interfaces (eth0, lo)"),
            std::string::npos)
      << f.message;
}

// Where the target says why it could not read a key (a Kubernetes node), an UNKNOWN for want of
// evidence says it: the first of its keys with a reason, else the reason for any other key.
TEST(GradeChecks, SaysWhyEvidenceWasNotRead) {
  const std::map<std::string, std::string> unread = {{"host.limits.nofile", "forbidden"}};
  GradeContext context = Context(AuditTarget::kKubernetes);
  context.unread = &unread;
  context.unread_otherwise = "no pod";
  const auto findings =
      GradeChecks({&Check("software.resource-limits"), &Check("software.perf-event-paranoid"),
                   &Check("versions.nvidia-driver")},
                  {{"gpu.driver.version", "580.159.03"}}, context);
  EXPECT_EQ(findings[0].message,
            "not collected: host.limits.memlock, host.limits.nofile (forbidden)");
  EXPECT_EQ(findings[1].status, CheckStatus::kUnknown);
  EXPECT_TRUE(findings[1].message.ends_with(" (no pod)")) << findings[1].message;
  EXPECT_EQ(findings[2].status, CheckStatus::kPass);  // only UNKNOWNs are explained
  EXPECT_EQ(findings[2].message.find("no pod"), std::string::npos);
  // Without reasons, "not collected" alone.
  EXPECT_EQ(Grade("software.resource-limits", {}, AuditTarget::kKubernetes).message,
            "not collected: host.limits.memlock, host.limits.nofile");
}

// The checks behind --allow-side-effects, graded on what their collectors recorded.
TEST(GradeChecks, JudgesTheSideEffectChecksWhenAllowed) {
  GradeContext allowed = Context();
  allowed.allow_side_effects = true;
  const auto grade = [&](const char* id, const AuditEvidence& evidence) {
    return GradeChecks({&Check(id)}, evidence, allowed).front();
  };
  const json ran = {{"ran", true},
                    {"tests", 3},
                    {"passed", 3},
                    {"skipped", 0},
                    {"failed", json::array()},
                    {"warned", json::array()}};
  EXPECT_EQ(grade("health.dcgm-diag", {{"health.dcgm.diag_r1", ran}}).status, CheckStatus::kPass);
  json failed = ran;
  failed["failed"] = {"memory: GPU 3: DBE"};
  failed["passed"] = 2;
  const Finding f = grade("health.dcgm-diag", {{"health.dcgm.diag_r1", failed}});
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.observed, "memory: GPU 3: DBE");
  json warned = ran;
  warned["warned"] = {"software: GPU 0: persistence mode off"};
  EXPECT_EQ(grade("health.dcgm-diag", {{"health.dcgm.diag_r1", warned}}).status,
            CheckStatus::kWarn);
  const Finding busy = grade(
      "health.dcgm-diag", {{"health.dcgm.diag_r1", {{"ran", false}, {"reason", "1 of 8 busy"}}}});
  EXPECT_EQ(busy.status, CheckStatus::kUnknown);
  EXPECT_EQ(busy.message, "not run: 1 of 8 busy");
  EXPECT_EQ(grade("health.dcgm-diag",
                  {{"health.dcgm.diag_r1", {{"ran", true}, {"error", "no result within 120 s"}}}})
                .status,
            CheckStatus::kUnknown);
  EXPECT_EQ(grade("health.dcgm-diag", {{"health.dcgm.diag_r1", nullptr}}).status,
            CheckStatus::kSkip);
  EXPECT_EQ(grade("health.dcgm-diag", {{"health.dcgm.diag_r1", "odd"}}).status,
            CheckStatus::kUnknown);
  EXPECT_EQ(grade("health.dcgm-diag", {}).status, CheckStatus::kUnknown);

  const auto egress = [&](json reachable, const char* detail) {
    return grade("networking.outbound-internet", {{"network.egress.target", "example.com:443"},
                                                  {"network.egress.reachable", reachable},
                                                  {"network.egress.detail", detail}});
  };
  const Finding reached = egress(true, "connected");
  EXPECT_EQ(reached.status, CheckStatus::kWarn);
  EXPECT_NE(reached.message.find("alert"), std::string::npos);
  EXPECT_EQ(egress(false, "no answer in 5 s").status, CheckStatus::kPass);
  EXPECT_EQ(egress(nullptr, "cannot open a socket").status, CheckStatus::kUnknown);
  EXPECT_EQ(grade("networking.outbound-internet", {{"network.egress.target", nullptr}}).status,
            CheckStatus::kSkip);
  EXPECT_EQ(grade("networking.outbound-internet", {}).status, CheckStatus::kUnknown);

  GradeContext slurm = allowed;
  slurm.target = AuditTarget::kSlurm;
  const auto import = [&](const AuditEvidence& evidence) {
    return GradeChecks({&Check("containers.enroot-import")}, evidence, slurm).front();
  };
  EXPECT_EQ(import({{"containers.enroot.import_ok", true}}).status, CheckStatus::kPass);
  const Finding failed_import = import(
      {{"containers.enroot.import_ok", false}, {"containers.enroot.import_error", "exit 1: 429"}});
  EXPECT_EQ(failed_import.status, CheckStatus::kWarn);
  EXPECT_EQ(failed_import.observed, "import failed: exit 1: 429");
  EXPECT_EQ(import({{"containers.enroot.import_ok", nullptr}}).status, CheckStatus::kSkip);
  EXPECT_EQ(import({{"containers.enroot.import_error", "not run: too little time"}}).status,
            CheckStatus::kUnknown);
  EXPECT_EQ(import({}).status, CheckStatus::kUnknown);

  // A diagnostic that skipped every test proves nothing.
  json skipped = ran;
  skipped["passed"] = 0;
  skipped["skipped"] = 3;
  EXPECT_EQ(grade("health.dcgm-diag", {{"health.dcgm.diag_r1", skipped}}).status,
            CheckStatus::kUnknown);
}

TEST(GradeChecks, EveryRuleIsACatalogueCheck) {
  std::set<std::string> ids;
  for (const CheckSpec& check : AuditCatalogue::Builtin().Checks()) ids.insert(check.id);
  const std::vector<std::string> rules = GradableChecks();
  EXPECT_GE(rules.size(), 30U);
  for (const std::string& rule : rules) EXPECT_TRUE(ids.contains(rule)) << rule;
}

}  // namespace
}  // namespace cmax::audit
