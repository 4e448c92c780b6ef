// The reliability commands' whole work, behind the thin `cmax reliability` file:
// - RunScenarioFile: reads a scenario, checks every step's safety before anything is injected,
//   injects each step where the provider's checks read it (recorded before it is done), watches
//   the scheduler and the alert signals, judges the pass bars, restores the simulated GPUs, and
//   records one run with a finding per step and the timeline as metrics.
// - RebootAndTime: reboots a node through its scheduler and times its return until a GPU query
//   works, recorded as one run.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "remediate/settings.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::reliability {

// What the reliability commands take from the shell around them.
struct ReliabilityIo {
  std::string db_path;
  std::string cmax_version;
  std::string provider;  // the provider evaluated; empty: --provider or CMAX_PROVIDER, if any
  sys::FileSystem* fs = nullptr;
  sys::ProcessRunner* runner = nullptr;
  Clock* clock = nullptr;
  std::function<bool()> stop;                     // Ctrl-C
  std::function<int()> interrupt_signal;          // the signal that stopped the run, or 0
  std::function<void(std::string_view)> out;      // lines for the operator, as they come
  std::function<void(std::string_view)> refused;  // why a step or node is refused
};

struct ScenarioRunOptions {
  std::string scenario_path;
  bool dry_run = false;
  bool yes = false;
  bool force = false;
  bool allow_destructive = false;
  std::string kmsg = "/dev/kmsg";
  remediate::ControllerSettings scheduler;  // --scheduler and the --kube-* settings only
  std::string prometheus;                   // these three: the scenario's unless given
  std::string alert_query;
  std::string alert_webhook;
};

struct RebootOptions {
  std::string node;
  bool yes = false;
  bool force = false;
  bool allow_destructive = false;
  std::string gpu_check = "srun -w {node} -N1 --overlap -t 1 nvidia-smi -L";
  double timeout_s = 1800;
  double poll_s = 5;
  std::string scheduler = "slurm";
};

struct ReliabilityReport {
  int64_t run_id = 0;  // 0: nothing was recorded (a dry run)
  int exit_code = 0;   // 0, 1 (a step or the reboot failed its bar), 3, 128+signal
  std::string text;    // the verdicts to print
};

// Errors: kInvalidArgument for what the user gave (the scenario, a refused step, the scheduler's
// settings), others when the run could not be made.
Result<ReliabilityReport> RunScenarioFile(const ScenarioRunOptions& options,
                                          const ReliabilityIo& io);
Result<ReliabilityReport> RebootAndTime(const RebootOptions& options, const ReliabilityIo& io);

}  // namespace cmax::reliability
