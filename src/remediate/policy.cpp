#include "remediate/policy.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <utility>

namespace cmax::remediate {
namespace {

constexpr std::array<std::pair<NodeState, std::string_view>, 7> kStateNames{{
    {NodeState::kHealthy, "HEALTHY"},
    {NodeState::kSuspect, "SUSPECT"},
    {NodeState::kQuarantined, "QUARANTINED"},
    {NodeState::kValidating, "VALIDATING"},
    {NodeState::kReintroduced, "REINTRODUCED"},
    {NodeState::kRepair, "REPAIR"},
    {NodeState::kRetired, "RETIRED"},
}};

// The builder every transition uses: a copy of the record, actions appended, state changed.
class Next {
 public:
  Next(const NodeRecord& node, WallTime now) : now_(now) { decision_.next = node; }
  Next& To(NodeState state) {
    if (decision_.next.state != state) decision_.next.since = now_;
    decision_.next.state = state;
    return *this;
  }
  Next& Do(ActionKind kind, std::string reason = "", std::string device = "") {
    decision_.actions.push_back({kind, std::move(device), std::move(reason)});
    return *this;
  }
  Next& Note(std::string note) {
    decision_.note = std::move(note);
    return *this;
  }
  NodeRecord& Record() { return decision_.next; }
  Decision Done() { return std::move(decision_); }

 private:
  WallTime now_;
  Decision decision_;
};

std::string DrainReason(const Event& event) {
  return "cmax: " + (event.summary.empty() ? std::string("fault") : event.summary);
}

// Into REPAIR: the node needs hands. On HGX a spare takes its place, once.
Decision ToRepair(Next next, const PolicyConfig& config, const std::string& why) {
  next.To(NodeState::kRepair).Do(ActionKind::kOpenRepair, why);
  if (config.architecture == Architecture::kHgx && config.spares && !next.Record().spare_in_use) {
    next.Do(ActionKind::kSwapInSpare, why);
    next.Record().spare_in_use = true;
  }
  return next.Note(why).Done();
}

// A serious fault on a node in service: take it out and start the step its action calls for.
Decision TakeOut(const NodeRecord& node, const Event& event, WallTime now,
                 const PolicyConfig& config) {
  Next next(node, now);
  NodeRecord& r = next.Record();
  r.reason = event.summary;
  r.device = event.device;
  next.Do(ActionKind::kDrain, DrainReason(event)).Do(ActionKind::kRequeueJobs);
  if (std::string why = EscalationReason(r, config); !why.empty()) {
    return ToRepair(std::move(next), config, why + ": " + event.summary);
  }
  switch (event.fault_action) {
    case FaultAction::kResetGpu:
      r.pending = "reset-gpu";
      return next.To(NodeState::kQuarantined)
          .Do(ActionKind::kResetGpu, "", event.device)
          .Note("quarantined; resetting the GPU")
          .Done();
    case FaultAction::kRebootNode:
      r.pending = "reboot-node";
      return next.To(NodeState::kQuarantined)
          .Do(ActionKind::kRebootNode)
          .Note("quarantined; rebooting")
          .Done();
    case FaultAction::kDrainAndRma:
    case FaultAction::kContactSupport: return ToRepair(std::move(next), config, event.summary);
    case FaultAction::kNone:
    case FaultAction::kRestartApp:
      // Serious by severity alone: nothing to reset, validate straight away.
      r.pending.clear();
      return next.To(NodeState::kValidating)
          .Do(ActionKind::kStartValidation)
          .Note("quarantined; validating")
          .Done();
  }
  return next.Done();
}

// Remembers a serious fault and forgets the ones that fell out of the window.
NodeRecord WithFault(NodeRecord node, const Event& event, WallTime now,
                     const PolicyConfig& config) {
  std::erase_if(node.serious_faults,
                [&](const FaultSeen& f) { return now - f.at >= config.escalation_window; });
  node.serious_faults.push_back({now, event.device});
  return node;
}

// Validation ended badly: the node is taken out again (the validation had it open to its own
// job), then it goes to REPAIR.
Decision FailValidation(const NodeRecord& node, WallTime now, const PolicyConfig& config,
                        const std::string& why) {
  Next next(node, now);
  next.Do(ActionKind::kEndValidation, "cmax: " + why);
  return ToRepair(std::move(next), config, why);
}

Decision Stay(const NodeRecord& node, WallTime now, std::string note) {
  return Next(node, now).Note(std::move(note)).Done();
}

}  // namespace

std::string_view NodeStateName(NodeState state) {
  for (const auto& [value, name] : kStateNames) {
    if (value == state) return name;
  }
  return "?";
}

Result<NodeState> ParseNodeState(std::string_view text) {
  for (const auto& [value, name] : kStateNames) {
    if (name == text) return value;
  }
  return Fail(ErrorCode::kInvalidArgument, "unknown node state '{}'", text);
}

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kFault: return "fault";
    case EventKind::kFaultCleared: return "fault-cleared";
    case EventKind::kActionSucceeded: return "action-succeeded";
    case EventKind::kActionFailed: return "action-failed";
    case EventKind::kValidationPassed: return "validation-passed";
    case EventKind::kValidationFailed: return "validation-failed";
    case EventKind::kTimerExpired: return "timer";
    case EventKind::kRepaired: return "repaired";
    case EventKind::kRetire: return "retire";
  }
  return "?";
}

