// The controller's memory, in the store: every node's lifecycle record, every action with the
// time it was planned, started and finished, the history of transitions, which conditions have
// been acted on, and the circuit breaker. A decision and its planned actions are written in one
// transaction before anything is carried out, so a controller killed at any point finds on
// restart exactly what it still has to do.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "remediate/fleet.hpp"
#include "remediate/policy.hpp"
#include "store/sqlite.hpp"

namespace cmax::remediate {

struct NodeEntry {
  std::string node;
  NodeRecord record;
  std::string spare;  // the spare serving in this node's place
  // What is in flight, for the scheduler: the validation job ("job:ID"), or the node's boot
  // time before a reboot ("boot:TIME"), which tells when the reboot has happened.
  std::string handle;
};

enum class Outcome { kPlanned, kStarted, kDone, kFailed, kSkipped };
std::string_view OutcomeName(Outcome outcome);

struct ActionRow {
  int64_t id = 0;
  std::string node;
  Action action;
  Outcome outcome = Outcome::kPlanned;
  WallTime planned_at;
  std::optional<WallTime> started_at;
  std::optional<WallTime> finished_at;
  std::string detail;
  bool dry_run = false;
};

struct HistoryRow {
  int64_t id = 0;
  std::string node;
  WallTime at;
  std::string event;  // "fault", "validation-passed", ...
  std::string event_detail;
  std::string from;
  std::string to;
  std::string note;
};

// What the controller has already acted on of one condition.
struct SeenMark {
  std::string node;
  std::string key;
  uint64_t count = 0;
  bool recovered = false;
};

// An NVL72 tray cmax drained because its rack is down (not for a fault of its own). "holding":
// the drain is still to be done; "held": drained; "releasing": the resume is still to be done.
struct RackHold {
  std::string node;
  std::string rack;
  std::string state;
  std::string reason;
  WallTime since;
  std::string detail;  // what the scheduler said
};

class Journal {
 public:
  explicit Journal(store::Database& db) : db_(&db) {}

  Result<std::vector<NodeEntry>> Nodes();
  // A node never seen is HEALTHY since `now`.
  Result<NodeEntry> Node(const std::string& node, WallTime now);

  // One transaction: the node's new record, a history row, the decision's actions as planned
  // (skipped when dry_run), the conditions it consumed, and the action result it was taken on
  // (event.result_of) marked handed on. Returns the actions' ids in order.
  Result<std::vector<int64_t>> Apply(const NodeEntry& before, const Event& event,
                                     const Decision& decision, WallTime now, bool dry_run,
                                     const std::vector<SeenMark>& seen);
  // A history row without a transition: a refusal, an operator's command.
  Result<void> Note(const std::string& node, std::string_view event, const std::string& detail,
                    const std::string& note, WallTime now);
  Result<void> SaveEntry(const NodeEntry& entry, WallTime now);
  // What a decision consumed: the conditions seen, and the action result it was taken on
  // (`result_of`, an action's id; 0: none) marked handed on.
  Result<void> MarkSeen(const std::vector<SeenMark>& seen, int64_t result_of = 0);

  // Before carrying an action out (again: an action left open keeps its first start); `device`
  // records a choice made now (the spare).
  Result<void> Started(int64_t id, WallTime at, const std::string& device = "");
  // `feedback_due`: the result is yet to be handed to the policy (MarkSeen with the event's
  // result_of, in Apply or alone, clears it). A controller killed in between finds it
  // (ResultsDue).
  Result<void> Finished(int64_t id, bool ok, const std::string& detail, WallTime at,
                        bool feedback_due = false);
  // Finished actions whose result was never handed to the policy, oldest first.
  Result<std::vector<ActionRow>> ResultsDue();
  // Planned or started and not finished, oldest first: what a restarted controller redoes.
  Result<std::vector<ActionRow>> OpenActions();
  Result<std::vector<ActionRow>> Actions(const std::string& node, int limit);
  Result<std::vector<HistoryRow>> History(const std::string& node, int limit);

  // When nodes were taken out of service (drains carried out or planned, not dry runs) since
  // `since`, fleet-wide: what the circuit breaker counts.
  Result<std::vector<TakeOut>> TakeOuts(WallTime since);
  // Disruptive actions (drain, reset, reboot) on one node since `since`: the rate limit.
  Result<std::vector<WallTime>> DisruptiveActions(const std::string& node, WallTime since);

  Result<std::map<std::pair<std::string, std::string>, SeenMark>> Seen();

  Result<std::vector<RackHold>> RackHolds();
  Result<void> SaveRackHold(const RackHold& hold);
  Result<void> DropRackHold(const std::string& node);

  Result<BreakerState> Breaker();
  Result<void> SetBreaker(const BreakerState& state);

  // The policy the controller last ran with (none when no controller has run on this store).
  Result<void> SavePolicy(const PolicyConfig& policy, WallTime at);
  Result<std::optional<PolicyConfig>> SavedPolicy();

 private:
  store::Database* db_;  // never null
};

}  // namespace cmax::remediate
