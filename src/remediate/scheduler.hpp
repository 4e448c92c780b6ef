// What remediation asks of a scheduler, as an interface: Slurm is the one carried out here
// (slurm.hpp), Kubernetes comes next. Every call is idempotent, because a controller killed
// between "planned" and "done" carries the action out again when it restarts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "remediate/fleet.hpp"

namespace cmax::remediate {

// Drains cmax sets carry this prefix; cmax resumes only those, never an operator's.
inline constexpr std::string_view kReasonPrefix = "cmax:";
bool IsCmaxReason(std::string_view reason);

struct SchedulerNode {
  std::string name;
  std::string state;   // the scheduler's words, lower case: "idle", "drained", "mixed", "maint"
  bool drain = false;  // draining, drained or down: no new work lands here
  std::string reason;  // why it is drained, without Slurm's "[user@time]" suffix
  std::vector<std::string> partitions;
  bool maintenance = false;   // in a maintenance reservation (Slurm's "maint" or '$' mark)
  bool responding = true;     // Slurm: false when sinfo marks the node '*' (not responding)
  bool powered_down = false;  // Slurm: '~', powered off by power saving (or on its way, '%')
  // Kubernetes: the node's NoSchedule and NoExecute taints, "key:effect" (anyone's, not only
  // cmax's: an observer of another provider's remediation watches them).
  std::vector<std::string> taints;
  // Kubernetes: node conditions that say something is wrong: any type other than Ready that is
  // True (KernelDeadlock, GpuXidError, cmax's own ...), and "NotReady" when Ready is not True.
  std::vector<std::string> conditions;

  // Out of service for whoever submits jobs: drained, down, or in a maintenance reservation
  // (cmax validates a node on Slurm that way, and no ordinary work lands there either).
  bool OutOfService() const { return drain || maintenance; }
  // Why, in words: the scheduler's reason, or the reservation when there is none.
  std::string ServiceReason() const {
    if (!reason.empty() || !maintenance) return reason;
    return "in a maintenance reservation";
  }
};

struct ValidationSpec {
  std::string command;  // run on the node while it is out of service; exit 0 means it passed
  Duration timeout = std::chrono::minutes(30);
};

enum class ValidationState { kRunning, kPassed, kFailed };

struct ValidationStatus {
  ValidationState state = ValidationState::kRunning;
  std::string detail;  // "exit 3", "timed out", ...
};

// Every action returns what it did in words ("drained", "already drained by cmax", ...), which
// goes into the store beside the action.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Result<std::vector<SchedulerNode>> Nodes() = 0;
  // Nodes out of service with a cmax reason, and since when: the fleet-wide view the circuit
  // breaker needs when every node runs its own controller (`cmax agent --remediate`).
  virtual Result<std::vector<TakeOut>> CmaxTakeOuts() = 0;
  // A node drained by someone else keeps their reason (and stays drained): not an error.
  virtual Result<std::string> Drain(const std::string& node, const std::string& reason) = 0;
  // Refuses (kPermissionDenied) a drain whose reason cmax did not set; a node that is not
  // drained is left as it is.
  virtual Result<std::string> Resume(const std::string& node) = 0;
  // The jobs running on the node go back to the queue. It returns once they are asked to go,
  // not when they have gone (a job's epilog, a pod's grace period): see JobsOn.
  virtual Result<std::string> RequeueJobs(const std::string& node) = 0;
  // The work still on the node, by id: Slurm's jobs that run, start, are suspended or stopped,
  // or still completing; Kubernetes' pods a requeue evicts, those terminating included. A GPU reset
  // waits until it is empty.
  virtual Result<std::vector<std::string>> JobsOn(const std::string& node) = 0;
  virtual Result<std::string> Reboot(const std::string& node, const std::string& reason) = 0;
  // When the node last booted, in the scheduler's words: a change means a reboot happened.
  virtual Result<std::string> BootTime(const std::string& node) = 0;
  // Runs the validation on a node that is out of service, without letting other work land on
  // it; returns a handle for PollValidation. Starting again for the same node while the first
  // is still known returns the same handle.
  virtual Result<std::string> StartValidation(const std::string& node,
                                              const ValidationSpec& spec) = 0;
  virtual Result<ValidationStatus> PollValidation(const std::string& node,
                                                  const std::string& handle) = 0;
  // Cleans up what StartValidation set up. When it failed, the node is drained again with
  // `reason` first, so it is never left open to work.
  virtual Result<std::string> EndValidation(const std::string& node, bool passed,
                                            const std::string& reason) = 0;
  // A spare that may go into service now (read only): the controller writes the choice down
  // before it moves the spare, so a restart moves the same one.
  virtual Result<std::string> PickSpare() = 0;
  virtual Result<std::string> SwapInSpare(const std::string& spare) = 0;
  virtual Result<std::string> ReturnSpare(const std::string& spare) = 0;
};

}  // namespace cmax::remediate
