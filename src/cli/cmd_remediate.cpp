// `cmax remediate`: the remediation controller and what it remembers. `run` turns the agents'
// conditions into drains, requeues, resets, validations and resumes through Slurm; `status`,
// `history` read the store; `repaired`, `retire` and `reset-breaker` are a person's say.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "cli/cli.hpp"
#include "cli/numbers.hpp"
#include "cli/remediate_flags.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "remediate/controller.hpp"
#include "remediate/kube_conditions.hpp"
#include "remediate/slurm.hpp"
#include "store/store.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace cmax::cli {
namespace {

using remediate::NodeState;

struct RemediateOptions {
  CLI::App* run = nullptr;
  CLI::App* status = nullptr;
  CLI::App* history = nullptr;
  CLI::App* repaired = nullptr;
  CLI::App* retire = nullptr;
  CLI::App* reset_breaker = nullptr;
  ControllerFlags controller;
  bool once = false;
  double interval_s = 2.0;
  std::string conditions_from = "store";
  // status, history, repaired, retire
  std::string node;
  int limit = 50;
  bool json = false;
};

int RunController(const RemediateOptions& o, Context& ctx) {
  if (!std::isfinite(o.interval_s) || o.interval_s <= 0) {
    ctx.err << "cmax remediate run: --interval must be a positive number of seconds\n";
    return kExitUsage;
  }
  sys::LocalFileSystem fs;
  auto config = remediate::BuildControllerConfig(o.controller, fs);
  if (!config) {
    ctx.err << "cmax remediate run: " << config.error().message << "\n";
    return kExitUsage;
  }
  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) {
    ctx.err << "cmax remediate run: " << store.error().message << "\n";
    return kExitError;
  }
  auto lock = remediate::ControllerLock::Take(ctx.DbPath());
  if (!lock) {
    ctx.err << "cmax remediate run: " << lock.error().message << "\n";
    return kExitError;
  }
  sys::PosixProcessRunner runner;
  SystemClock clock;
  auto scheduler =
      remediate::MakeScheduler(o.controller, runner, clock, remediate::KubeEnvironment());
  if (!scheduler) {
    ctx.err << "cmax remediate run: " << scheduler.error().message << "\n";
    return kExitUsage;
  }
  remediate::Controller controller(*store, *(*scheduler)->scheduler, runner, clock, *config);
  if (!o.once) {
    log::Info("remediation controller on {} through {} ({}), every {}", store->Path(),
              (*scheduler)->description, o.controller.dry_run ? "dry run" : "acting",
              FormatDuration(Seconds(o.interval_s)));
  }
  if (o.conditions_from == "kubernetes" && !(*scheduler)->kube) {
    ctx.err << "cmax remediate run: --conditions-from kubernetes needs --scheduler kubernetes\n";
    return kExitUsage;
  }
  for (;;) {
    if (o.conditions_from == "kubernetes") {
      // The agents' findings, from their Nodes; when the API server is away the step still
      // runs on what the store has (validations, timers).
      auto imported = remediate::ImportKubeConditions(*(*scheduler)->kube, *store);
      if (!imported) {
        log::Warn("conditions from Kubernetes: {}", imported.error().message);
      } else {
        log::Debug("{} condition(s) read from Kubernetes nodes", *imported);
      }
    }
    auto step = controller.Step();
    if (!step) {
      ctx.err << "cmax remediate run: " << step.error().message << "\n";
      if (o.once) return kExitError;
    } else if (o.once) {
      ctx.out << fmt::format("{} events, {} transitions, {} actions done, {} failed, {} refused\n",
                             step->events, step->transitions, step->actions_done,
                             step->actions_failed, step->refused);
      if (step->breaker_tripped) {
        ctx.out << "circuit breaker tripped: no more action until `cmax remediate "
                   "reset-breaker` (see `cmax remediate status`)\n";
        return kExitChecksFailed;
      }
      return step->actions_failed > 0 || step->refused > 0 ? kExitChecksFailed : kExitOk;
    }
    // Sleep in short slices so Ctrl-C and SIGTERM stop us promptly.
    const auto until = std::chrono::steady_clock::now() + Seconds(o.interval_s);
    while (!sys::Interrupted() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (sys::Interrupted()) return 128 + sys::InterruptSignal();
  }
}

std::string NextStep(const remediate::NodeEntry& e, double probation_min) {
  const remediate::NodeRecord& r = e.record;
  switch (r.state) {
    case NodeState::kHealthy: return "-";
    case NodeState::kSuspect: return "watching; healthy again when quiet";
    case NodeState::kQuarantined: return "waiting for " + (r.pending.empty() ? "?" : r.pending);
    case NodeState::kValidating:
      return e.handle.empty() ? "starting validation" : "validation " + e.handle;
    case NodeState::kReintroduced:
      return "probation until " +
             FormatIso8601(r.since + std::chrono::duration_cast<std::chrono::milliseconds>(
                                         Seconds(probation_min * 60)));
    case NodeState::kRepair: return "repair by hand, then `cmax remediate repaired " + e.node + "`";
    case NodeState::kRetired: return "-";
  }
  return "?";
}

int ShowStatus(const RemediateOptions& o, Context& ctx, store::Store& store) {
  remediate::Journal journal(store.Db());
  auto nodes = journal.Nodes();
  auto breaker = journal.Breaker();
  auto open = journal.OpenActions();
  auto holds = journal.RackHolds();
  if (!nodes || !breaker || !open || !holds) {
    ctx.err << "cmax remediate status: "
            << (!nodes     ? nodes.error()
                : !breaker ? breaker.error()
                : !open    ? open.error()
                           : holds.error())
                   .message
            << "\n";
    return kExitError;
  }
  if (o.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const remediate::NodeEntry& e : *nodes) {
      list.push_back({{"node", e.node},
                      {"state", remediate::NodeStateName(e.record.state)},
                      {"since", FormatIso8601(e.record.since)},
                      {"reason", e.record.reason},
                      {"pending", e.record.pending},
                      {"spare", e.spare},
                      {"next", NextStep(e, o.controller.probation_min)}});
    }
    nlohmann::ordered_json rack_holds = nlohmann::ordered_json::array();
    for (const remediate::RackHold& h : *holds) {
      rack_holds.push_back({{"node", h.node},
                            {"rack", h.rack},
                            {"state", h.state},
                            {"since", FormatIso8601(h.since)},
                            {"reason", h.reason}});
    }
    nlohmann::ordered_json out = {
        {"schema", "cmax.remediation/v1"},
        {"breaker",
         {{"tripped", breaker->tripped},
          {"since", breaker->tripped ? nlohmann::ordered_json(FormatIso8601(breaker->tripped_at))
                                     : nlohmann::ordered_json(nullptr)},
          {"reason", breaker->reason}}},
        {"open_actions", open->size()},
        {"nodes", list},
        {"rack_holds", rack_holds}};
    ctx.out << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (breaker->tripped) {
    ctx.out << "CIRCUIT BREAKER TRIPPED at " << FormatIso8601(breaker->tripped_at) << ": "
            << SanitizeUtf8(breaker->reason)
            << "\n  no action is taken until `cmax remediate reset-breaker`\n\n";
  }
  if (!holds->empty()) {
    // Grouped by rack: 15 held trays of one rack are one line for a person.
    std::map<std::string, std::vector<std::string>> by_rack;
    for (const remediate::RackHold& h : *holds) {
      by_rack[h.rack].push_back(h.node + (h.state == "held" ? "" : " (" + h.state + ")"));
    }
    for (const auto& [rack, trays] : by_rack) {
      ctx.out << "rack " << SanitizeUtf8(rack) << ": " << trays.size()
              << " tray(s) held out of service for the rack: " << SanitizeUtf8(Join(trays, ", "))
              << "\n";
    }
    ctx.out << "\n";
  }
  if (nodes->empty()) {
    ctx.out << "no node has been remediated (store " << store.Path() << ")\n";
    return kExitOk;
  }
  ctx.out << fmt::format("{:<16} {:<13} {:<24} {:<32} {}\n", "NODE", "STATE", "SINCE", "REASON",
                         "NEXT");
  for (const remediate::NodeEntry& e : *nodes) {
    std::string reason = SanitizeUtf8(e.record.reason);
    if (reason.size() > 32) reason = reason.substr(0, 29) + "...";
    std::string next = NextStep(e, o.controller.probation_min);
    if (!e.spare.empty()) next += " (spare " + e.spare + " serving)";
    ctx.out << fmt::format("{:<16} {:<13} {:<24} {:<32} {}\n", SanitizeUtf8(e.node),
                           remediate::NodeStateName(e.record.state), FormatIso8601(e.record.since),
                           reason.empty() ? "-" : reason, SanitizeUtf8(next));
  }
  if (!open->empty()) ctx.out << "\n" << open->size() << " action(s) planned and not finished\n";
  return kExitOk;
}

int ShowHistory(const RemediateOptions& o, Context& ctx, store::Store& store) {
  remediate::Journal journal(store.Db());
  auto history = journal.History(o.node, o.limit);
  auto actions = journal.Actions(o.node, o.limit);
  if (!history || !actions) {
    ctx.err << "cmax remediate history: " << (!history ? history.error() : actions.error()).message
            << "\n";
    return kExitError;
  }
  struct Line {
    WallTime at;
    int order;  // a transition before the actions it planned
    std::string text;
    nlohmann::ordered_json json;
  };
  std::vector<Line> lines;
  for (const remediate::HistoryRow& h : *history) {
    std::string what = h.from == h.to ? h.from : h.from + " -> " + h.to;
    lines.push_back({h.at,
                     0,
                     fmt::format("{}  {:<32} {}{}: {}", FormatIso8601(h.at), what, h.event,
                                 h.event_detail.empty() ? "" : " (" + h.event_detail + ")", h.note),
                     {{"at", FormatIso8601(h.at)},
                      {"kind", "transition"},
                      {"event", h.event},
                      {"detail", h.event_detail},
                      {"from", h.from},
                      {"to", h.to},
                      {"note", h.note}}});
  }
  for (const remediate::ActionRow& a : *actions) {
    const WallTime at = a.finished_at.value_or(a.started_at.value_or(a.planned_at));
    std::string took;
    if (a.started_at && a.finished_at)
      took = " in " + FormatDuration(*a.finished_at - *a.started_at);
    lines.push_back(
        {at,
         1,
         fmt::format("{}    {:<30} {}{}{}", FormatIso8601(at),
                     remediate::ActionKindName(a.action.kind), remediate::OutcomeName(a.outcome),
                     took, a.detail.empty() ? "" : ": " + a.detail),
         {{"at", FormatIso8601(at)},
          {"kind", "action"},
          {"action", remediate::ActionKindName(a.action.kind)},
          {"device", a.action.device},
          {"reason", a.action.reason},
          {"outcome", remediate::OutcomeName(a.outcome)},
          {"planned_at", FormatIso8601(a.planned_at)},
          {"started_at", a.started_at ? nlohmann::ordered_json(FormatIso8601(*a.started_at))
                                      : nlohmann::ordered_json(nullptr)},
          {"finished_at", a.finished_at ? nlohmann::ordered_json(FormatIso8601(*a.finished_at))
                                        : nlohmann::ordered_json(nullptr)},
          {"detail", a.detail},
          {"dry_run", a.dry_run}}});
  }
  std::ranges::stable_sort(lines, [](const Line& a, const Line& b) {
    return a.at != b.at ? a.at < b.at : a.order < b.order;
  });
  if (o.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Line& l : lines) list.push_back(l.json);
    nlohmann::ordered_json out = {
        {"schema", "cmax.remediation-history/v1"}, {"node", o.node}, {"timeline", list}};
    ctx.out << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (lines.empty()) {
    ctx.out << "no remediation history for " << SanitizeUtf8(o.node) << "\n";
    return kExitOk;
  }
  for (const Line& l : lines) ctx.out << SanitizeUtf8(l.text) << "\n";
  return kExitOk;
}

// A person's word about a node: the library records it through the controller's policy.
int OperatorEvent(const RemediateOptions& o, Context& ctx, store::Store& store,
                  remediate::EventKind kind) {
  std::string who = sys::GetEnv("SUDO_USER");
  if (who.empty()) who = sys::GetEnv("USER");
  auto outcome = remediate::RecordOperatorWord(store, {o.node, kind, who}, SystemClock().Now());
  if (!outcome) {
    ctx.err << "cmax remediate: " << outcome.error().message << "\n";
    return kExitError;
  }
  if (!outcome->changed) {
    ctx.err << "cmax remediate: " << SanitizeUtf8(o.node) << " is "
            << remediate::NodeStateName(outcome->from) << "; nothing to do (" << outcome->note
            << ")\n";
    return kExitUsage;
  }
  ctx.out << SanitizeUtf8(o.node) << ": " << remediate::NodeStateName(outcome->from) << " -> "
          << remediate::NodeStateName(outcome->to) << "; " << outcome->actions_planned
          << " action(s) planned for the controller"
          << (outcome->policy_of_controller ? ""
                                            : " (no controller has run on this store yet: "
                                              "judged by the default policy)")
          << "\n";
  return kExitOk;
}

int RunRemediate(const RemediateOptions& o, Context& ctx) {
  if (o.run->parsed()) return RunController(o, ctx);
  auto store = store::Store::Open({.path = ctx.DbPath(), .create = false});
  if (!store) {
    ctx.err << "cmax remediate: " << store.error().message << "\n";
    return kExitError;
  }
  if (o.status->parsed()) return ShowStatus(o, ctx, *store);
  if (o.history->parsed()) return ShowHistory(o, ctx, *store);
  if (o.repaired->parsed()) return OperatorEvent(o, ctx, *store, remediate::EventKind::kRepaired);
  if (o.retire->parsed()) return OperatorEvent(o, ctx, *store, remediate::EventKind::kRetire);
  remediate::Journal journal(store->Db());
  auto ok = journal.SetBreaker({});
  if (!ok) {
    ctx.err << "cmax remediate reset-breaker: " << ok.error().message << "\n";
    return kExitError;
  }
  ctx.out << "circuit breaker reset; the controller acts again at its next step\n";
  return kExitOk;
}

}  // namespace

