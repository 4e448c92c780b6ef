#include "train/train_runner.hpp"

#include <fmt/format.h>

#include "core/strings.hpp"
#include "net/mpi_launch.hpp"
#include "net/netns_lab.hpp"
#include "store/store.hpp"
#include "sys/append_file.hpp"

namespace cmax::train {
namespace {

// Bytes of one stream cut into lines for the reader; a line longer than this is fed in pieces
// (a progress bar redrawn with '\r' can run on for megabytes).
constexpr size_t kMaxLineBytes = size_t{1} << 16;

class LineSplitter {
 public:
  template <typename Sink>
  void Add(std::string_view data, Sink&& sink) {
    while (!data.empty()) {
      const size_t newline = data.find('\n');
      if (newline == std::string_view::npos) {
        pending_.append(data);
        if (pending_.size() >= kMaxLineBytes) {
          sink(pending_);
          pending_.clear();
        }
        return;
      }
      pending_.append(data.substr(0, newline));
      sink(pending_);
      pending_.clear();
      data.remove_prefix(newline + 1);
    }
  }
  template <typename Sink>
  void Finish(Sink&& sink) {
    if (!pending_.empty()) sink(pending_);
    pending_.clear();
  }

 private:
  std::string pending_;
};

}  // namespace

std::string_view TrainEndingName(TrainEnding ending) {
  switch (ending) {
    case TrainEnding::kFinished: return "finished";
    case TrainEnding::kBudget: return "budget";
    case TrainEnding::kDeadline: return "deadline";
    case TrainEnding::kFailed: return "failed";
    case TrainEnding::kInterrupted: return "interrupted";
  }
  return "?";
}

namespace {

// The argv that runs: with use_shell, the command's words joined for /bin/sh -c.
std::vector<std::string> ArgvThatRuns(const TrainRunOptions& options) {
  if (!options.use_shell) return options.command;
  return {"/bin/sh", "-c", Join(options.command, " ")};
}

}  // namespace

std::string DefaultTrainLogPath(const std::string& db_path, WallTime now) {
  std::string stamp = FormatIso8601(now);
  std::erase(stamp, ':');
  return store::BesideStore(db_path, fmt::format("train-{}.log", stamp));
}

Result<TrainRunResult> RunTraining(const TrainRunOptions& options, const TrainRunIo& io) {
  if (options.command.empty() || options.command.front().empty()) {
    return Fail(ErrorCode::kInvalidArgument, "no training command given");
  }
  std::optional<sys::AppendFile> log_file;
  if (!options.log_path.empty()) {
    const size_t slash = options.log_path.rfind('/');
    if (io.fs != nullptr && slash != std::string::npos && slash > 0) {
      if (auto made = io.fs->CreateDirs(options.log_path.substr(0, slash), 0700); !made) {
        return tl::unexpected(made.error());
      }
    }
    auto opened = sys::AppendFile::Open(options.log_path);
    if (!opened) return tl::unexpected(opened.error());
    log_file.emplace(std::move(*opened));
  }
  TrainRunResult out;
  TorchTitanLogReader reader;
  // One splitter per stream: stdout's and stderr's lines are whole even when they interleave.
  LineSplitter splitters[2];
  size_t steps_seen = 0;
  bool budget_reached = false;
  const auto feed = [&](std::string_view line) {
    reader.Feed(line);
    const TrainLog& log = reader.Log();
    while (steps_seen < log.steps.size()) {
      const TrainStep& step = log.steps[steps_seen++];
      if (io.progress) {
        std::string words = fmt::format("step {}", step.step);
        if (step.rank) words += fmt::format(" (rank {})", *step.rank);
        if (step.tps) words += fmt::format(": {:.0f} tokens/s/GPU", *step.tps);
        if (step.loss) words += fmt::format(", loss {:.4g}", *step.loss);
        io.progress(words);
      }
      if (options.step_budget && step.step >= *options.step_budget) budget_reached = true;
    }
  };
  sys::ProcessSpec spec{.argv = ArgvThatRuns(options),
                        .env_add = options.env,
                        .cwd = options.cwd,
                        .timeout = options.deadline,
                        .kill_grace = options.stop_grace,
                        .output_cap = size_t{4} << 20};
  spec.on_output = [&](int stream, std::string_view data) {
    if (log_file && !out.log_incomplete && !log_file->Append(data)) out.log_incomplete = true;
    splitters[stream == 2 ? 1 : 0].Add(data, feed);
    return !budget_reached;
  };
  auto ran = io.runner->Run(spec);
  Duration spent = ran ? ran->duration : Duration{0};
  for (int retry = 1; ran && retry <= options.crash_retries; ++retry) {
    const sys::ProcessResult& p = *ran;
    // The job's own lines (on either stream: TorchTitan's logger writes to stderr) say it had
    // begun; a launcher that failed to start its daemons fails within seconds. Anything else
    // is the job's own end, and is not run again.
    const TrainLog& seen = reader.Log();
    const bool began = seen.info.start_step || !seen.steps.empty() || !seen.failures.empty();
    if (p.Succeeded() || began || p.interrupted || p.timed_out || p.stopped ||
        p.duration > options.retry_within || spent >= options.deadline) {
      break;
    }
    const std::string note =
        fmt::format("cmax: the command ended ({}) before the job began; started again ({} of {})\n",
                    p.Describe(), retry, options.crash_retries);
    if (log_file && !out.log_incomplete && !log_file->Append(note)) out.log_incomplete = true;
    reader = TorchTitanLogReader();  // the launcher's words are not the job's
    splitters[0] = LineSplitter();
    splitters[1] = LineSplitter();
    steps_seen = 0;
    spec.timeout = options.deadline - spent;  // one deadline for every start
    ran = io.runner->Run(spec);
    if (ran) spent += ran->duration;
  }
  if (!ran) return tl::unexpected(ran.error());
  for (LineSplitter& s : splitters) s.Finish(feed);
  reader.Finish();
  out.process = std::move(*ran);
  out.process.stdout_text.clear();  // read as it came; the log file keeps it
  out.process.stderr_text.clear();
  out.log = reader.Take();
  out.figures = AnalyzeTrainLog(out.log, options.figures);
  const std::string last = out.figures.last_step
                               ? fmt::format("the last step logged was {}", *out.figures.last_step)
                               : std::string("no step was logged");
  const sys::ProcessResult& p = out.process;
  if (p.interrupted) {
    out.ending = TrainEnding::kInterrupted;
    out.ending_words = "interrupted: cmax was asked to stop, and stopped it; " + last;
  } else if (p.stopped) {
    out.ending = TrainEnding::kBudget;
    out.ending_words =
        fmt::format("stopped at the step budget ({}): {}", *options.step_budget, last);
  } else if (p.timed_out) {
    out.ending = TrainEnding::kDeadline;
    out.ending_words =
        fmt::format("killed at its deadline ({}): {}", FormatDuration(options.deadline), last);
  } else if (p.exit_code == 0) {
    out.ending = TrainEnding::kFinished;
    out.ending_words = "finished on its own; " + last;
  } else {
    out.ending = TrainEnding::kFailed;
    out.ending_words = fmt::format("ended by itself with {}; {}", p.Describe(), last);
  }
  if (out.log_incomplete) {
    out.figures.notes.push_back("writing the log file failed part-way: " + options.log_path +
                                " is incomplete (the figures read every line)");
  }
  return out;
}

Finding TrainEndingFinding(const TrainRunResult& result) {
  Finding f{.check_id = "train.ending",
            .observed = result.ending_words,
            .expected = "a run that finishes, or reaches its step budget, before its deadline"};
  switch (result.ending) {
    case TrainEnding::kFinished:
    case TrainEnding::kBudget:
      f.status = CheckStatus::kPass;
      f.message =
          result.ending == TrainEnding::kBudget ? "stopped cleanly at the step budget" : "finished";
      break;
    case TrainEnding::kDeadline:
      f.status = CheckStatus::kFail;
      f.severity = Severity::kHigh;
      f.message = "killed at its deadline: a hang, or a run too slow for its budget";
      f.remediation =
          "Read the log's last lines: a collective that never returns with no NCCL watchdog "
          "timeout points at the network (cmax nccl find-bad-node on the job's nodes); a slow "
          "but moving run needs a longer deadline or fewer steps";
      break;
    case TrainEnding::kFailed:
      f.status = CheckStatus::kFail;
      f.severity = Severity::kHigh;
      f.message = "the training command failed";
      f.remediation = "The first error and its rank are in train.failure and the log";
      break;
    case TrainEnding::kInterrupted:
      f.status = CheckStatus::kUnknown;
      f.severity = Severity::kMedium;
      f.message = "cmax was interrupted before the run ended";
      break;
  }
  return f;
}

namespace {

// What would refuse a run, checked before the job starts (not after it ran for hours) and before
// a lab is made for it: the reference it is held against, or none. Names the default log file
// when none is named.
Result<const TrainReference*> CheckBeforeTheJob(TrainRunOptions& options,
                                                const TrainLogIo& store_io) {
  if (options.log_path.empty()) {
    options.log_path = DefaultTrainLogPath(store_io.db_path, store_io.clock->Now());
  }
  if (options.reference.empty()) return nullptr;
  return FindReference(options.reference);
}

}  // namespace

Result<TrainRunReport> RunAndRecordTraining(TrainRunOptions options, const TrainRunIo& io,
                                            const TrainLogIo& store_io) {
  auto reference = CheckBeforeTheJob(options, store_io);
  if (!reference) return tl::unexpected(reference.error());
  const WallTime started = store_io.clock->Now();
  auto ran = RunTraining(options, io);
  if (!ran) return tl::unexpected(ran.error());
  TrainRunReport report{.run = std::move(*ran), .log_path = options.log_path};
  std::vector<TrainLogFile> files;
  files.push_back({.name = options.log_path, .log = report.run.log, .figures = report.run.figures});
  const nlohmann::json command = ArgvThatRuns(options);  // what ran
  TrainRunExtras extras{
      .target = "training command",
      .findings = {TrainEndingFinding(report.run)},
      .evidence = {{"train.command",
                    command.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)},
                   {"train.ending", nlohmann::json(TrainEndingName(report.run.ending)).dump()},
                   {"train.log_path",
                    nlohmann::json(options.log_path)
                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)}},
      .started_at = started,
      .reference = *reference,
      .exit_zero = options.exit_zero};
  auto recorded = RecordTrainLogs(std::move(files), store_io, extras);
  if (!recorded) return tl::unexpected(recorded.error());
  report.recorded = std::move(*recorded);
  return report;
}

