// The Scheduler for Slurm, through its own clients (sinfo, squeue, scontrol, sbatch, scancel)
// found on PATH and SLURM_CONF like any Slurm client. A controller that does not answer is
// retried with backoff; when it stays away the call fails with kUnavailable and the controller
// keeps the action pending.
//
// Validation while out of service: Slurm starts no job on a DRAIN node, not even inside a
// reservation, so cmax first creates a MAINT reservation on the node for the validating user,
// then resumes the node: other work still cannot land, the validation job runs inside the
// reservation, and the reservation is deleted when validation ends.
#pragma once

#include <functional>
#include <optional>
#include <set>

#include "remediate/scheduler.hpp"
#include "sys/process_runner.hpp"

namespace cmax::remediate {

struct SlurmOptions {
  std::string service_partition = "gpu";  // where spares go into service
  std::string spare_partition = "spare";
  std::string validation_user = "root";
  Duration command_timeout = std::chrono::seconds(10);
  int attempts = 4;                                   // for a controller that does not answer
  Duration backoff = std::chrono::milliseconds(250);  // doubled after each attempt
  std::function<void(Duration)> sleep;                // null: really sleep
  // Nodes() also reads the reservations to mark nodes in a MAINT reservation (one more command
  // per call): for observers of another's remediation, not for the controller, which needs
  // only drain states.
  bool read_maintenance_reservations = false;
};

class SlurmScheduler final : public Scheduler {
 public:
  SlurmScheduler(sys::ProcessRunner& runner, SlurmOptions options);

  Result<std::vector<SchedulerNode>> Nodes() override;
  Result<std::vector<TakeOut>> CmaxTakeOuts() override;
  Result<std::string> Drain(const std::string& node, const std::string& reason) override;
  Result<std::string> Resume(const std::string& node) override;
  Result<std::string> RequeueJobs(const std::string& node) override;
  Result<std::vector<std::string>> JobsOn(const std::string& node) override;
  Result<std::string> Reboot(const std::string& node, const std::string& reason) override;
  Result<std::string> BootTime(const std::string& node) override;
  Result<std::string> StartValidation(const std::string& node, const ValidationSpec& spec) override;
  Result<ValidationStatus> PollValidation(const std::string& node,
                                          const std::string& handle) override;
  Result<std::string> EndValidation(const std::string& node, bool passed,
                                    const std::string& reason) override;
  Result<std::string> PickSpare() override;
  Result<std::string> SwapInSpare(const std::string& spare) override;
  Result<std::string> ReturnSpare(const std::string& spare) override;

  static std::string ReservationName(const std::string& node) { return "cmax-validate-" + node; }

 private:
  // Runs a Slurm client; retries while the controller does not answer. A command that ran and
  // failed is an error carrying its stderr.
  Result<sys::ProcessResult> Slurm(std::vector<std::string> argv, bool allow_failure = false);
  Result<SchedulerNode> Node(const std::string& node);
  Result<std::vector<std::string>> Hostnames(const std::string& hostlist);
  Result<std::vector<std::string>> PartitionNodes(const std::string& partition);

  sys::ProcessRunner& runner_;
  SlurmOptions options_;
};

// Pure parts, tested on their own.
// sinfo -N -h -o '%N|%T|%P|%E' (the reason last, so a '|' in it stays in it); a node in two
// partitions is one node with both.
std::vector<SchedulerNode> ParseSinfoNodes(std::string_view text);
// sinfo -h -R -o '%N|%H|%E' (reason last): nodes whose reason starts with "cmax:", with the
// time the reason was set. Slurm prints that time in the controller's local time zone; `tz`
// turns it into a WallTime (tests pass a fixed one).
std::vector<TakeOut> ParseCmaxTakeOuts(
    std::string_view text,
    const std::function<std::optional<WallTime>(std::string_view)>& local_time);
// "2026-11-30T11:45:48" in this process's local time zone.
std::optional<WallTime> ParseSlurmLocalTime(std::string_view text);
// scontrol show job -o ID: JobState and ExitCode.
ValidationStatus ParseJobState(std::string_view text);
// Value of KEY= in scontrol's one-line output (up to the next space); empty when absent.
std::string ScontrolField(std::string_view text, std::string_view key);
// scontrol show reservation -o: the nodes of reservations flagged MAINT that are active or have
// started by `now` (times in the controller's local zone, read by `local_time`).
std::set<std::string> MaintenanceNodes(
    std::string_view text, WallTime now,
    const std::function<std::optional<WallTime>(std::string_view)>& local_time);
// The controller did not answer (as opposed to refusing what was asked).
bool ControllerUnreachable(const sys::ProcessResult& result);

}  // namespace cmax::remediate