Command SetupRemediateCommand(CLI::App& parent) {
  auto o = std::make_shared<RemediateOptions>();
  CLI::App* app = parent.add_subcommand(
      "remediate",
      "Quarantine, validate, reintroduce and reschedule: the remediation controller on Slurm or "
      "Kubernetes");
  app->require_subcommand(1);

  o->run = app->add_subcommand(
      "run",
      "Run the controller: conditions from the agents become drains, requeues, resets, "
      "validations and resumes. Needs --act (or --dry-run)");
  CLI::App* r = o->run;
  r->add_flag("--act", o->controller.act,
              "Carry actions out on the scheduler (drain, requeue, resume...)");
  r->add_flag("--dry-run", o->controller.dry_run,
              "Decide and record what would be done; touch nothing");
  r->add_flag("--once", o->once,
              "One pass, then exit (exit 1 when an action failed or was refused)");
  r->add_option("--interval", o->interval_s, "Seconds between passes")
      ->check(Real(0.01, 86400))
      ->capture_default_str();
  r->add_option("--conditions-from", o->conditions_from,
                "Where node conditions come from: store (agents writing to this store) or "
                "kubernetes (what `cmax agent --publish-conditions` writes on each Node)")
      ->check(CLI::IsMember({"store", "kubernetes"}))
      ->capture_default_str();
  r->add_option("--node", o->controller.nodes,
                "Act only on these nodes (repeatable); default: all");
  AddControllerFlags(*r, o->controller);

  o->status = app->add_subcommand("status", "Every node's state, reason, since when, next step");
  o->status->add_flag("--json", o->json, "Machine-readable (schema cmax.remediation/v1)");
  o->history = app->add_subcommand("history", "One node's timeline: transitions and actions");
  o->history->add_option("NODE", o->node, "The node")->required();
  o->history->add_option("-n,--limit", o->limit, "Newest entries of each kind")
      ->check(Whole(1, 100000));
  o->history->add_flag("--json", o->json, "Machine-readable (schema cmax.remediation-history/v1)");
  o->repaired = app->add_subcommand(
      "repaired", "A person says the node is fixed: it is validated, then brought back");
  o->repaired->add_option("NODE", o->node, "The node")->required();
  o->retire = app->add_subcommand("retire", "Take a node out for good");
  o->retire->add_option("NODE", o->node, "The node")->required();
  o->reset_breaker = app->add_subcommand("reset-breaker", "Let a tripped controller act again");
  return {app, [o](Context& ctx) { return RunRemediate(*o, ctx); }};
}

}  // namespace cmax::cli
