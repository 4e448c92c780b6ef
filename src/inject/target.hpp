// May an injection go ahead? The facts about the target are gathered by the command (root, lab,
// this host, what the scheduler says); the rules are pure and every one has a test.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/file_system.hpp"

namespace cmax::inject {

struct TargetFacts {
  std::string node;
  bool root = false;
  bool lab = false;    // the node belongs to a `cmax lab` cluster (SLURM_CONF points into one)
  bool local = false;  // the injection lands on this node: it is this host, or a lab node
  bool scheduler_known = false;  // a scheduler answered
  bool in_scheduler = false;     // it knows the node
  bool drained = false;          // it shows the node out of service
  std::string drain_reason;
  bool runs_jobs = false;  // allocated, mixed or completing
  // A lab node on a host with NVIDIA GPUs of its own: the lab's kernel log is that host's, where
  // the host's own health checks read a lab's fault as real.
  bool lab_beside_gpus = false;
};

struct SafetyFlags {
  bool dry_run = false;
  bool yes = false;                // a real fault on a node that is not a lab's
  bool force = false;              // a node that runs jobs
  bool allow_destructive = false;  // injectors that change hardware state
  bool destructive = false;        // this injector is one
  bool resets_gpu = false;         // it resets a GPU here (a bus reset): never for a lab node
};

// Every reason to refuse, in words; empty: go ahead. A dry run is refused only what makes its
// plan wrong (another host, an unknown or drained node), not what it would need to act.
std::vector<std::string> Refusals(const TargetFacts& target, const SafetyFlags& flags);

// The GPU to inject for, as a PCI address ("0000:17:00.0"): an index into `node_gpus` (the
// node's GPUs from NVML, in order), or a PCI address that must be one of them; without NVML
// (empty list), an address must be an NVIDIA device in sysfs, except on a lab, which has no
// GPUs. `force` accepts an address that cannot be confirmed.
Result<std::string> ResolveGpu(std::string_view gpu, const std::vector<std::string>& node_gpus,
                               const sys::FileSystem& fs, bool lab, bool force);

}  // namespace cmax::inject
