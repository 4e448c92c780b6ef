// Reboot timing: reboot a node through its scheduler and time its return, until a GPU query
// works on it again. The node is taken out for the reboot (Slurm: `scontrol reboot ASAP
// nextstate=DOWN` with a cmax reason) and put back in service once it has booted, so the GPU
// query can run there.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "remediate/scheduler.hpp"

namespace cmax::reliability {

struct RebootTiming {
  WallTime requested;
  std::string boot_before;
  std::string boot_after;
  std::optional<Duration> booted;     // requested -> the scheduler shows a new boot time
  std::optional<Duration> gpu_ready;  // requested -> the GPU query succeeds
  std::string gpu_output;             // what the GPU query printed the first time it worked
  std::string failure;                // why it did not finish: "no new boot time within 30m00s"
  // Set when it stopped before putting the node back in service (stopped, or no new boot time):
  // what a person must do, since nothing else will.
  std::string undo;
};

struct RebootHooks {
  // Runs the GPU query on the node; success means its GPUs answer.
  std::function<Result<std::string>()> gpu_check;
  std::function<bool()> stop;  // Ctrl-C
};

// What a person must do for a node whose reboot timing stopped before it was put back in
// service (stopped, timed out, or cmax killed): Slurm brings it back DOWN with cmax's reason.
std::string RebootUndo(const std::string& node);

// Fails only when the reboot cannot even be asked for; a reboot that does not come back in
// time is a timing with `failure` set.
Result<RebootTiming> TimeReboot(remediate::Scheduler& scheduler, Clock& clock,
                                const std::string& node, Duration poll, Duration timeout,
                                const RebootHooks& hooks);

}  // namespace cmax::reliability
