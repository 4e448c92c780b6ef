// `cmax remediate`: the remediation controller and what it remembers. `run` turns the agents'
// conditions into drains, requeues, resets, validations and resumes through Slurm; `status`,
// `history` read the store; `repaired`, `retire` and `reset-breaker` are a person's say.

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "cli/remediate_flags.hpp"
#include "core/strings.hpp"
#include "remediate/settings.hpp"
#include "remediate/views.hpp"
#include "store/store.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace cmax::cli {
namespace {

struct RunFlags {
  ControllerFlags controller;
  remediate::ControllerLoop loop;
};
struct NodeFlags {  // status, history, repaired, retire
  std::string node;
  int limit = 50;
  bool json = false;
  double probation_min = remediate::ControllerSettings{}.probation_min;
};

int RunController(const RunFlags& o, Context& ctx) {
  const std::string name = "cmax remediate run";
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  auto report = remediate::RunControllerLoop(
      o.controller, o.loop,
      {.db_path = ctx.DbPath(),
       .fs = &fs,
       .runner = &runner,
       .clock = &clock,
       .stop = sys::Interrupted,
       .error = [&](std::string_view why) { ctx.err << name << ": " << why << "\n"; },
       .decided = [&](std::string_view line) { ctx.out << AsOneLine(line) << std::endl; }});
  if (!report) return PrintError(ctx, name, report.error());
  if (report->stopped) return ExitCodeUnlessInterrupted(true, kExitOk);
  ctx.out << remediate::PassView(report->last);
  return remediate::PassWentWrong(report->last) ? kExitChecksFailed : kExitOk;
}

// A person's word about a node: the library records it through the controller's policy.
int OperatorEvent(const NodeFlags& o, Context& ctx, store::Store& store,
                  remediate::EventKind kind) {
  std::string who = sys::GetEnv("SUDO_USER");
  if (who.empty()) who = sys::GetEnv("USER");
  auto outcome = remediate::RecordOperatorWord(store, {o.node, kind, who}, SystemClock().Now());
  if (!outcome) return PrintError(ctx, "cmax remediate", outcome.error());
  if (!outcome->changed) {
    ctx.err << "cmax remediate: " << remediate::OperatorOutcomeView(o.node, *outcome);
    return kExitUsage;
  }
  ctx.out << remediate::OperatorOutcomeView(o.node, *outcome);
  return kExitOk;
}

}  // namespace

Command SetupRemediateCommand(CLI::App& parent) {
  auto run = std::make_shared<RunFlags>();
  auto node = std::make_shared<NodeFlags>();
  CLI::App* app = parent.add_subcommand(
      "remediate",
      "Quarantine, validate, reintroduce and reschedule: the remediation controller on Slurm or "
      "Kubernetes");
  app->require_subcommand(1);

  CLI::App* r = app->add_subcommand(
      "run",
      "Run the controller: conditions from the agents become drains, requeues, resets, "
      "validations and resumes. Needs --act (or --dry-run)");
  Flag(r, "--act", run->controller.act,
       "Carry actions out: drains, requeues (on Kubernetes, evictions: a bare pod is lost), GPU "
       "resets (--reset-command), reboots (scontrol reboot), validations, resumes and spares");
  Flag(r, "--dry-run", run->controller.dry_run,
       "Decide and print what would be done; touch nothing, neither the nodes nor the store's "
       "journal");
  Flag(r, "--once", run->loop.once,
       "One pass, then exit (exit 1 when an action failed or was refused)");
  Num(r, "--interval", run->loop.interval_s, Real(0.01, 86400), "Seconds between passes");
  Choice(r, "--conditions-from", run->loop.conditions_from, {"store", "kubernetes"},
         "Where node conditions come from: store (agents writing to this store) or "
         "kubernetes (what `cmax agent --publish-conditions` writes on each Node)");
  Repeated(r, "--node", run->controller.nodes,
           "Act only on these nodes (repeatable); default: all");
  AddControllerFlags(*r, run->controller);

  CLI::App* status =
      app->add_subcommand("status", "Every node's state, reason, since when, next step");
  Flag(status, "--json", node->json, "Machine-readable (schema cmax.remediation/v1)");
  CLI::App* history =
      app->add_subcommand("history", "One node's timeline: transitions and actions");
  Opt(history, "NODE", node->node, "The node")->required();
  Num(history, "-n,--limit", node->limit, Whole(1, 100000), "Newest entries of each kind");
  Flag(history, "--json", node->json, "Machine-readable (schema cmax.remediation-history/v1)");
  CLI::App* repaired = app->add_subcommand(
      "repaired",
      "A person says the node is fixed: recorded for the controller (`remediate run` or an "
      "agent with --remediate), which validates it, then brings it back, under its policy; "
      "nothing happens until one runs");
  Opt(repaired, "NODE", node->node, "The node")->required();
  CLI::App* retire = app->add_subcommand(
      "retire", "Take a node out for good: recorded for the controller, which carries it out");
  Opt(retire, "NODE", node->node, "The node")->required();
  app->add_subcommand("reset-breaker", "Let a tripped controller act again");
  return {app, [=](Context& ctx) {
            if (r->parsed()) return RunController(*run, ctx);
            auto store = store::Store::Open({.path = ctx.DbPath(), .create = false});
            if (!store) return PrintError(ctx, "cmax remediate", store.error());
            remediate::Journal journal(store->Db());
            if (status->parsed()) {
              return PrintText(
                  ctx, "cmax remediate status",
                  remediate::StatusView(journal, store->Path(), node->probation_min, node->json));
            }
            if (history->parsed()) {
              return PrintText(
                  ctx, "cmax remediate history",
                  remediate::HistoryView(journal, node->node, node->limit, node->json));
            }
            if (repaired->parsed())
              return OperatorEvent(*node, ctx, *store, remediate::EventKind::kRepaired);
            if (retire->parsed())
              return OperatorEvent(*node, ctx, *store, remediate::EventKind::kRetire);
            if (auto ok = journal.SetBreaker({}); !ok) {
              return PrintError(ctx, "cmax remediate reset-breaker", ok.error());
            }
            ctx.out << "circuit breaker reset; the controller acts again at its next step\n";
            return kExitOk;
          }};
}

}  // namespace cmax::cli