std::string_view ActionKindName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kDrain: return "drain";
    case ActionKind::kResume: return "resume";
    case ActionKind::kRequeueJobs: return "requeue-jobs";
    case ActionKind::kResetGpu: return "reset-gpu";
    case ActionKind::kRebootNode: return "reboot-node";
    case ActionKind::kStartValidation: return "start-validation";
    case ActionKind::kEndValidation: return "end-validation";
    case ActionKind::kSwapInSpare: return "swap-in-spare";
    case ActionKind::kReturnSpare: return "return-spare";
    case ActionKind::kOpenRepair: return "open-repair";
    case ActionKind::kAlert: return "alert";
  }
  return "?";
}

bool IsSerious(Severity severity, FaultAction action) {
  return severity >= Severity::kHigh || action == FaultAction::kResetGpu ||
         action == FaultAction::kRebootNode || action == FaultAction::kDrainAndRma ||
         action == FaultAction::kContactSupport;
}

std::string EscalationReason(const NodeRecord& node, const PolicyConfig& config) {
  const auto node_faults = static_cast<int>(node.serious_faults.size());
  if (node_faults >= config.escalation_faults) {
    return std::to_string(node_faults) + " serious faults within " +
           FormatDuration(config.escalation_window);
  }
  if (node.serious_faults.empty() || node.serious_faults.back().device.empty()) return "";
  const std::string& device = node.serious_faults.back().device;
  const auto on_device = std::ranges::count_if(
      node.serious_faults, [&](const FaultSeen& f) { return f.device == device; });
  if (on_device >= config.gpu_escalation_faults) {
    return std::to_string(on_device) + " serious faults on " + device + " within " +
           FormatDuration(config.escalation_window);
  }
  return "";
}

