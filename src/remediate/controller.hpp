// The controller: conditions from the store (written by agents) and results from the scheduler
// become events, the policy decides, the journal writes the decision down, and only then are the
// actions carried out through the Scheduler, each marked started and finished. One Step is one
// pass; `cmax remediate run` and `cmax agent --remediate` call it in a loop.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "remediate/fleet.hpp"
#include "remediate/journal.hpp"
#include "remediate/policy.hpp"
#include "remediate/scheduler.hpp"
#include "store/store.hpp"
#include "sys/process_runner.hpp"

namespace cmax::remediate {

struct ControllerConfig {
  PolicyConfig policy;
  BreakerConfig breaker;
  RateLimit rate;
  // Decide and say so (StepSummary::decided), carry nothing out and write nothing to the store:
  // the journal a dry run decides with is a copy in memory, so a later acting controller on the
  // same store starts from the facts, not from what the dry run imagined.
  bool dry_run = false;
  ValidationSpec validation{"true", std::chrono::minutes(30)};
  // Resets one GPU on a node: run here through /bin/sh with {node} and {device} replaced (for
  // example "ssh {node} nvidia-smi -r -i {device}"). Empty: a reset cannot be done from here,
  // the action fails and the policy reboots instead.
  std::string reset_command;
  std::vector<std::string> nodes;  // act only on these; empty: every node with conditions
  // NVL72: the trays of each rack. A rack that is down has its in-service trays drained too
  // (held), and resumed when it is back. Only a controller that sees the whole fleet (no
  // `nodes`) holds trays.
  std::map<std::string, std::vector<std::string>> racks;
  RackConfig rack;
};

struct StepSummary {
  int events = 0;       // events the policy saw (quiet timer ticks not counted)
  int transitions = 0;  // decisions recorded
  int actions_done = 0;
  int actions_failed = 0;
  int refused = 0;  // take-outs the breaker or the rate limit stopped
  bool breaker_tripped = false;
  int rack_holds = 0;     // trays drained because their rack is down
  int rack_releases = 0;  // trays resumed because their rack is back
  // Each decision in words ("gpu2: HEALTHY -> QUARANTINED on fault (Xid 79): drain, ..."): what
  // a dry run would have done, what an acting one did.
  std::vector<std::string> decided;
};

class Controller {
 public:
  Controller(store::Store& store, Scheduler& scheduler, sys::ProcessRunner& runner,
             const Clock& clock, ControllerConfig config);
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  Result<StepSummary> Step();

 private:
  // A condition turned into the policy's event.
  static Event FaultEvent(const NodeCondition& c);
  bool Watched(const std::string& node) const;
  Result<void> Handle(const std::string& node, const Event& event,
                      const std::vector<SeenMark>& seen, StepSummary& summary, int depth);
  // Whether this decision may take the node out now; records a refusal.
  Result<bool> MayTakeOut(const NodeEntry& entry, const Event& event, const Decision& decision,
                          StepSummary& summary);
  Result<void> CarryOut(const ActionRow& row, StepSummary& summary, int depth);
  // Whether `row` waits behind its node's drain or requeue that did not happen (held_); one
  // given up on is finished as not carried out.
  Result<bool> HeldBack(const ActionRow& row, StepSummary& summary);
  // Whether `row` is a reset its node no longer waits for (it moved on while the reset waited
  // for jobs to leave); one that is is finished as not carried out.
  Result<bool> Superseded(const ActionRow& row, StepSummary& summary);
  Result<std::string> Execute(const ActionRow& row, NodeEntry& entry);
  // NVL72: plans every rack from its trays' states, records holds and releases, then carries
  // out the drains and resumes still to do (so a restart finishes them).
  Result<void> StepRacks(StepSummary& summary);

  store::Store& store_;
  // The journal a dry run works on; on the heap, so that journal_ keeps pointing at it.
  std::unique_ptr<store::Database> dry_run_copy_;
  // Nodes whose drain or requeue did not happen in this pass: what would hit a tenant's job on
  // them (a requeue, a GPU reset, a reboot, a validation) waits. true: it is pending (the
  // scheduler away), and those actions stay open, in order, for the next pass; false: it failed,
  // and they are finished as not carried out.
  std::map<std::string, bool> held_;
  Journal journal_;
  Scheduler& scheduler_;
  sys::ProcessRunner& runner_;
  const Clock& clock_;
  ControllerConfig config_;
  bool policy_saved_ = false;
};

// A node's name as cmax takes it from a person: a host's name (1 to 253 bytes), nothing a
// terminal obeys and no space; it goes into drain reasons, the journal and every view.
bool IsNodeName(std::string_view node);

// A person's word about a node (`cmax remediate repaired NODE`, `retire NODE`), recorded as an
// event through the policy the controller last ran with (the defaults when none has run on this
// store); the actions it plans are carried out by the running controller. A node that is not
// IsNodeName is refused (kInvalidArgument) and nothing is written.
struct OperatorWord {
  std::string node;
  EventKind kind = EventKind::kRepaired;
  std::string who;  // the person, as the environment names them (SUDO_USER, USER)
};
struct OperatorOutcome {
  NodeState from = NodeState::kHealthy;
  NodeState to = NodeState::kHealthy;
  bool changed = false;  // false: the word changes nothing in this state (see note)
  size_t actions_planned = 0;
  std::string note;
  bool policy_of_controller = false;  // false: no controller has run here, the defaults judged
};
Result<OperatorOutcome> RecordOperatorWord(store::Store& store, const OperatorWord& word,
                                           WallTime now);

}  // namespace cmax::remediate
