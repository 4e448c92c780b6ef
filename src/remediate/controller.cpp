#include "remediate/controller.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/log.hpp"
#include "core/strings.hpp"

namespace cmax::remediate {
namespace {

constexpr int kMaxDepth = 16;  // action results feed the policy; this bounds the chain

bool InService(NodeState state) {
  return state == NodeState::kHealthy || state == NodeState::kSuspect ||
         state == NodeState::kReintroduced;
}

bool Drains(const Decision& d) {
  return std::ranges::any_of(d.actions,
                             [](const Action& a) { return a.kind == ActionKind::kDrain; });
}

// An action's result, as the policy takes it.
Event ResultEvent(const ActionRow& row, bool ok, const std::string& detail) {
  Event event;
  event.kind = ok ? EventKind::kActionSucceeded : EventKind::kActionFailed;
  event.action = row.action.kind;
  event.summary = detail;
  event.result_of = row.id;
  return event;
}

}  // namespace

Controller::Controller(store::Store& store, Scheduler& scheduler, sys::ProcessRunner& runner,
                       const Clock& clock, ControllerConfig config)
    : store_(store),
      journal_(store.Db()),
      scheduler_(scheduler),
      runner_(runner),
      clock_(clock),
      config_(std::move(config)) {}

Event Controller::FaultEvent(const NodeCondition& c) {
  Event e;
  e.kind = EventKind::kFault;
  e.severity = c.severity;
  e.fault_action = ParseFaultAction(c.action).value_or(FaultAction::kNone);
  e.device = c.device;
  const std::string what = c.kind == "xid"    ? fmt::format("Xid {}", c.code)
                           : c.kind == "sxid" ? fmt::format("SXid {}", c.code)
                                              : c.kind;
  e.summary = c.device.empty() ? what : what + " on " + c.device;
  return e;
}

bool Controller::Watched(const std::string& node) const {
  return config_.nodes.empty() || std::ranges::find(config_.nodes, node) != config_.nodes.end();
}

Result<StepSummary> Controller::Step() {
  StepSummary summary;
  held_.clear();
  if (config_.dry_run && !dry_run_copy_) {
    auto copy = store_.Db().CopyTablesIntoMemory("remediation_");
    if (!copy) return tl::unexpected(copy.error());
    dry_run_copy_ = std::make_unique<store::Database>(std::move(*copy));
    journal_ = Journal(*dry_run_copy_);
  }
  if (!policy_saved_) {
    // Once per controller: an operator's word (`cmax remediate repaired`) is judged by the
    // policy the controller runs with, not by the defaults.
    // Not worth stopping remediation for: the word would be judged by the defaults.
    if (auto saved = journal_.SavePolicy(config_.policy, clock_.Now()); !saved) {
      log::Warn("cannot record the controller's policy: {}", saved.error().message);
    }
    policy_saved_ = true;
  }
  auto breaker = journal_.Breaker();
  if (!breaker) return tl::unexpected(breaker.error());
  if (breaker->tripped) {
    summary.breaker_tripped = true;
    return summary;  // stop acting until a person resets it
  }

  // 0. What a previous run carried out and was killed before deciding on: the result is handed
  // to the policy now (a GPU reset done and no validation started would otherwise wait for the
  // action timeout and send a repaired node to REPAIR).
  auto due = journal_.ResultsDue();
  if (!due) return tl::unexpected(due.error());
  for (const ActionRow& row : *due) {
    if (!Watched(row.node)) continue;
    log::Info("{}: handing on the result of {} that an earlier run carried out", row.node,
              ActionKindName(row.action.kind));
    if (auto ok = Handle(row.node, ResultEvent(row, row.outcome == Outcome::kDone, row.detail), {},
                         summary, 1);
        !ok) {
      return tl::unexpected(ok.error());
    }
  }

  // 1. What a previous run planned or started and did not finish.
  auto open = journal_.OpenActions();
  if (!open) return tl::unexpected(open.error());
  for (const ActionRow& row : *open) {
    if (!Watched(row.node)) continue;
    if (config_.dry_run) {
      // Said once: in the copy it is closed, so the next pass does not say it again.
      summary.decided.push_back(fmt::format("{}: would carry out {} left {} by an earlier run",
                                            row.node, ActionKindName(row.action.kind),
                                            OutcomeName(row.outcome)));
      if (auto ok = journal_.Finished(row.id, true, "dry run: not carried out", clock_.Now());
          !ok) {
        return tl::unexpected(ok.error());
      }
      continue;
    }
    auto held = HeldBack(row, summary);
    if (!held) return tl::unexpected(held.error());
    if (*held) continue;
    auto superseded = Superseded(row, summary);
    if (!superseded) return tl::unexpected(superseded.error());
    if (*superseded) continue;
    log::Info("{}: carrying out {} left {} by an earlier run", row.node,
              ActionKindName(row.action.kind), OutcomeName(row.outcome));
    if (auto ok = CarryOut(row, summary, 0); !ok) return tl::unexpected(ok.error());
  }

  // 2. Conditions the agents wrote that are new, grew, or recovered since we last looked.
  auto conditions = store_.LoadConditions("");
  if (!conditions) return tl::unexpected(conditions.error());
  auto seen = journal_.Seen();
  if (!seen) return tl::unexpected(seen.error());
  std::ranges::sort(*conditions, [](const NodeCondition& a, const NodeCondition& b) {
    return a.last_seen < b.last_seen;
  });
  std::vector<SeenMark> quiet;  // recovered before we ever saw them: remembered, no event
  for (const NodeCondition& c : *conditions) {
    if (!Watched(c.node)) continue;
    auto it = seen->find({c.node, c.key});
    const bool known = it != seen->end();
    SeenMark mark{c.node, c.key, c.count, c.recovered};
    if (!c.recovered && (!known || c.count > it->second.count || it->second.recovered)) {
      ++summary.events;
      if (auto ok = Handle(c.node, FaultEvent(c), {mark}, summary, 0); !ok)
        return tl::unexpected(ok.error());
    } else if (c.recovered && known && !it->second.recovered) {
      Event cleared = FaultEvent(c);
      cleared.kind = EventKind::kFaultCleared;
      ++summary.events;
      if (auto ok = Handle(c.node, cleared, {mark}, summary, 0); !ok)
        return tl::unexpected(ok.error());
    } else if (!known) {
      quiet.push_back(mark);
    }
  }
  if (auto ok = journal_.MarkSeen(quiet); !ok) return tl::unexpected(ok.error());

  // 3. Results from the scheduler: validations that ended, reboots that happened; and time.
  auto entries = journal_.Nodes();
  if (!entries) return tl::unexpected(entries.error());
  for (const NodeEntry& entry : *entries) {
    if (!Watched(entry.node)) continue;
    const NodeRecord& r = entry.record;
    if (r.state == NodeState::kValidating && entry.handle.starts_with("job:")) {
      auto status = scheduler_.PollValidation(entry.node, entry.handle.substr(4));
      if (!status) {
        log::Warn("{}: cannot read validation {}: {}", entry.node, entry.handle,
                  status.error().message);
      } else if (status->state != ValidationState::kRunning) {
        Event e;
        e.kind = status->state == ValidationState::kPassed ? EventKind::kValidationPassed
                                                           : EventKind::kValidationFailed;
        e.summary = status->detail;
        ++summary.events;
        if (auto ok = Handle(entry.node, e, {}, summary, 0); !ok) return tl::unexpected(ok.error());
        continue;
      }
    }
    if (r.state == NodeState::kQuarantined && r.pending == "reboot-node" &&
        entry.handle.starts_with("boot:")) {
      auto boot = scheduler_.BootTime(entry.node);
      if (boot && *boot != entry.handle.substr(5)) {
        Event e;
        e.kind = EventKind::kActionSucceeded;
        e.action = ActionKind::kRebootNode;
        e.summary = "booted at " + *boot;
        ++summary.events;
        if (auto ok = Handle(entry.node, e, {}, summary, 0); !ok) return tl::unexpected(ok.error());
        continue;
      }
    }
    if (r.state != NodeState::kHealthy) {
      Event tick;
      tick.kind = EventKind::kTimerExpired;
      if (auto ok = Handle(entry.node, tick, {}, summary, 0); !ok)
        return tl::unexpected(ok.error());
    }
  }
  // 4. NVL72 racks, once every tray's own state is settled for this step.
  if (!config_.racks.empty() && config_.nodes.empty()) {
    if (auto ok = StepRacks(summary); !ok) return tl::unexpected(ok.error());
  }
  return summary;
}

Result<void> Controller::StepRacks(StepSummary& summary) {
  const WallTime now = clock_.Now();
  auto entries = journal_.Nodes();
  if (!entries) return tl::unexpected(entries.error());
  std::map<std::string, NodeState> states;
  for (const NodeEntry& e : *entries) states[e.node] = e.record.state;
  auto holds = journal_.RackHolds();
  if (!holds) return tl::unexpected(holds.error());
  std::map<std::string, RackHold> by_node;
  for (RackHold& h : *holds) by_node[h.node] = std::move(h);

  for (const auto& [rack, trays] : config_.racks) {
    RackView view{rack, {}, {}};
    for (const std::string& tray : trays) {
      const auto it = states.find(tray);
      view.trays[tray] = it == states.end() ? NodeState::kHealthy : it->second;
    }
    for (const auto& [node, hold] : by_node) {
      if (hold.rack == rack) view.held.insert(node);
    }
    const RackPlan plan = PlanRack(view, config_.rack);
    if (config_.dry_run) {
      if (!plan.hold.empty() || !plan.release.empty()) {
        log::Info("rack {} {}: would hold {} and release {} trays", rack,
                  RackHealthName(plan.health), plan.hold.size(), plan.release.size());
      }
      continue;
    }
    for (const std::string& tray : plan.hold) {
      RackHold hold{tray, rack, "holding", plan.reason, now, ""};
      if (auto ok = journal_.SaveRackHold(hold); !ok) return ok;
      if (auto ok = journal_.Note(tray, "rack-hold", rack, plan.reason, now); !ok) return ok;
      by_node[tray] = hold;
    }
    for (const std::string& tray : plan.release) {
      RackHold& hold = by_node[tray];
      if (hold.state == "releasing") continue;
      hold.state = "releasing";
      if (auto ok = journal_.SaveRackHold(hold); !ok) return ok;
      if (auto ok =
              journal_.Note(tray, "rack-release", rack,
                            fmt::format("rack {} {}", rack, RackHealthName(plan.health)), now);
          !ok) {
        return ok;
      }
    }
    for (const std::string& tray : plan.forget) {
      if (auto ok = journal_.DropRackHold(tray); !ok) return ok;
      by_node.erase(tray);
    }
    // Down again before a release was carried out: hold on.
    if (plan.health == RackHealth::kDown) {
      for (auto& [node, hold] : by_node) {
        if (hold.rack != rack || hold.state != "releasing") continue;
        hold.state = "held";
        if (auto ok = journal_.SaveRackHold(hold); !ok) return ok;
      }
    }
  }
  if (config_.dry_run) return {};

  // Carry out what is still to do, with the same rules as any action: a scheduler that is away
  // leaves it for the next step.
  for (auto& [node, hold] : by_node) {
    if (hold.state == "holding") {
      auto r = scheduler_.Drain(node, hold.reason);
      if (!r) {
        log::Warn("{}: hold for rack {} pending: {}", node, hold.rack, r.error().message);
        ++summary.actions_failed;
        continue;
      }
      hold.state = "held";
      hold.detail = *r;
      if (auto ok = journal_.SaveRackHold(hold); !ok) return ok;
      log::Info("{}: held for rack {}: {}", node, hold.rack, *r);
      ++summary.rack_holds;
    } else if (hold.state == "releasing") {
      auto r = scheduler_.Resume(node);
      if (!r && r.error().code != ErrorCode::kPermissionDenied) {
        log::Warn("{}: release for rack {} pending: {}", node, hold.rack, r.error().message);
        ++summary.actions_failed;
        continue;
      }
      // kPermissionDenied: someone else drained it meanwhile; theirs to undo.
      if (auto ok = journal_.DropRackHold(node); !ok) return ok;
      log::Info("{}: released for rack {}: {}", node, hold.rack, r ? *r : r.error().message);
      ++summary.rack_releases;
    }
  }
  return {};
}

Result<bool> Controller::MayTakeOut(const NodeEntry& entry, const Event& event,
                                    const Decision& decision, StepSummary& summary) {
  if (config_.dry_run || !Drains(decision) || !InService(entry.record.state)) return true;
  const WallTime now = clock_.Now();
  auto state = journal_.Breaker();
  if (!state) return tl::unexpected(state.error());
  auto take_outs = journal_.TakeOuts(
      now - std::chrono::duration_cast<std::chrono::milliseconds>(config_.breaker.window));
  if (!take_outs) return tl::unexpected(take_outs.error());
  // Other controllers (one agent per node) write to other stores: the scheduler's cmax-owned
  // drains are the shared view. The breaker counts distinct nodes, so overlap is harmless.
  auto elsewhere = scheduler_.CmaxTakeOuts();
  if (!elsewhere) return tl::unexpected(elsewhere.error());
  take_outs->insert(take_outs->end(), elsewhere->begin(), elsewhere->end());
  auto fleet = scheduler_.Nodes();
  if (!fleet) return tl::unexpected(fleet.error());
  const BreakerVerdict verdict = CheckBreaker(
      *state, *take_outs, entry.node, static_cast<int>(fleet->size()), now, config_.breaker);
  if (!verdict.allow) {
    ++summary.refused;
    if (verdict.trips_now) {
      summary.breaker_tripped = true;
      if (auto ok = journal_.SetBreaker({true, now, verdict.reason}); !ok)
        return tl::unexpected(ok.error());
      log::Error(
          "circuit breaker tripped: {}; cmax takes no more action until `cmax remediate "
          "reset-breaker`",
          verdict.reason);
      if (auto ok =
              journal_.Note(entry.node, "breaker", event.summary,
                            "circuit breaker tripped: " + verdict.reason + "; not taken out", now);
          !ok) {
        return tl::unexpected(ok.error());
      }
    }
    return false;
  }
  auto recent = journal_.DisruptiveActions(
      entry.node, now - std::chrono::duration_cast<std::chrono::milliseconds>(config_.rate.window));
  if (!recent) return tl::unexpected(recent.error());
  if (!WithinRateLimit(*recent, now, config_.rate)) {
    ++summary.refused;
    const std::string why =
        fmt::format("rate limit: {} disruptive actions within {}; fault noted, not acted on",
                    recent->size(), FormatDuration(config_.rate.window));
    log::Warn("{}: {}", entry.node, why);
    if (auto ok = journal_.Note(entry.node, "rate-limit", event.summary, why, now); !ok) {
      return tl::unexpected(ok.error());
    }
    return false;
  }
  return true;
}

Result<void> Controller::Handle(const std::string& node, const Event& event,
                                const std::vector<SeenMark>& seen, StepSummary& summary,
                                int depth) {
  const WallTime now = clock_.Now();
  auto entry = journal_.Node(node, now);
  if (!entry) return tl::unexpected(entry.error());
  const Decision decision = Transition(entry->record, event, now, config_.policy);
  const bool changed = decision.next.state != entry->record.state || !decision.actions.empty();
  if (!changed && event.kind != EventKind::kFault) {
    // Quiet: a timer tick or a stray result. Nothing to write but what it consumed.
    return journal_.MarkSeen(seen, event.result_of);
  }
  auto allowed = MayTakeOut(*entry, event, decision, summary);
  if (!allowed && allowed.error().code == ErrorCode::kUnavailable) {
    // Cannot count the fleet: decide nothing now; the condition stays unseen for the next step.
    log::Warn("{}: {} left for later: {}", node, EventKindName(event.kind),
              allowed.error().message);
    return {};
  }
  if (!allowed) return tl::unexpected(allowed.error());
  if (!*allowed) {
    // A refused take-out by the breaker stays unseen, so it is acted on after the reset; the
    // rate limit consumes it.
    if (summary.breaker_tripped) return {};
    return journal_.MarkSeen(seen, event.result_of);
  }
  auto ids = journal_.Apply(*entry, event, decision, now, config_.dry_run, seen);
  if (!ids) return tl::unexpected(ids.error());
  ++summary.transitions;
  std::vector<std::string> actions;
  for (const Action& a : decision.actions) actions.emplace_back(ActionKindName(a.kind));
  const std::string said = fmt::format(
      "{}: {} -> {} on {}{}: {}{}", node, NodeStateName(entry->record.state),
      NodeStateName(decision.next.state), EventKindName(event.kind),
      event.summary.empty() ? "" : " (" + event.summary + ")", decision.note,
      actions.empty() ? "" : (config_.dry_run ? "; would " : "; ") + Join(actions, ", "));
  log::Info("{}", said);
  summary.decided.push_back(said);
  if (config_.dry_run) return {};
  auto rows = journal_.Actions(node, static_cast<int>(ids->size()));
  if (!rows) return tl::unexpected(rows.error());
  for (const ActionRow& row : *rows) {
    auto held = HeldBack(row, summary);
    if (!held) return tl::unexpected(held.error());
    if (*held) continue;
    if (auto ok = CarryOut(row, summary, depth); !ok) return ok;
  }
  return {};
}

namespace {

// What takes the node's work off it: until it has happened, nothing that hits a job may run.
bool ClearsTheNode(ActionKind kind) {
  return kind == ActionKind::kDrain || kind == ActionKind::kRequeueJobs;
}
// At most a few ids, for a log line that stays one line on a node with hundreds of jobs.
std::string JobList(const std::vector<std::string>& ids) {
  constexpr size_t kShown = 5;
  if (ids.size() <= kShown) return Join(ids, ", ");
  return Join({ids.begin(), ids.begin() + kShown}, ", ") +
         fmt::format(" and {} more", ids.size() - kShown);
}
bool HitsJobs(ActionKind kind) {
  return kind == ActionKind::kRequeueJobs || kind == ActionKind::kResetGpu ||
         kind == ActionKind::kRebootNode || kind == ActionKind::kStartValidation;
}

}  // namespace

Result<bool> Controller::HeldBack(const ActionRow& row, StepSummary& summary) {
  const auto it = held_.find(row.node);
  if (it == held_.end() || !HitsJobs(row.action.kind)) return false;
  if (it->second) return true;  // open, in order, for the next pass
  const std::string why = "not carried out: the node's drain or requeue before it did not happen";
  if (auto ok = journal_.Finished(row.id, false, why, clock_.Now()); !ok) {
    return tl::unexpected(ok.error());
  }
  ++summary.actions_failed;
  log::Warn("{}: {} {}", row.node, ActionKindName(row.action.kind), why);
  return true;
}

Result<bool> Controller::Superseded(const ActionRow& row, StepSummary& summary) {
  // A reset waits for the node's jobs to leave (Execute); meanwhile the node may have moved on
  // (to REPAIR when they did not leave within the action timeout, or back to service by an
  // operator's word). Carried out then, it would reset a GPU nobody waits for, on a node that
  // may run jobs again: it is closed instead, with no consequence of its own.
  if (row.action.kind != ActionKind::kResetGpu) return false;
  auto entry = journal_.Node(row.node, clock_.Now());
  if (!entry) return tl::unexpected(entry.error());
  if (entry->record.state == NodeState::kQuarantined &&
      entry->record.pending == ActionKindName(ActionKind::kResetGpu)) {
    return false;
  }
  const std::string why =
      fmt::format("not carried out: the node is {} now, no longer waiting for it",
                  NodeStateName(entry->record.state));
  if (auto ok = journal_.Finished(row.id, false, why, clock_.Now()); !ok) {
    return tl::unexpected(ok.error());
  }
  ++summary.actions_failed;
  log::Warn("{}: {} {}", row.node, ActionKindName(row.action.kind), why);
  return true;
}

Result<void> Controller::CarryOut(const ActionRow& row, StepSummary& summary, int depth) {
  const WallTime now = clock_.Now();
  auto entry = journal_.Node(row.node, now);
  if (!entry) return tl::unexpected(entry.error());
  if (auto ok = journal_.Started(row.id, now); !ok) return ok;
  ActionRow started = row;
  auto result = Execute(started, *entry);
  if (!result && result.error().code == ErrorCode::kUnavailable) {
    // The scheduler is away: the action stays open and the next step tries again.
    log::Warn("{}: {} pending: {}", row.node, ActionKindName(row.action.kind),
              result.error().message);
    if (ClearsTheNode(row.action.kind)) held_[row.node] = true;
    return {};
  }
  const std::string detail = result ? *result : result.error().message;
  // A reboot has succeeded when the node has booted, not when it was asked to (see Step).
  const bool feedback =
      depth < kMaxDepth && !(result && row.action.kind == ActionKind::kRebootNode);
  if (auto ok = journal_.Finished(row.id, result.has_value(), detail, clock_.Now(), feedback);
      !ok) {
    return ok;
  }
  (result ? summary.actions_done : summary.actions_failed)++;
  if (!result && ClearsTheNode(row.action.kind)) held_.emplace(row.node, false);
  if (result) {
    log::Info("{}: {} done: {}", row.node, ActionKindName(row.action.kind), detail);
  } else {
    log::Warn("{}: {} failed: {}", row.node, ActionKindName(row.action.kind), detail);
  }
  if (!feedback) return {};
  return Handle(row.node, ResultEvent(row, result.has_value(), detail), {}, summary, depth + 1);
}

Result<std::string> Controller::Execute(const ActionRow& row, NodeEntry& entry) {
  const std::string& node = row.node;
  const WallTime now = clock_.Now();
  switch (row.action.kind) {
    case ActionKind::kDrain: return scheduler_.Drain(node, row.action.reason);
    case ActionKind::kResume: return scheduler_.Resume(node);
    case ActionKind::kRequeueJobs: return scheduler_.RequeueJobs(node);
    case ActionKind::kResetGpu: {
      if (config_.reset_command.empty()) {
        return Fail(ErrorCode::kUnsupported,
                    "no --reset-command: cmax cannot reach the GPU from here");
      }
      // A requeue asks the jobs to go and returns; their processes (an epilog, a pod's grace
      // period, a job that could not be requeued) may still hold the GPU. The reset stays open
      // until the node is empty, or until the scheduler can say so.
      auto jobs = scheduler_.JobsOn(node);
      if (!jobs) {
        return Fail(ErrorCode::kUnavailable, "cannot tell whether jobs are still on the node: {}",
                    jobs.error().message);
      }
      if (!jobs->empty()) {
        return Fail(ErrorCode::kUnavailable, "waiting for the node's jobs to leave: {}",
                    JobList(*jobs));
      }
      std::string command = ReplaceAll(config_.reset_command, "{node}", ShellQuote(node));
      command = ReplaceAll(command, "{device}", ShellQuote(row.action.device));
      sys::ProcessSpec spec{.argv = {command}, .use_shell = true};
      spec.timeout = std::chrono::minutes(5);
      auto r = runner_.Run(spec);
      if (!r) return tl::unexpected(r.error());
      if (!r->Succeeded()) {
        return Fail(ErrorCode::kIo, "reset command: {}: {}", r->Describe(),
                    std::string(Trim(r->stderr_text)).substr(0, 300));
      }
      return std::string("GPU reset");
    }
    case ActionKind::kRebootNode: {
      auto boot = scheduler_.BootTime(node);
      if (!boot) return tl::unexpected(boot.error());
      // Started by a controller that was killed: the boot time it wrote down before asking
      // tells whether the node has rebooted since (then it is not rebooted again); the same
      // boot time, and it is asked again (a reboot Slurm still holds pending is not doubled).
      const bool asked_before =
          row.outcome == Outcome::kStarted && entry.handle.starts_with("boot:");
      const std::string before = asked_before ? entry.handle.substr(5) : *boot;
      if (asked_before && before != *boot) {
        return fmt::format("rebooted before cmax restarted; booted last at {}", *boot);
      }
      // Written down before it is asked, so that a restart after the asking knows it.
      entry.handle = "boot:" + before;
      if (auto ok = journal_.SaveEntry(entry, now); !ok) return tl::unexpected(ok.error());
      auto r = scheduler_.Reboot(
          node,
          "cmax: " + (entry.record.reason.empty() ? std::string("reboot") : entry.record.reason));
      if (!r) return r;
      return *r + "; booted last at " + before;
    }
    case ActionKind::kStartValidation: {
      auto job = scheduler_.StartValidation(node, config_.validation);
      if (!job) return tl::unexpected(job.error());
      entry.handle = "job:" + *job;
      if (auto ok = journal_.SaveEntry(entry, now); !ok) return tl::unexpected(ok.error());
      return "validation job " + *job;
    }
    case ActionKind::kEndValidation: {
      auto r = scheduler_.EndValidation(node, row.action.reason.empty(), row.action.reason);
      if (!r) return r;
      entry.handle.clear();
      if (auto ok = journal_.SaveEntry(entry, now); !ok) return tl::unexpected(ok.error());
      return r;
    }
    case ActionKind::kSwapInSpare: {
      std::string spare = row.action.device;
      if (spare.empty()) {
        auto picked = scheduler_.PickSpare();
        if (!picked) return tl::unexpected(picked.error());
        spare = *picked;
        // Written down before the move, so a restart moves the same spare.
        if (auto ok = journal_.Started(row.id, now, spare); !ok) return tl::unexpected(ok.error());
      }
      auto r = scheduler_.SwapInSpare(spare);
      if (!r) return r;
      entry.spare = spare;
      if (auto ok = journal_.SaveEntry(entry, now); !ok) return tl::unexpected(ok.error());
      return r;
    }
    case ActionKind::kReturnSpare: {
      if (entry.spare.empty()) return std::string("no spare to return");
      auto r = scheduler_.ReturnSpare(entry.spare);
      if (!r) return r;
      entry.spare.clear();
      if (auto ok = journal_.SaveEntry(entry, now); !ok) return tl::unexpected(ok.error());
      return r;
    }
    case ActionKind::kOpenRepair:
      log::Warn("{} needs repair: {} (`cmax remediate repaired {}` when it is fixed)", node,
                row.action.reason, node);
      return "repair needed: " + row.action.reason;
    case ActionKind::kAlert:
      log::Error("{}: {}", node, row.action.reason);
      return "alerted: " + row.action.reason;
  }
  return Fail(ErrorCode::kInternal, "unknown action");
}

bool IsNodeName(std::string_view node) {
  return IsOneLine(node, 253) && node.find(' ') == std::string_view::npos;
}

Result<OperatorOutcome> RecordOperatorWord(store::Store& store, const OperatorWord& word,
                                           WallTime now) {
  if (!IsNodeName(word.node)) {
    return Fail(ErrorCode::kInvalidArgument,
                "'{}' is not a node's name: no spaces or control "
                "characters, at most 253 bytes",
                AsOneLine(word.node.substr(0, 60)));
  }
  Journal journal(store.Db());
  auto entry = journal.Node(word.node, now);
  if (!entry) return tl::unexpected(entry.error());
  OperatorOutcome out;
  PolicyConfig policy;
  // A stored policy that cannot be read leaves the defaults, and the outcome says so.
  if (auto saved = journal.SavedPolicy(); saved && saved->has_value()) {
    policy = **saved;
    out.policy_of_controller = true;
  } else if (!saved) {
    log::Warn("cannot read the controller's policy: {}; the defaults judge", saved.error().message);
  }
  Event event;
  event.kind = word.kind;
  event.summary = word.who.empty() ? "by an operator" : "by " + word.who;
  const Decision d = Transition(entry->record, event, now, policy);
  out.from = entry->record.state;
  out.to = d.next.state;
  out.note = d.note;
  if (d.next.state == entry->record.state && d.actions.empty()) return out;
  auto ids = journal.Apply(*entry, event, d, now, /*dry_run=*/false, {});
  if (!ids) return tl::unexpected(ids.error());
  out.changed = true;
  out.actions_planned = ids->size();
  return out;
}

}  // namespace cmax::remediate