Decision Transition(const NodeRecord& node, const Event& event, WallTime now,
                    const PolicyConfig& config) {
  const bool serious =
      event.kind == EventKind::kFault && IsSerious(event.severity, event.fault_action);
  // Every serious fault counts toward escalation, whatever the state.
  const NodeRecord seen = serious ? WithFault(node, event, now, config) : node;
  const Duration in_state = now - node.since;

  if (event.kind == EventKind::kRetire) {
    if (node.state == NodeState::kRetired) return Stay(node, now, "already retired");
    Next next(node, now);
    if (node.state == NodeState::kHealthy || node.state == NodeState::kSuspect ||
        node.state == NodeState::kReintroduced) {
      next.Do(ActionKind::kDrain, "cmax: retired by an operator");
    }
    if (node.state == NodeState::kValidating) {
      next.Do(ActionKind::kEndValidation, "cmax: retired by an operator");
    }
    return next.To(NodeState::kRetired).Note("retired by an operator").Done();
  }

  switch (node.state) {
    case NodeState::kHealthy:
      if (serious) return TakeOut(seen, event, now, config);
      if (event.kind == EventKind::kFault &&
          (event.severity == Severity::kMedium || event.fault_action == FaultAction::kRestartApp)) {
        Next next(seen, now);
        next.Record().reason = event.summary;
        return next.To(NodeState::kSuspect).Note("watching: " + event.summary).Done();
      }
      return Stay(seen, now, "healthy");

    case NodeState::kSuspect:
      if (serious) return TakeOut(seen, event, now, config);
      if (event.kind == EventKind::kFaultCleared ||
          (event.kind == EventKind::kTimerExpired && in_state >= config.suspect_quiet)) {
        return Next(seen, now).To(NodeState::kHealthy).Note("quiet again").Done();
      }
      return Stay(seen, now, "still watching");

    case NodeState::kQuarantined:
      if (std::string why = EscalationReason(seen, config); serious && !why.empty()) {
        return ToRepair(Next(seen, now), config, why + " (while quarantined)");
      }
      if (serious && (event.fault_action == FaultAction::kDrainAndRma ||
                      event.fault_action == FaultAction::kContactSupport)) {
        return ToRepair(Next(seen, now), config, event.summary);
      }
      if (event.kind == EventKind::kActionSucceeded &&
          (event.action == ActionKind::kResetGpu || event.action == ActionKind::kRebootNode)) {
        Next next(seen, now);
        next.Record().pending.clear();
        return next.To(NodeState::kValidating)
            .Do(ActionKind::kStartValidation)
            .Note(std::string(ActionKindName(event.action)) + " done; validating")
            .Done();
      }
      if (event.kind == EventKind::kActionFailed && event.action == ActionKind::kResetGpu) {
        // A GPU that will not reset may come back after a reboot.
        Next next(seen, now);
        next.Record().pending = "reboot-node";
        return next.Do(ActionKind::kRebootNode).Note("GPU reset failed; rebooting").Done();
      }
      if (event.kind == EventKind::kActionFailed && event.action == ActionKind::kRebootNode) {
        return ToRepair(Next(seen, now), config, "reboot failed");
      }
      if (event.kind == EventKind::kActionFailed && event.action == ActionKind::kDrain) {
        return Next(seen, now).Do(ActionKind::kAlert, "drain failed").Note("drain failed").Done();
      }
      if (event.kind == EventKind::kTimerExpired && in_state >= config.action_timeout) {
        return ToRepair(
            Next(seen, now), config,
            seen.pending + " did not finish within " + FormatDuration(config.action_timeout));
      }
      if (event.kind == EventKind::kRepaired) {
        Next next(seen, now);
        next.Record().pending.clear();
        return next.To(NodeState::kValidating)
            .Do(ActionKind::kStartValidation)
            .Note("repaired by hand; validating")
            .Done();
      }
      return Stay(seen, now, "quarantined: waiting for " + seen.pending);

    case NodeState::kValidating:
      if (event.kind == EventKind::kValidationPassed) {
        Next next(seen, now);
        next.To(NodeState::kReintroduced).Do(ActionKind::kEndValidation).Do(ActionKind::kResume);
        if (next.Record().spare_in_use) {
          next.Do(ActionKind::kReturnSpare);
          next.Record().spare_in_use = false;
        }
        return next.Note("validation passed; back in service").Done();
      }
      if (event.kind == EventKind::kValidationFailed ||
          (event.kind == EventKind::kActionFailed &&
           event.action == ActionKind::kStartValidation)) {
        return FailValidation(seen, now, config, "validation failed");
      }
      if (event.kind == EventKind::kTimerExpired && in_state >= config.validation_timeout) {
        return FailValidation(
            seen, now, config,
            "validation did not finish within " + FormatDuration(config.validation_timeout));
      }
      if (serious)
        return FailValidation(seen, now, config, "fault during validation: " + event.summary);
      return Stay(seen, now, "validating");

    case NodeState::kReintroduced:
      if (serious) {
        Next next(seen, now);
        next.Record().reason = event.summary;
        next.Do(ActionKind::kDrain, DrainReason(event)).Do(ActionKind::kRequeueJobs);
        return ToRepair(std::move(next), config,
                        "fault again right after repair: " + event.summary);
      }
      if (event.kind == EventKind::kFault &&
          (event.severity == Severity::kMedium || event.fault_action == FaultAction::kRestartApp)) {
        return Next(seen, now).To(NodeState::kSuspect).Note("watching: " + event.summary).Done();
      }
      if (event.kind == EventKind::kActionFailed && event.action == ActionKind::kResume) {
        return Next(seen, now).Do(ActionKind::kAlert, "resume failed").Note("resume failed").Done();
      }
      if (event.kind == EventKind::kTimerExpired && in_state >= config.probation) {
        return Next(seen, now).To(NodeState::kHealthy).Note("probation over").Done();
      }
      return Stay(seen, now, "on probation");

    case NodeState::kRepair:
      if (event.kind == EventKind::kRepaired) {
        return Next(seen, now)
            .To(NodeState::kValidating)
            .Do(ActionKind::kStartValidation)
            .Note("repaired; validating")
            .Done();
      }
      return Stay(seen, now, "waiting for repair");

    case NodeState::kRetired:
      if (event.kind == EventKind::kRepaired) {
        return Next(seen, now)
            .To(NodeState::kValidating)
            .Do(ActionKind::kStartValidation)
            .Note("brought back; validating")
            .Done();
      }
      return Stay(seen, now, "retired");
  }
  return Stay(seen, now, "");
}

