// The remediation policy as a pure function: a node's lifecycle state and an event in, the next
// state and the actions to carry out. HEALTHY -> SUSPECT -> QUARANTINED -> VALIDATING ->
// REINTRODUCED | REPAIR (| RETIRED), with the recommended action of the fault (from the XID
// catalogue) choosing between a GPU reset, a reboot and repair, and repeated faults escalating.
// Nothing here touches a scheduler; the controller carries the actions out.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::remediate {

enum class NodeState {
  kHealthy,
  kSuspect,
  kQuarantined,
  kValidating,
  kReintroduced,
  kRepair,
  kRetired
};
std::string_view NodeStateName(NodeState state);  // "HEALTHY", ...
Result<NodeState> ParseNodeState(std::string_view text);

// What the catalogue says to do about a fault (the names cmax uses everywhere).
using FaultAction = RecommendedAction;
inline Result<FaultAction> ParseFaultAction(std::string_view text) {
  return ParseAction(text);
}

enum class EventKind {
  kFault,            // a condition from the agent
  kFaultCleared,     // the condition recovered
  kActionSucceeded,  // an action the controller carried out finished (which: `action`)
  kActionFailed,
  kValidationPassed,
  kValidationFailed,  // also a validation that hung past its timeout
  kTimerExpired,      // time passed; the policy looks at how long the node has been where it is
  kRepaired,          // a person says the node is repaired (or a replacement is in)
  kRetire,            // a person takes the node out for good
};
std::string_view EventKindName(EventKind kind);

enum class ActionKind {
  kDrain,        // stop new work, reason prefixed "cmax:"
  kResume,       // only a drain cmax set is ever resumed (the adapter checks the reason)
  kRequeueJobs,  // the jobs the failure killed run again elsewhere
  kResetGpu,
  kRebootNode,
  kStartValidation,  // active checks while the node is out of service
  // Validation is over: clean up what it set up. `reason` empty: it passed; otherwise it did
  // not, and the node is taken out again with that reason before anything else.
  kEndValidation,
  kSwapInSpare,  // HGX: a hot spare takes the node's place
  kReturnSpare,
  kOpenRepair,  // the node needs hands: RMA, reseat, vendor support
  kAlert,
};
std::string_view ActionKindName(ActionKind kind);

struct Event {
  EventKind kind = EventKind::kTimerExpired;
  Severity severity = Severity::kInfo;            // kFault
  FaultAction fault_action = FaultAction::kNone;  // kFault
  std::string device;                             // kFault: the GPU or component
  std::string summary;                            // kFault: one line, ends up in the drain reason
  ActionKind action = ActionKind::kDrain;         // kActionSucceeded / kActionFailed
  // kActionSucceeded / kActionFailed: the journal's id of the action whose result this is; the
  // decision taken on it marks the result handed on, in the same transaction.
  int64_t result_of = 0;
};

struct Action {
  ActionKind kind = ActionKind::kAlert;
  std::string device;  // kResetGpu
  std::string reason;  // kDrain, kOpenRepair, kAlert

  bool operator==(const Action&) const = default;
};

enum class Architecture { kHgx, kNvl72 };

struct PolicyConfig {
  Architecture architecture = Architecture::kHgx;
  bool spares = true;  // HGX: a hot-spare pool exists
  Duration escalation_window = std::chrono::hours(24);
  int escalation_faults = 3;      // serious faults on the node in the window -> REPAIR
  int gpu_escalation_faults = 2;  // serious faults on one GPU in the window -> REPAIR
  Duration suspect_quiet = std::chrono::hours(1);      // SUSPECT -> HEALTHY when quiet this long
  Duration probation = std::chrono::hours(1);          // REINTRODUCED -> HEALTHY
  Duration action_timeout = std::chrono::minutes(30);  // a reset or reboot must finish
  Duration validation_timeout = std::chrono::minutes(30);
};

// The policy as JSON (durations in milliseconds), for the store: the controller records the one
// it runs with, and an operator's word is judged by the same one.
std::string PolicyJson(const PolicyConfig& config);
Result<PolicyConfig> ParsePolicyJson(std::string_view text);

struct FaultSeen {
  WallTime at;
  std::string device;  // empty: the node as a whole

  bool operator==(const FaultSeen&) const = default;
};

// What the policy remembers about a node; the controller keeps it in the store.
struct NodeRecord {
  NodeState state = NodeState::kHealthy;
  WallTime since;       // when it entered the state
  std::string reason;   // why it left HEALTHY
  std::string pending;  // the action in flight in QUARANTINED: "reset-gpu", "reboot-node"
  std::string device;   // the GPU the fault was on
  std::vector<FaultSeen> serious_faults;  // within the escalation window
  bool spare_in_use = false;              // a spare was brought in for this node
};

struct Decision {
  NodeRecord next;
  std::vector<Action> actions;
  std::string note;  // why, in words, for the history
};

// A serious fault takes the node out: high or critical, or an action beyond restarting the
// application.
bool IsSerious(Severity severity, FaultAction action);

// Why the faults seen so far send the node to REPAIR; empty while they do not.
std::string EscalationReason(const NodeRecord& node, const PolicyConfig& config);

Decision Transition(const NodeRecord& node, const Event& event, WallTime now,
                    const PolicyConfig& config);

}  // namespace cmax::remediate
