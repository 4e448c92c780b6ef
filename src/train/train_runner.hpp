// `cmax train run`: a training command (TorchTitan's run_train.sh, torchrun, or the same under
// srun) run with the environment given, its output kept in a file as it comes and read line by
// line (torchtitan_log.hpp) while it runs; stopped cleanly once the step budget is logged,
// killed at its wall-clock deadline (a hang, reported with the last step seen), and its figures
// found (train_figures.hpp) whatever way it ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "net/netns_lab.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"
#include "train/train_figures.hpp"
#include "train/train_log_run.hpp"

namespace cmax::train {

// How soon a launcher that could not start the job fails (mpirun: seconds).
inline constexpr Duration kLaunchFailureWithin = std::chrono::seconds(60);

struct TrainRunOptions {
  std::vector<std::string> command;  // argv; with use_shell its words joined, for /bin/sh -c
  bool use_shell = false;
  std::vector<std::string> env;  // KEY=VALUE, added to cmax's own environment
  std::string cwd;               // empty: cmax's
  // Stop once a metric line of this step or later is logged (SIGTERM, then SIGKILL after
  // stop_grace): the run ends as "budget", not as a failure. None: the run ends itself.
  std::optional<int64_t> step_budget;
  Duration deadline = std::chrono::hours(2);  // wall clock; the job is killed then
  Duration stop_grace = std::chrono::seconds(30);
  // The whole output as it came, stdout and stderr interleaved. RunAndRecordTraining's default:
  // DefaultTrainLogPath beside the store.
  std::string log_path;
  TrainFiguresOptions figures;
  std::string reference;  // a published figure's id to hold the run against; "": none
  // A command that fails within retry_within and before the job began (no "Training
  // starts" line, step or error of the job's read yet: it exited non-zero or died of a signal)
  // is started again, up to this many times, within the one deadline: mpirun failed now and
  // then as it started its daemons in namespace hosts (net::kLauncherCrashRetries). What it
  // printed stays in the log, with a line saying so.
  int crash_retries = 0;                         // 0: never (a job's own failure is not retried)
  Duration retry_within = kLaunchFailureWithin;  // a later failure is the job's, not retried
  bool exit_zero = false;  // the recorded run's exit code 0 whatever it found (--exit-zero)
};

enum class TrainEnding {
  kFinished,     // exited 0 on its own
  kBudget,       // stopped at the step budget, as asked
  kDeadline,     // killed at the deadline
  kFailed,       // exited non-zero or by a signal on its own
  kInterrupted,  // cmax was interrupted (Ctrl-C, SIGTERM) and stopped it
};

struct TrainRunResult {
  TrainLog log;
  TrainFigures figures;
  TrainEnding ending = TrainEnding::kFinished;
  std::string
      ending_words;  // "stopped at the budget: step 50 logged", "killed at the deadline ..."
  sys::ProcessResult process;
  bool log_incomplete = false;  // writing the log file failed part-way (said in a note)
};

struct TrainRunIo {
  sys::ProcessRunner* runner = nullptr;
  sys::FileSystem* fs = nullptr;  // the log's folder made where it is missing
  // Each metric line as it is read ("step 20: 5,821 tokens/s/GPU, loss 12.14"), for progress.
  std::function<void(std::string_view)> progress;
};

std::string_view TrainEndingName(TrainEnding ending);  // "finished", "budget", "deadline" ...

// Where a run's log goes when none is named: beside the store, train-<UTC time>.log. Pure.
std::string DefaultTrainLogPath(const std::string& db_path, WallTime now);

// Errors: no command, a log file that cannot be created, a command that cannot be started.
Result<TrainRunResult> RunTraining(const TrainRunOptions& options, const TrainRunIo& io);

// How the run ended, as a finding (train.ending): PASS finished or stopped at the budget; FAIL
// killed at the deadline or ended by itself with an error; UNKNOWN interrupted. Pure.
Finding TrainEndingFinding(const TrainRunResult& result);

struct TrainRunReport {
  TrainRunResult run;
  TrainLogReport recorded;  // the run as stored, and the command's exit code
  std::string log_path;     // where the output is kept
};
// `cmax train run`: RunTraining, then the log recorded as a run (command "train") with its
// ending. A log file is always kept (the default one when none is named): it is what the
// run's figures can be read again from.
Result<TrainRunReport> RunAndRecordTraining(TrainRunOptions options, const TrainRunIo& io,
                                            const TrainLogIo& store_io);

// RunAndRecordTraining with the command run as one rank on each host of a namespace lab made for
// it (net::WithNetnsLab: root; `lab.slow_links` slowed), started by mpirun through the lab's
// agent with options.env passed to the ranks by name (-x NAME: no value in mpirun's argv, nor in
// the recorded command) and mpirun's run-as-root settings; with
// use_shell, each rank runs the command through /bin/sh -c. The launcher is started again when
// it fails before the job began (net::kLauncherCrashRetries); the lab is taken down when the run
// ends. The lab's lines go to io.progress.
Result<TrainRunReport> RunAndRecordTrainingOverNetnsLab(TrainRunOptions options,
                                                        const net::NetnsLabRequest& lab,
                                                        const TrainRunIo& io,
                                                        const TrainLogIo& store_io);

}  // namespace cmax::train