std::string PolicyJson(const PolicyConfig& c) {
  const auto ms = [](Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  const nlohmann::json j = {
      {"architecture", c.architecture == Architecture::kNvl72 ? "nvl72" : "hgx"},
      {"spares", c.spares},
      {"escalation_window_ms", ms(c.escalation_window)},
      {"escalation_faults", c.escalation_faults},
      {"gpu_escalation_faults", c.gpu_escalation_faults},
      {"suspect_quiet_ms", ms(c.suspect_quiet)},
      {"probation_ms", ms(c.probation)},
      {"action_timeout_ms", ms(c.action_timeout)},
      {"validation_timeout_ms", ms(c.validation_timeout)}};
  return j.dump();
}

Result<PolicyConfig> ParsePolicyJson(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Fail(ErrorCode::kInvalidArgument, "the stored policy is not JSON");
  PolicyConfig c;
  // A member missing or of another type keeps its default: a policy stored by an older cmax.
  const auto duration = [&](const char* key, Duration& out) {
    if (const auto it = j.find(key); it != j.end() && it->is_number_integer())
      out = std::chrono::milliseconds(it->get<int64_t>());
  };
  const auto whole = [&](const char* key, int& out) {
    if (const auto it = j.find(key); it != j.end() && it->is_number_integer()) out = it->get<int>();
  };
  if (const auto it = j.find("architecture"); it != j.end() && it->is_string())
    c.architecture = it->get<std::string>() == "nvl72" ? Architecture::kNvl72 : Architecture::kHgx;
  if (const auto it = j.find("spares"); it != j.end() && it->is_boolean())
    c.spares = it->get<bool>();
  duration("escalation_window_ms", c.escalation_window);
  whole("escalation_faults", c.escalation_faults);
  whole("gpu_escalation_faults", c.gpu_escalation_faults);
  duration("suspect_quiet_ms", c.suspect_quiet);
  duration("probation_ms", c.probation);
  duration("action_timeout_ms", c.action_timeout);
  duration("validation_timeout_ms", c.validation_timeout);
  return c;
}

}  // namespace cmax::remediate