Result<TrainRunReport> RunAndRecordTrainingOverNetnsLab(TrainRunOptions options,
                                                        const net::NetnsLabRequest& lab,
                                                        const TrainRunIo& io,
                                                        const TrainLogIo& store_io) {
  if (options.command.empty()) return Fail(ErrorCode::kInvalidArgument, "no training command");
  if (auto checked = CheckBeforeTheJob(options, store_io); !checked) {
    return tl::unexpected(checked.error());
  }
  const std::vector<std::string> rank_command = ArgvThatRuns(options);
  // The ranks get options.env by name (-x NAME: mpirun passes on its own value, which the runner
  // sets): a value in mpirun's argv would be in `ps` and in the recorded command.
  const std::vector<std::string> env_names = net::EnvNames(options.env);
  std::optional<Result<TrainRunReport>> report;
  auto ran = net::WithNetnsLab(
      lab, *io.fs, *io.runner, io.progress, [&](const net::NetnsLabReach& reach) -> Result<void> {
        std::vector<std::string> addresses;
        for (const net::NetnsHost& host : reach.hosts) {
          addresses.push_back(host.address);
        }
        options.command =
            net::MpirunPrefix("mpirun", addresses, 1, reach.agent, reach.subnet, env_names);
        options.command.insert(options.command.end(), rank_command.begin(), rank_command.end());
        options.use_shell = false;
        // mpirun refuses root unless told; the lab needs root.
        options.env.insert(options.env.end(), net::kMpirunAsRootEnv.begin(),
                           net::kMpirunAsRootEnv.end());
        options.crash_retries = net::kLauncherCrashRetries;
        report = RunAndRecordTraining(options, io, store_io);
        return {};
      });
  if (!ran) return tl::unexpected(ran.error());
  return std::move(*report);
}

}  // namespace cmax::train
