// `cmax run`: the main job. Detects what this host is, runs every capability available for
// it, records one run in the store, prints the terminal report and writes the HTML one.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <ostream>

#include "active/cuda_probes.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "core/log.hpp"
#include "evaluate/evaluation.hpp"
#include "evaluate/lab_evaluation.hpp"
#include "net/nccl_sweep.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct RunOptions {
  bool json = false;
  std::string html;  // empty: <data dir>/reports/run-<id>.html
  bool no_html = false;
  bool lab = false;
  evaluate::LabEvaluationOptions lab_options;  // its evaluation options are `evaluation`
  evaluate::EvaluationOptions evaluation;
};

int Run(const RunOptions& options, Context& ctx) {
  SystemClock clock;
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  sys::RaiseOpenFileLimit();  // a plan's endpoint phases hold a socket per stream
  const evaluate::EvaluationIo io{
      .host = {.db_path = ctx.DbPath(),
               .cmax_version = VersionString(),
               .fs = &fs,
               .runner = &runner,
               .clock = &clock,
               .interrupted = sys::Interrupted,
               .interrupt_signal = sys::InterruptSignal,
               .path = sys::GetEnv("PATH"),
               .env = sys::EnvironmentValue},
      .progress =
          [&ctx](std::string_view line) {
            if (!ctx.global.quiet) ctx.err << "cmax run: " << line << std::endl;
          },
      // The CPU stand-in for a plan's network sweep without nccl-tests, built beside cmax.
      .cpu_perf = net::CpuStandInBeside(sys::SelfExecutable()),
      .probe_program = active::ProbeProgramBeside(sys::SelfExecutable())};
  Result<evaluate::Evaluation> report = [&] {
    if (!options.lab) return evaluate::Evaluate(options.evaluation, io);
    evaluate::LabEvaluationOptions lab = options.lab_options;
    lab.evaluation = options.evaluation;
    return evaluate::EvaluateLab(lab, {.evaluation = io, .cmax_binary = sys::SelfExecutable()});
  }();
  if (!report) return PrintError(ctx, "cmax run", report.error());
  const RunRecord& record = report->record;
  if (report->interrupted) {
    ctx.err << fmt::format("cmax run: interrupted; run {} kept what it had\n", record.run.id);
  }
  PrintRunRecord(ctx, record, options.json, DetailedText(ctx));
  if (!options.no_html) {
    const std::string path = options.html.empty()
                                 ? evaluate::DefaultHtmlReportPath(ctx.DbPath(), record.run.id)
                                 : options.html;
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) (void)fs.CreateDirs(path.substr(0, slash), 0700);
    if (auto ok = WriteOutput(ctx, path, report::RenderHtml(record), 0600); !ok) {
      return PrintError(ctx, "cmax run", ok.error());
    }
    if (options.json) {
      log::Info("HTML report: {}", path);
    } else {
      ctx.out << "HTML report: " << path << "\n";
    }
  }
  if (const auto& rating = report->rating; rating && !options.json) {
    ctx.out << rate::RatingLine(*rating, record.run.id);
  }
  return report->exit_code;
}

}  // namespace

Command SetupRunCommand(CLI::App& parent) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* app = parent.add_subcommand(
      "run",
      "Evaluate a provider, as one run: detect this machine's target (bare metal, VM or\n"
      "container; standalone, Slurm client or Kubernetes), inventory it and audit it (every\n"
      "check of `cmax audit --local`), check its health from the kernel log, then run what the\n"
      "plan (--plan) names: this host's active checks, each endpoint's load, each reliability\n"
      "scenario, network and training entry; the fleet's newest `cmax health schedule` run is\n"
      "folded in. Each phase that cannot run is UNTESTED with the reason; checks that cannot\n"
      "run here (no GPU, no scheduler) are SKIP findings that say why. Store the run, report\n"
      "it and rate it (`cmax rate`). With --lab: a simulated provider (the lab's Slurm, cmax's "
      "agents as its\n"
      "health checks, serve-sim as its endpoint, a GPU fault injected and timed), end to end.");
  Flag(app, "--json", options->json, "Print the JSON report (schema cmax.report/v1) on stdout");
  Opt(app, "--html", options->html, "Write the HTML report here (default: beside the store)");
  Flag(app, "--no-html", options->no_html, "Do not write the HTML report");
  Num(app, "--probe-timeout", options->evaluation.probe_timeout_s, Real(0.1, 600.0),
      "Seconds a probe may take (sinfo, scontrol ping; the audit's nvcc, runc, docker ...)");
  CLI::Option* lab = Flag(
      app, "--lab", options->lab,
      "Evaluate a simulated provider on this machine (needs root and Slurm's programs): the lab "
      "up, the provider's agents and endpoint, every phase, a GPU fault timed, the lab down");
  Opt(app, "--provider-profile", options->lab_options.profile,
      "With --lab: how the simulated provider behaves: good, slow or negligent (default good)")
      ->needs(lab);
  Opt(app, "--lab-dir", options->lab_options.dir,
      "With --lab: its folder (default: lab-run beside the store); the plan, logs and state. "
      "Each evaluation first removes what the last one wrote there, its stores too: a folder "
      "that is not new, empty or an earlier evaluation's is refused")
      ->needs(lab);
  Num(app, "--lab-port", options->lab_options.port_base, Whole(1024, 65000),
      "With --lab: Slurm's controller port; its nodes take the next ones (default 28817)")
      ->needs(lab);
  CLI::Option* plan =
      Opt(app, "--plan", options->evaluation.plan,
          "What to evaluate (YAML, cmax.plan/v1; data/plan.example.yaml): the provider, its "
          "attestation, endpoints with their model and load, reliability scenarios");
  plan->excludes(lab);
  Flag(app, "--yes", options->evaluation.yes,
       "Let the plan's reliability scenarios inject into nodes that are not a lab's");
  Flag(app, "--force", options->evaluation.force,
       "Let the plan's reliability scenarios inject into a busy node, its active checks "
       "exercise GPUs in use, and its mpirun sweeps load hosts that run others' Slurm jobs");
  Flag(app, "--allow-destructive", options->evaluation.allow_destructive,
       "Let the plan's reliability scenarios take destructive steps (a GPU reset, a reboot)");
  CLI::Option* attestation =
      Opt(app, "--attestation", options->evaluation.attestation,
          "The provider's attestation (YAML, cmax.attestation/v1) the rating reads: security "
          "reports, SLA terms, prices, delivery dates (instead of the plan's)");
  attestation->excludes(lab);
  Opt(app, "--rubric", options->evaluation.rubric,
      "Rate with this rubric (JSON, cmax.rubric/v1) instead of the plan's or the built-in one");
  return {app, [options](Context& ctx) { return Run(*options, ctx); }};
}

}  // namespace cmax::cli
