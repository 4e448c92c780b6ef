// `cmax reliability run --scenario FILE`: injects each step's fault where the provider's health
// checks read it, watches the scheduler until the pass bars are met or missed, and records one
// run with a finding per step (PASS, FAIL, or WARN for UNKNOWN) and the timeline as metrics.
// It measures any provider's system: it only writes the fault and reads the scheduler.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "cli/remediate_flags.hpp"
#include "reliability/scenario_run.hpp"
#include "report/render.hpp"
#include "store/run_writer.hpp"
#include "sys/file_system.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct ReportFlags {
  std::string run_id = "latest";
  std::string output;
};

// What a reliability command takes from this process; `name` prefixes what goes to stderr.
struct Shell {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  reliability::ReliabilityIo Io(Context& ctx, const std::string& name, bool prefix_out) {
    reliability::ReliabilityIo io;
    io.db_path = ctx.DbPath();
    io.cmax_version = VersionString();
    io.fs = &fs;
    io.runner = &runner;
    io.clock = &clock;
    io.stop = sys::Interrupted;
    io.interrupt_signal = sys::InterruptSignal;
    io.out = [&ctx, name, prefix_out](std::string_view line) {
      ctx.out << (prefix_out ? name + ": " : std::string()) << line << std::endl;
    };
    io.refused = [&ctx, name](std::string_view line) { ctx.err << name << ": " << line << "\n"; };
    return io;
  }
};

// The HTML report of a reliability run, with its timeline chart.
int Report(const ReportFlags& o, Context& ctx) {
  const char* const name = "cmax reliability report";
  auto record = store::LoadStoredRun(ctx.DbPath(), o.run_id, "reliability");
  if (!record) return PrintError(ctx, name, record.error());
  return WriteOrPrint(ctx, name, o.output, report::RenderHtml(*record));
}

}  // namespace

Command SetupReliabilityCommand(CLI::App& parent) {
  auto o = std::make_shared<reliability::ScenarioRunOptions>();
  auto report = std::make_shared<ReportFlags>();
  auto reboot = std::make_shared<reliability::RebootOptions>();
  CLI::App* app = parent.add_subcommand(
      "reliability",
      "Inject GPU faults and time the provider's response: detection, drain, replacement,\n"
      "return to service, judged against pass bars that depend on the architecture.");
  app->require_subcommand(1);
  CLI::App* run =
      app->add_subcommand("run", "Run a scenario: inject each step, watch, judge, record");
  Opt(run, "--scenario", o->scenario_path, "Scenario file (YAML or JSON)")->required();
  Flag(run, "--dry-run", o->dry_run, "Print each step's record and the bars; inject nothing");
  Flag(run, "--yes", o->yes, "Inject into nodes that are not a lab's");
  Flag(run, "--allow-destructive", o->allow_destructive, "Allow pcie-sbr steps (a real bus reset)");
  Flag(run, "--force", o->force, "pcie-sbr steps even on nodes with jobs");
  Opt(run, "--kmsg", o->kmsg, "Where records are written");
  Opt(run, "--prometheus", o->prometheus,
      "Prometheus URL for an alert signal (with --alert-query)");
  Opt(run, "--alert-query", o->alert_query,
      "Instant query whose series name alerting nodes (label node, else instance)");
  Opt(run, "--alert-webhook", o->alert_webhook,
      "HOST:PORT to receive Alertmanager-style alert webhooks on (port 0: any)");
  Choice(run, "--scheduler", o->scheduler.scheduler, {"slurm", "kubernetes"}, "The scheduler");
  AddKubeFlags(*run, o->scheduler.kube);
  CLI::App* report_app =
      app->add_subcommand("report", "The HTML report of a run, with its timeline chart");
  Opt(report_app, "RUN", report->run_id, "Run id, or 'latest' (default)");
  Opt(report_app, "-o,--output", report->output, "Write to this file instead of stdout");
  CLI::App* b = app->add_subcommand(
      "reboot", "Reboot a node through its scheduler and time its return until a GPU query works");
  Opt(b, "NODE", reboot->node, "The node")->required();
  Flag(b, "--allow-destructive", reboot->allow_destructive, "Required: it reboots the node");
  Flag(b, "--force", reboot->force, "Even when the node runs jobs");
  Flag(b, "--yes", reboot->yes, "A node that is not a lab's");
  Opt(b, "--gpu-check", reboot->gpu_check,
      "Shell command that succeeds once the node's GPUs answer ({node} replaced, quoted)");
  Num(b, "--timeout", reboot->timeout_s, SecondsIn(86400),
      "Seconds to wait for the node and its GPUs; stopped or timed out before the node is back "
      "in service, it is left out of service with cmax's reason, and the undo is printed");
  Num(b, "--poll", reboot->poll_s, Real(0.1, 3600), "Seconds between looks");
  Choice(b, "--scheduler", reboot->scheduler, {"slurm", "kubernetes"}, "The scheduler");
  return {app, [=](Context& ctx) {
            if (report_app->parsed()) return Report(*report, ctx);
            Shell shell;
            if (b->parsed()) {
              const std::string name = "cmax reliability reboot";
              return PrintReport(ctx, name,
                                 reliability::RebootAndTime(*reboot, shell.Io(ctx, name, true)));
            }
            const std::string name = "cmax reliability run";
            return PrintReport(ctx, name,
                               reliability::RunScenarioFile(*o, shell.Io(ctx, name, false)));
          }};
}

}  // namespace cmax::cli
