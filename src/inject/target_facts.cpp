#include "inject/target_facts.hpp"

#include <unistd.h>

#include <algorithm>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "inject/pcie_sbr.hpp"
#include "lab/lab_config.hpp"
#include "remediate/slurm.hpp"
#include "sys/host.hpp"

namespace cmax::inject {

// SLURM_CONF inside a folder `cmax lab` made: every lab node shares this host's kernel.
bool LabCluster(const sys::FileSystem& fs) {
  const std::string conf = sys::GetEnv("SLURM_CONF");
  // The lab keeps slurm.conf in a folder of its own (DIR/etc/slurm.conf): try each folder above.
  std::string dir = conf;
  for (int up = 0; up < 3; ++up) {
    const size_t slash = dir.rfind('/');
    if (conf.empty() || slash == std::string::npos || slash == 0) return false;
    dir.resize(slash);
    const lab::LabPaths paths = lab::PathsFor(dir);
    if (paths.slurm_conf == conf) return fs.Exists(paths.state_file);
  }
  return false;
}

// An NVIDIA GPU among this host's PCI devices.
bool HostHasNvidiaGpus(const sys::FileSystem& fs) {
  auto devices = fs.ListDir("/sys/bus/pci/devices");
  return devices && std::ranges::any_of(*devices, [&fs](const std::string& device) {
           return IsNvidiaGpu(fs, device);
         });
}

TargetFacts GatherFacts(const std::string& node, const sys::FileSystem& fs,
                        sys::ProcessRunner& runner, bool ask_slurm) {
  TargetFacts t;
  const std::string host = sys::Hostname();
  t.node = node.empty() ? host : node;
  t.root = ::geteuid() == 0;
  t.lab = LabCluster(fs);
  t.local = t.lab || t.node == host || t.node == host.substr(0, host.find('.'));
  t.lab_beside_gpus = t.lab && HostHasNvidiaGpus(fs);
  if (!ask_slurm || (sys::GetEnv("SLURM_CONF").empty() && sys::FindProgram("sinfo").empty())) {
    return t;
  }
  remediate::SlurmOptions slurm_options;
  slurm_options.attempts = 1;  // a safety look, not a wait: a silent Slurm is reported
  slurm_options.command_timeout = std::chrono::seconds(5);
  slurm_options.read_maintenance_reservations = true;
  remediate::SlurmScheduler slurm(runner, slurm_options);
  auto nodes = slurm.Nodes();
  if (!nodes) {
    // Slurm's clients explain over several lines; the last says why.
    const std::string why(Trim(nodes.error().message));
    log::Warn("cannot ask Slurm about {} ({}); not checked that it is in service", t.node,
              why.substr(why.rfind('\n') + 1));
    return t;
  }
  t.scheduler_known = true;
  for (const remediate::SchedulerNode& n : *nodes) {
    if (n.name != t.node) continue;
    t.in_scheduler = true;
    t.drained = t.drained || n.OutOfService();
    if (n.OutOfService()) t.drain_reason = n.ServiceReason();
    // A completing job's processes (its epilog) are still there.
    t.runs_jobs = t.runs_jobs || n.state.starts_with("alloc") || n.state.starts_with("mix") ||
                  n.state.starts_with("comp");
  }
  return t;
}

}  // namespace cmax::inject
