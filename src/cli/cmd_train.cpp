// `cmax train`: training runs turned into figures and a diagnosis.
//   run   a training command run with a step budget and a deadline, its log kept and read as
//         it comes; then as `log`
//   log   TorchTitan logs a user already has: tokens/s per GPU and MFU in steady state (the
//         warm-up steps named), the loss trend, peak memory, step-time jitter, and the first
//         error with the rank it came from; recorded as a run
//   trace PyTorch profiler traces, one per rank: compute, communication, exposed
//         communication and idle time, collectives' bandwidth, stragglers, a per-step
//         timeline and what limits the job; recorded as a run
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "core/strings.hpp"
#include "sys/file_system.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"
#include "train/trace_run.hpp"
#include "train/train_log_run.hpp"
#include "train/train_runner.hpp"

namespace cmax::cli {
namespace {

struct TrainFlags {
  CLI::App* log = nullptr;
  CLI::App* run = nullptr;
  CLI::App* trace = nullptr;
  CLI::App* references = nullptr;
  std::vector<std::string> reference_filter;
  train::TrainLogOptions options;
  train::TraceRunOptions trace_options;
  train::TrainRunOptions run_options;
  net::NetnsLabRequest lab;
  int64_t step_budget = 0;  // 0: none
  double deadline_s = 7200;
  double stop_grace_s = 30;
  int64_t warmup_steps = -1;  // -1: found from the curve
  bool json = false;
};

int Log(const TrainFlags& o, Context& ctx) {
  sys::LocalFileSystem fs;
  SystemClock clock;
  train::TrainLogIo io{.db_path = ctx.DbPath(),
                       .cmax_version = VersionString(),
                       .fs = &fs,
                       .clock = &clock,
                       .interrupted = sys::Interrupted};
  io.stdin_text = StdinIfNamed(o.options.files);
  train::TrainLogOptions options = o.options;
  if (o.warmup_steps >= 0) options.figures.warmup_steps = o.warmup_steps;
  auto report = train::AnalyzeTrainLogFiles(options, io);
  if (!report) return PrintError(ctx, "cmax train log", report.error());
  return PrintRecorded(
      ctx, "cmax train log",
      o.json ? JsonText(train::TrainLogReportJson(*report)) : train::TrainLogReportText(*report),
      report->record.run.id, report->exit_code);
}

int References(const TrainFlags& o, Context& ctx) {
  const train::TrainReferences& all = train::TrainReferences::Builtin();
  const std::string filter = Join(o.reference_filter, " ");
  if (o.json) return PrintText(ctx, "cmax train references", JsonText(all.Json(filter)));
  const std::string text = all.Text(filter);
  if (text.empty()) {
    ctx.err << "cmax train references: none holds \"" << filter << "\"\n";
    return kExitUsage;
  }
  ctx.out << text;
  return kExitOk;
}

int Trace(const TrainFlags& o, Context& ctx) {
  SystemClock clock;
  train::TrainLogIo io{.db_path = ctx.DbPath(),
                       .cmax_version = VersionString(),
                       .clock = &clock,
                       .interrupted = sys::Interrupted};
  auto report = train::AnalyzeTraceFiles(o.trace_options, io);
  if (!report) return PrintError(ctx, "cmax train trace", report.error());
  return PrintRecorded(
      ctx, "cmax train trace",
      o.json ? JsonText(train::TraceRunReportJson(*report)) : train::TraceRunReportText(*report),
      report->record.run.id, report->exit_code);
}

int Run(const TrainFlags& o, Context& ctx) {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  train::TrainRunOptions options = o.run_options;
  if (o.step_budget > 0) options.step_budget = o.step_budget;
  if (o.warmup_steps >= 0) options.figures.warmup_steps = o.warmup_steps;
  options.deadline = SecondsAsDuration(o.deadline_s);
  options.stop_grace = SecondsAsDuration(o.stop_grace_s);
  const train::TrainRunIo io{
      .runner = &runner, .fs = &fs, .progress = [&ctx](std::string_view line) {
        if (!ctx.global.quiet) ctx.err << "cmax train run: " << line << std::endl;
      }};
  const train::TrainLogIo store_io{
      .db_path = ctx.DbPath(), .cmax_version = VersionString(), .fs = &fs, .clock = &clock};
  auto report = o.lab.hosts > 0
                    ? train::RunAndRecordTrainingOverNetnsLab(options, o.lab, io, store_io)
                    : train::RunAndRecordTraining(options, io, store_io);
  if (!report) return PrintError(ctx, "cmax train run", report.error());
  return PrintRecorded(
      ctx, "cmax train run",
      o.json ? JsonText(train::TrainLogReportJson(report->recorded))
             : report->run.ending_words + "\n" + train::TrainLogReportText(report->recorded),
      report->recorded.record.run.id,
      ExitCodeUnlessInterrupted(report->run.ending == train::TrainEnding::kInterrupted,
                                report->recorded.exit_code),
      "log in " + report->log_path);
}

}  // namespace

Command SetupTrainCommand(CLI::App& parent) {
  auto o = std::make_shared<TrainFlags>();
  CLI::App* app = parent.add_subcommand(
      "train",
      "Training runs turned into figures and a diagnosis (TorchTitan's logs, profiler traces)");
  app->require_subcommand(1);
  o->log = app->add_subcommand(
      "log",
      "Read TorchTitan logs you already have (run_train.sh's, torchrun's or srun's, any release:\n"
      "wps or tps, with or without grad_norm and tflops, mfu N/A under FP8, colours and rank\n"
      "prefixes) and give tokens/s per GPU, TFLOPS and MFU in steady state (the median of the\n"
      "steps after warm-up; the warm-up steps are named), the loss trend (decreasing, flat,\n"
      "diverged, nan), peak memory, step-time jitter, and the first error with the rank it came\n"
      "from (a Python exception, NCCL's watchdog timeout, torchrun's root cause). Recorded as a\n"
      "run (cmax report). Exit 0 steady, 1 a failure, NaN or diverged loss, or no step past\n"
      "warm-up, 3 no metric line at all");
  Opt(o->log, "FILE", o->options.files, "TorchTitan log files ('-': standard input)")->required();
  Num(o->log, "--warmup", o->warmup_steps, Whole(0, int64_t{1} << 40),
      "Count the logged steps up to this one as warm-up (default: the first logged step, and "
      "the leading ones more than 10% below the steady throughput)");
  Opt(o->log, "--reference", o->options.reference,
      "Hold each log's steady tokens/s per GPU against this published figure (an id from `cmax "
      "train references`): its share, PASS at 90% or more, WARN from 70%, FAIL below");
  Flag(o->log, "--json", o->json, "Print the figures as JSON (schema cmax.train-logs/v1)");
  Flag(o->log, "--exit-zero", o->options.exit_zero, "Exit 0 even when the run failed");
  o->run = app->add_subcommand(
      "run",
      "Run a training command (TorchTitan's run_train.sh or torchrun; under srun, write srun\n"
      "first) with the environment given, keep its output in a log file as it comes, and read\n"
      "it line by line: progress per logged step, a clean stop (SIGTERM, then SIGKILL after\n"
      "--stop-grace) once --steps is logged, a kill at --deadline (a hang: the last step seen\n"
      "is said). Then its figures as `cmax train log` gives them, recorded as a run with how it\n"
      "ended. Exit 0 finished or stopped at the budget with a steady run, 1 a failure, a\n"
      "deadline, a NaN or diverged loss, or no step past warm-up, 2 usage, 3 no metric line");
  train::TrainRunOptions& r = o->run_options;
  Opt(o->run, "COMMAND", r.command,
      "The training command and its arguments (after --); they are recorded in the run: give "
      "secrets with --env instead")
      ->required();
  Num(o->run, "--steps", o->step_budget, Whole(0, int64_t{1} << 40),
      "Stop cleanly once a metric line of this step (or later) is logged; 0: let it end itself");
  Num(o->run, "--deadline", o->deadline_s, Positive(31622400),
      "Seconds the run may take in all; it is killed then and reported as such");
  Num(o->run, "--stop-grace", o->stop_grace_s, Positive(3600),
      "Seconds between SIGTERM and SIGKILL when stopping it (torchrun passes SIGTERM on to "
      "its ranks)");
  Repeated(o->run, "--env", r.env, "NAME=VALUE added to the command's environment (repeatable)")
      ->check(EnvSetting());
  Opt(o->run, "--cwd", r.cwd, "Folder to run the command in");
  Opt(o->run, "--log", r.log_path,
      "The log file (appended to); default: train-<time>.log beside the store");
  Flag(o->run, "--shell", r.use_shell, "Run COMMAND's words joined, through /bin/sh -c");
  CLI::Option* lab = Num(o->run, "--netns-lab", o->lab.hosts, Whole(2, 200),
                         "Run COMMAND as one rank on each of this many hosts made on this machine "
                         "as network namespaces (root; as `cmax nccl sweep --netns-lab`), "
                         "started by mpirun: cmax-train-sim over a fabric you can slow");
  Repeated(o->run, "--slow-link", o->lab.slow_links,
           "HOST:RATE: slow that lab host's link to RATE with tc's token bucket (h3:200mbit) "
           "(repeatable)")
      ->needs(lab);
  Num(o->run, "--warmup", o->warmup_steps, Whole(0, int64_t{1} << 40),
      "As for `log`: the logged steps up to this one are warm-up");
  Opt(o->run, "--reference", r.reference,
      "As for `log`: a published figure to hold the run against (checked before it starts)");
  Flag(o->run, "--json", o->json, "Print the figures as JSON (schema cmax.train-logs/v1)");
  Flag(o->run, "--exit-zero", r.exit_zero, "Exit 0 even when the run failed");
  o->trace = app->add_subcommand(
      "trace",
      "Read PyTorch profiler (Kineto) traces, one per rank (TorchTitan's\n"
      "profiling/traces/iteration_N/rankR_trace.json.gz; plain or gzip, of any size: read as a\n"
      "stream, a worker per core), and give per rank the GPU's compute, communication, exposed\n"
      "communication (not overlapped by compute, as Holistic Trace Analysis defines it) and idle\n"
      "time; per collective its calls, bytes and bus bandwidth from the trace's own arguments;\n"
      "the straggler ranks (the rank the others wait for, found from kernel durations, not\n"
      "clocks); a per-step timeline; and what limits the job, in words. A trace cut short is\n"
      "used up to where it stops, and said so. Recorded as a run (cmax report). Exit 0\n"
      "compute-bound, 1 something limits the job or one of the files is not a trace (the\n"
      "others are used), 2 usage or no file is a trace");
  Opt(o->trace, "FILE", o->trace_options.files, "Trace files, one per rank (.json or .json.gz)")
      ->required();
  Num(o->trace, "--jobs", o->trace_options.jobs, Whole(0, 1024),
      "Traces read at once (0: one per core)");
  Num(o->trace, "--exposed-limit", o->trace_options.report.exposed_limit_pct, Positive(100),
      "Exposed communication above this % of the span limits the job");
  Num(o->trace, "--idle-limit", o->trace_options.report.idle_limit_pct, Positive(100),
      "Idle GPU time above this % of the span limits the job");
  Flag(o->trace, "--include-last-step", o->trace_options.report.rank.include_last_step,
       "Keep the trace's last profiler step (left out by default, as HTA leaves it: the "
       "profiler stops inside it)");
  Flag(o->trace, "--json", o->json, "Print the figures as JSON (schema cmax.train-trace/v1)");
  Flag(o->trace, "--exit-zero", o->trace_options.exit_zero,
       "Exit 0 even when something limits the job (not when no file is a trace)");
  o->references = app->add_subcommand(
      "references",
      "List the published training throughput cmax holds runs against (TorchTitan's own\n"
      "benchmarks and its users': tokens/s per GPU per model, platform, GPU count and\n"
      "parallelism, each with the file it is copied from). WORDs filter the ids");
  Opt(o->references, "WORD", o->reference_filter, "Words every listed id holds (llama3_8b h100)");
  Flag(o->references, "--json", o->json, "Print them as JSON");
  return {app, [o](Context& ctx) {
            if (o->references->parsed()) return References(*o, ctx);
            if (o->trace->parsed()) return Trace(*o, ctx);
            return o->run->parsed() ? Run(*o, ctx) : Log(*o, ctx);
          }};
}

}  // namespace cmax::cli
