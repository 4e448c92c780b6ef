// `cmax run`: the main job. Detects what this host is, runs every capability available for
// it, records one run in the store, prints the terminal report and writes the HTML one.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <ostream>

#include "audit/host_inventory.hpp"
#include "audit/inventory_checks.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/numbers.hpp"
#include "core/log.hpp"
#include "report/render.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
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
  double probe_timeout_s = 2.0;
};

std::string DefaultHtmlPath(const Context& ctx, int64_t run_id) {
  const std::string db = ctx.DbPath();
  const size_t slash = db.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : db.substr(0, slash);
  return fmt::format("{}/reports/run-{}.html", dir, run_id);
}

int Run(const RunOptions& options, Context& ctx) {
  SystemClock clock;
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  // CLI11's range check lets NaN through, and NaN cannot become a duration.
  if (!std::isfinite(options.probe_timeout_s)) {
    ctx.err << "cmax run: --probe-timeout must be a number of seconds\n";
    return kExitUsage;
  }
  const auto probe_timeout =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(options.probe_timeout_s));

  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) {
    ctx.err << "cmax run: " << store.error().message << "\n";
    return kExitError;
  }

  // The host facts come from files only and are quick; the run opens as soon as it knows
  // the environment, so that anything slower (scheduler probes) is inside a recorded run.
  log::Info("collecting the host inventory");
  const audit::HostFacts host = audit::CollectHost(fs, sys::Hostname());
  audit::Target target = audit::DetectEnvironment(host);
  auto writer = store::RunWriter::Begin(*store, {.command = "run",
                                                 .target = target.Name(),
                                                 .host = host.hostname,
                                                 .started_at = clock.Now(),
                                                 .cmax_version = VersionString(),
                                                 .pid = ::getpid()});
  if (!writer) {
    ctx.err << "cmax run: " << writer.error().message << "\n";
    return kExitError;
  }
  const int64_t run_id = writer->RunId();
  auto fail = [&](const Error& error) {
    ctx.err << "cmax run: " << error.message << "\n";
    (void)writer->FinishWithError(kExitError, clock.Now());
    return kExitError;
  };

  if (auto ok = writer->Add(audit::HostEvidence(host), audit::HostFindings(host, target)); !ok) {
    return fail(ok.error());
  }
  if (!sys::Interrupted()) {
    log::Info("looking for NVIDIA GPUs and driver");
    const audit::GpuFacts gpu = audit::CollectGpu(fs, host);
    if (auto ok = writer->Add(audit::GpuEvidence(gpu), audit::GpuFindings(gpu)); !ok) {
      return fail(ok.error());
    }
  }
  if (!sys::Interrupted()) {
    log::Info("looking for a scheduler (Slurm, Kubernetes)");
    const audit::SchedulerFacts scheduler =
        audit::CollectScheduler(fs, runner, audit::CurrentEnvironment(), probe_timeout);
    target.scheduler = audit::DetectScheduler(scheduler);
    if (auto ok = writer->SetTarget(target.Name()); !ok) return fail(ok.error());
    // A probe cut short by Ctrl-C proves nothing: record the scheduler only when it finished.
    if (!sys::Interrupted()) {
      if (auto ok = writer->Add(audit::SchedulerEvidence(scheduler, target),
                                audit::SchedulerFindings(scheduler));
          !ok) {
        return fail(ok.error());
      }
    }
  }

  const int signal = sys::InterruptSignal();
  auto outcome = writer->Finish(signal, clock.Now());
  if (!outcome) return fail(outcome.error());
  if (signal != 0)
    ctx.err << fmt::format("cmax run: interrupted; run {} kept what it had\n", run_id);

  auto record = store->LoadRun(run_id);
  if (!record) return fail(record.error());
  if (options.json) {
    ctx.out << report::RenderJson(*record);
  } else {
    ctx.out << report::RenderText(*record, {.color = ctx.Color()});
  }
  if (!options.no_html) {
    const std::string path = options.html.empty() ? DefaultHtmlPath(ctx, run_id) : options.html;
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) (void)fs.CreateDirs(path.substr(0, slash), 0700);
    if (auto ok = WriteOutput(ctx, path, report::RenderHtml(*record), 0600); !ok) {
      ctx.err << "cmax run: " << ok.error().message << "\n";
      return ExitCodeOf(ok.error());
    }
    if (options.json) {
      log::Info("HTML report: {}", path);
    } else {
      ctx.out << "HTML report: " << path << "\n";
    }
  }
  return outcome->exit_code;
}

}  // namespace

Command SetupRunCommand(CLI::App& parent) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* app = parent.add_subcommand(
      "run",
      "Evaluate this machine: detect the target (bare metal, VM or container; standalone, Slurm\n"
      "client or Kubernetes), inventory OS, kernel, CPU, memory, NUMA, PCI, NVIDIA GPUs and\n"
      "driver, and the scheduler; store one run and report it. Checks that cannot run here\n"
      "(no GPU, no scheduler) are SKIP findings that say why.");
  app->add_flag("--json", options->json, "Print the JSON report (schema cmax.report/v1) on stdout");
  app->add_option("--html", options->html,
                  "Write the HTML report here (default: beside the store)");
  app->add_flag("--no-html", options->no_html, "Do not write the HTML report");
  app->add_option("--probe-timeout", options->probe_timeout_s,
                  "Seconds a scheduler probe (sinfo, scontrol ping) may take")
      ->check(Real(0.1, 600.0));
  return {app, [options](Context& ctx) { return Run(*options, ctx); }};
}

}  // namespace cmax::cli
