// The remediation policy, as a table: every (state, event kind) pair appears at least once, with
// the state it leads to and the actions, in order. A second test checks that the table really is
// complete, so a new state or event cannot slip in untested.
#include "remediate/policy.hpp"

#include <gtest/gtest.h>
#include <set>
#include <utility>

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;
using A = ActionKind;
using E = EventKind;
using S = NodeState;

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};
const WallTime kEarly = kT0 + 10min;  // before every timeout in the default config
const WallTime kLate = kT0 + 2h;      // after every timeout in the default config

Event Fault(Severity severity, FaultAction action, std::string device = "GPU1") {
  Event e;
  e.kind = E::kFault;
  e.severity = severity;
  e.fault_action = action;
  e.device = std::move(device);
  e.summary = "Xid 79 on " + e.device;
  return e;
}
Event Of(E kind, A action = A::kDrain) {
  Event e;
  e.kind = kind;
  e.action = action;
  return e;
}
Event Serious() {
  return Fault(Severity::kCritical, FaultAction::kResetGpu);
}
Event Medium() {
  return Fault(Severity::kMedium, FaultAction::kRestartApp);
}

// Where a node in each state usually comes from: out of service nodes got there by a serious
// fault on GPU0 at kT0.
NodeRecord In(S state) {
  NodeRecord r;
  r.state = state;
  r.since = kT0;
  if (state != S::kHealthy && state != S::kSuspect) {
    r.reason = "Xid 79 on GPU0";
    r.device = "GPU0";
    r.serious_faults = {{kT0, "GPU0"}};
  }
  if (state == S::kQuarantined) r.pending = "reset-gpu";
  return r;
}

struct Row {
  const char* name;
  S from;
  Event event;
  WallTime now;
  S to;
  std::vector<A> actions;
};

const std::vector<A> kTakeOutReset{A::kDrain, A::kRequeueJobs, A::kResetGpu};
const std::vector<A> kToRepair{A::kOpenRepair, A::kSwapInSpare};
const std::vector<A> kValidationToRepair{A::kEndValidation, A::kOpenRepair, A::kSwapInSpare};
const std::vector<A> kTakeOutRepair{A::kDrain, A::kRequeueJobs, A::kOpenRepair, A::kSwapInSpare};

std::vector<Row> Table() {
  return {
      // HEALTHY
      {"healthy critical reset", S::kHealthy, Serious(), kEarly, S::kQuarantined, kTakeOutReset},
      {"healthy reboot",
       S::kHealthy,
       Fault(Severity::kHigh, FaultAction::kRebootNode),
       kEarly,
       S::kQuarantined,
       {A::kDrain, A::kRequeueJobs, A::kRebootNode}},
      {"healthy rma", S::kHealthy, Fault(Severity::kHigh, FaultAction::kDrainAndRma), kEarly,
       S::kRepair, kTakeOutRepair},
      {"healthy support", S::kHealthy, Fault(Severity::kHigh, FaultAction::kContactSupport), kEarly,
       S::kRepair, kTakeOutRepair},
      {"healthy high, nothing to reset",
       S::kHealthy,
       Fault(Severity::kHigh, FaultAction::kNone),
       kEarly,
       S::kValidating,
       {A::kDrain, A::kRequeueJobs, A::kStartValidation}},
      {"healthy medium", S::kHealthy, Medium(), kEarly, S::kSuspect, {}},
      {"healthy low",
       S::kHealthy,
       Fault(Severity::kLow, FaultAction::kNone),
       kEarly,
       S::kHealthy,
       {}},
      {"healthy cleared", S::kHealthy, Of(E::kFaultCleared), kEarly, S::kHealthy, {}},
      {"healthy stray success", S::kHealthy, Of(E::kActionSucceeded), kEarly, S::kHealthy, {}},
      {"healthy stray failure", S::kHealthy, Of(E::kActionFailed), kEarly, S::kHealthy, {}},
      {"healthy stray pass", S::kHealthy, Of(E::kValidationPassed), kEarly, S::kHealthy, {}},
      {"healthy stray fail", S::kHealthy, Of(E::kValidationFailed), kEarly, S::kHealthy, {}},
      {"healthy timer", S::kHealthy, Of(E::kTimerExpired), kLate, S::kHealthy, {}},
      {"healthy repaired", S::kHealthy, Of(E::kRepaired), kEarly, S::kHealthy, {}},
      {"healthy retire", S::kHealthy, Of(E::kRetire), kEarly, S::kRetired, {A::kDrain}},
      // SUSPECT
      {"suspect serious", S::kSuspect, Serious(), kEarly, S::kQuarantined, kTakeOutReset},
      {"suspect medium again", S::kSuspect, Medium(), kEarly, S::kSuspect, {}},
      {"suspect cleared", S::kSuspect, Of(E::kFaultCleared), kEarly, S::kHealthy, {}},
      {"suspect timer early", S::kSuspect, Of(E::kTimerExpired), kEarly, S::kSuspect, {}},
      {"suspect timer quiet", S::kSuspect, Of(E::kTimerExpired), kLate, S::kHealthy, {}},
      {"suspect stray success", S::kSuspect, Of(E::kActionSucceeded), kEarly, S::kSuspect, {}},
      {"suspect stray failure", S::kSuspect, Of(E::kActionFailed), kEarly, S::kSuspect, {}},
      {"suspect stray pass", S::kSuspect, Of(E::kValidationPassed), kEarly, S::kSuspect, {}},
      {"suspect stray fail", S::kSuspect, Of(E::kValidationFailed), kEarly, S::kSuspect, {}},
      {"suspect repaired", S::kSuspect, Of(E::kRepaired), kEarly, S::kSuspect, {}},
      {"suspect retire", S::kSuspect, Of(E::kRetire), kEarly, S::kRetired, {A::kDrain}},
      // QUARANTINED (waiting for a GPU reset after a fault on GPU0)
      {"quarantined same GPU again", S::kQuarantined,
       Fault(Severity::kCritical, FaultAction::kResetGpu, "GPU0"), kEarly, S::kRepair, kToRepair},
      {"quarantined other GPU", S::kQuarantined, Serious(), kEarly, S::kQuarantined, {}},
      {"quarantined rma", S::kQuarantined, Fault(Severity::kHigh, FaultAction::kDrainAndRma),
       kEarly, S::kRepair, kToRepair},
      {"quarantined medium", S::kQuarantined, Medium(), kEarly, S::kQuarantined, {}},
      {"quarantined cleared", S::kQuarantined, Of(E::kFaultCleared), kEarly, S::kQuarantined, {}},
      {"quarantined reset done",
       S::kQuarantined,
       Of(E::kActionSucceeded, A::kResetGpu),
       kEarly,
       S::kValidating,
       {A::kStartValidation}},
      {"quarantined reboot done",
       S::kQuarantined,
       Of(E::kActionSucceeded, A::kRebootNode),
       kEarly,
       S::kValidating,
       {A::kStartValidation}},
      {"quarantined drain done",
       S::kQuarantined,
       Of(E::kActionSucceeded, A::kDrain),
       kEarly,
       S::kQuarantined,
       {}},
      {"quarantined reset failed",
       S::kQuarantined,
       Of(E::kActionFailed, A::kResetGpu),
       kEarly,
       S::kQuarantined,
       {A::kRebootNode}},
      {"quarantined reboot failed", S::kQuarantined, Of(E::kActionFailed, A::kRebootNode), kEarly,
       S::kRepair, kToRepair},
      {"quarantined drain failed",
       S::kQuarantined,
       Of(E::kActionFailed, A::kDrain),
       kEarly,
       S::kQuarantined,
       {A::kAlert}},
      {"quarantined stray pass",
       S::kQuarantined,
       Of(E::kValidationPassed),
       kEarly,
       S::kQuarantined,
       {}},
      {"quarantined stray fail",
       S::kQuarantined,
       Of(E::kValidationFailed),
       kEarly,
       S::kQuarantined,
       {}},
      {"quarantined timer early",
       S::kQuarantined,
       Of(E::kTimerExpired),
       kEarly,
       S::kQuarantined,
       {}},
      {"quarantined action hung", S::kQuarantined, Of(E::kTimerExpired), kLate, S::kRepair,
       kToRepair},
      {"quarantined repaired",
       S::kQuarantined,
       Of(E::kRepaired),
       kEarly,
       S::kValidating,
       {A::kStartValidation}},
      {"quarantined retire", S::kQuarantined, Of(E::kRetire), kEarly, S::kRetired, {}},
      // VALIDATING
      {"validating passed",
       S::kValidating,
       Of(E::kValidationPassed),
       kEarly,
       S::kReintroduced,
       {A::kEndValidation, A::kResume}},
      {"validating failed", S::kValidating, Of(E::kValidationFailed), kEarly, S::kRepair,
       kValidationToRepair},
      {"validating could not start", S::kValidating, Of(E::kActionFailed, A::kStartValidation),
       kEarly, S::kRepair, kValidationToRepair},
      {"validating other failure",
       S::kValidating,
       Of(E::kActionFailed, A::kDrain),
       kEarly,
       S::kValidating,
       {}},
      {"validating hung", S::kValidating, Of(E::kTimerExpired), kLate, S::kRepair,
       kValidationToRepair},
      {"validating timer early", S::kValidating, Of(E::kTimerExpired), kEarly, S::kValidating, {}},
      {"validating serious", S::kValidating, Serious(), kEarly, S::kRepair, kValidationToRepair},
      {"validating medium", S::kValidating, Medium(), kEarly, S::kValidating, {}},
      {"validating cleared", S::kValidating, Of(E::kFaultCleared), kEarly, S::kValidating, {}},
      {"validating stray success",
       S::kValidating,
       Of(E::kActionSucceeded),
       kEarly,
       S::kValidating,
       {}},
      {"validating repaired", S::kValidating, Of(E::kRepaired), kEarly, S::kValidating, {}},
      {"validating retire",
       S::kValidating,
       Of(E::kRetire),
       kEarly,
       S::kRetired,
       {A::kEndValidation}},
      // REINTRODUCED (on probation)
      {"reintroduced serious", S::kReintroduced, Serious(), kEarly, S::kRepair, kTakeOutRepair},
      {"reintroduced medium", S::kReintroduced, Medium(), kEarly, S::kSuspect, {}},
      {"reintroduced probation over",
       S::kReintroduced,
       Of(E::kTimerExpired),
       kLate,
       S::kHealthy,
       {}},
      {"reintroduced timer early",
       S::kReintroduced,
       Of(E::kTimerExpired),
       kEarly,
       S::kReintroduced,
       {}},
      {"reintroduced resume failed",
       S::kReintroduced,
       Of(E::kActionFailed, A::kResume),
       kEarly,
       S::kReintroduced,
       {A::kAlert}},
      {"reintroduced cleared",
       S::kReintroduced,
       Of(E::kFaultCleared),
       kEarly,
       S::kReintroduced,
       {}},
      {"reintroduced resume done",
       S::kReintroduced,
       Of(E::kActionSucceeded, A::kResume),
       kEarly,
       S::kReintroduced,
       {}},
      {"reintroduced stray pass",
       S::kReintroduced,
       Of(E::kValidationPassed),
       kEarly,
       S::kReintroduced,
       {}},
      {"reintroduced stray fail",
       S::kReintroduced,
       Of(E::kValidationFailed),
       kEarly,
       S::kReintroduced,
       {}},
      {"reintroduced repaired", S::kReintroduced, Of(E::kRepaired), kEarly, S::kReintroduced, {}},
      {"reintroduced retire", S::kReintroduced, Of(E::kRetire), kEarly, S::kRetired, {A::kDrain}},
      // REPAIR
      {"repair repaired",
       S::kRepair,
       Of(E::kRepaired),
       kEarly,
       S::kValidating,
       {A::kStartValidation}},
      {"repair fault", S::kRepair, Serious(), kEarly, S::kRepair, {}},
      {"repair cleared", S::kRepair, Of(E::kFaultCleared), kEarly, S::kRepair, {}},
      {"repair stray success", S::kRepair, Of(E::kActionSucceeded), kEarly, S::kRepair, {}},
      {"repair stray failure", S::kRepair, Of(E::kActionFailed), kEarly, S::kRepair, {}},
      {"repair stray pass", S::kRepair, Of(E::kValidationPassed), kEarly, S::kRepair, {}},
      {"repair stray fail", S::kRepair, Of(E::kValidationFailed), kEarly, S::kRepair, {}},
      {"repair timer", S::kRepair, Of(E::kTimerExpired), kLate, S::kRepair, {}},
      {"repair retire", S::kRepair, Of(E::kRetire), kEarly, S::kRetired, {}},
      // RETIRED
      {"retired brought back",
       S::kRetired,
       Of(E::kRepaired),
       kEarly,
       S::kValidating,
       {A::kStartValidation}},
      {"retired fault", S::kRetired, Serious(), kEarly, S::kRetired, {}},
      {"retired cleared", S::kRetired, Of(E::kFaultCleared), kEarly, S::kRetired, {}},
      {"retired stray success", S::kRetired, Of(E::kActionSucceeded), kEarly, S::kRetired, {}},
      {"retired stray failure", S::kRetired, Of(E::kActionFailed), kEarly, S::kRetired, {}},
      {"retired stray pass", S::kRetired, Of(E::kValidationPassed), kEarly, S::kRetired, {}},
      {"retired stray fail", S::kRetired, Of(E::kValidationFailed), kEarly, S::kRetired, {}},
      {"retired timer", S::kRetired, Of(E::kTimerExpired), kLate, S::kRetired, {}},
      {"retired again", S::kRetired, Of(E::kRetire), kEarly, S::kRetired, {}},
  };
}

std::vector<A> Kinds(const std::vector<Action>& actions) {
  std::vector<A> kinds;
  for (const Action& a : actions) kinds.push_back(a.kind);
  return kinds;
}

std::string Names(const std::vector<A>& kinds) {
  std::string out;
  for (A k : kinds) out += std::string(ActionKindName(k)) + " ";
  return out;
}

TEST(Policy, Table) {
  const PolicyConfig config;
  for (const Row& row : Table()) {
    SCOPED_TRACE(row.name);
    const Decision d = Transition(In(row.from), row.event, row.now, config);
    EXPECT_EQ(NodeStateName(d.next.state), NodeStateName(row.to));
    EXPECT_EQ(Names(Kinds(d.actions)), Names(row.actions));
    EXPECT_EQ(d.next.since, d.next.state == row.from ? kT0 : row.now);
    EXPECT_FALSE(d.note.empty());
  }
}

TEST(Policy, TableCoversEveryStateAndEvent) {
  std::set<std::pair<S, E>> covered;
  for (const Row& row : Table()) covered.insert({row.from, row.event.kind});
  for (S s : {S::kHealthy, S::kSuspect, S::kQuarantined, S::kValidating, S::kReintroduced,
              S::kRepair, S::kRetired}) {
    for (E e :
         {E::kFault, E::kFaultCleared, E::kActionSucceeded, E::kActionFailed, E::kValidationPassed,
          E::kValidationFailed, E::kTimerExpired, E::kRepaired, E::kRetire}) {
      EXPECT_TRUE(covered.contains({s, e}))
          << NodeStateName(s) << " x " << EventKindName(e) << " has no row";
    }
  }
}

TEST(Policy, DrainReasonIsOwnedAndResetNamesTheGpu) {
  const Decision d = Transition(In(S::kHealthy), Serious(), kEarly, PolicyConfig{});
  ASSERT_EQ(d.actions.size(), 3U);
  EXPECT_EQ(d.actions[0].reason, "cmax: Xid 79 on GPU1");
  EXPECT_EQ(d.actions[2].device, "GPU1");
  EXPECT_EQ(d.next.pending, "reset-gpu");
  EXPECT_EQ(d.next.device, "GPU1");
  EXPECT_EQ(d.next.reason, "Xid 79 on GPU1");
}

TEST(Policy, ResetFailureThenRebootSuccessValidates) {
  const PolicyConfig config;
  Decision d = Transition(In(S::kQuarantined), Of(E::kActionFailed, A::kResetGpu), kEarly, config);
  EXPECT_EQ(d.next.pending, "reboot-node");
  d = Transition(d.next, Of(E::kActionSucceeded, A::kRebootNode), kEarly + 5min, config);
  EXPECT_EQ(d.next.state, S::kValidating);
  EXPECT_TRUE(d.next.pending.empty());
}

TEST(Policy, RepeatedFaultsOnTheNodeEscalateToRepair) {
  const PolicyConfig config;  // 3 on the node within 24 h
  NodeRecord r = In(S::kHealthy);
  r.serious_faults = {{kT0 - 3h, "GPU2"}, {kT0 - 2h, "GPU3"}};
  const Decision d = Transition(r, Serious(), kEarly, config);
  EXPECT_EQ(d.next.state, S::kRepair);
  EXPECT_EQ(Names(Kinds(d.actions)), Names(kTakeOutRepair));
  EXPECT_NE(d.note.find("3 serious faults"), std::string::npos) << d.note;
}

TEST(Policy, RepeatedFaultsOnOneGpuEscalateToRepair) {
  const PolicyConfig config;  // 2 on one GPU within 24 h
  NodeRecord r = In(S::kHealthy);
  r.serious_faults = {{kT0 - 3h, "GPU1"}};
  const Decision d = Transition(r, Serious(), kEarly, config);
  EXPECT_EQ(d.next.state, S::kRepair);
  EXPECT_NE(d.note.find("on GPU1"), std::string::npos) << d.note;
}

TEST(Policy, FaultsOutsideTheWindowAreForgotten) {
  const PolicyConfig config;
  NodeRecord r = In(S::kHealthy);
  r.serious_faults = {{kT0 - 25h, "GPU1"}, {kT0 - 24h - 1s, "GPU1"}};
  const Decision d = Transition(r, Serious(), kEarly, config);
  EXPECT_EQ(d.next.state, S::kQuarantined);
  ASSERT_EQ(d.next.serious_faults.size(), 1U);
  EXPECT_EQ(d.next.serious_faults[0].at, kEarly);
}

TEST(Policy, SpareComesInOnceAndGoesBackOnReintroduction) {
  const PolicyConfig config;
  Decision d = Transition(In(S::kHealthy), Fault(Severity::kHigh, FaultAction::kDrainAndRma),
                          kEarly, config);
  EXPECT_TRUE(d.next.spare_in_use);
  d = Transition(d.next, Of(E::kRepaired), kEarly + 1h, config);
  d = Transition(d.next, Of(E::kValidationFailed), kEarly + 2h, config);
  EXPECT_EQ(d.next.state, S::kRepair);
  EXPECT_EQ(Names(Kinds(d.actions)), Names({A::kEndValidation, A::kOpenRepair}));  // spare in
  d = Transition(d.next, Of(E::kRepaired), kEarly + 3h, config);
  d = Transition(d.next, Of(E::kValidationPassed), kEarly + 4h, config);
  EXPECT_EQ(Names(Kinds(d.actions)), Names({A::kEndValidation, A::kResume, A::kReturnSpare}));
  EXPECT_FALSE(d.next.spare_in_use);
}

TEST(Policy, NoSpareOnNvl72OrWithoutAPool) {
  PolicyConfig nvl;
  nvl.architecture = Architecture::kNvl72;
  PolicyConfig no_pool;
  no_pool.spares = false;
  for (const PolicyConfig& config : {nvl, no_pool}) {
    const Decision d = Transition(
        In(S::kHealthy), Fault(Severity::kHigh, FaultAction::kDrainAndRma), kEarly, config);
    EXPECT_EQ(d.next.state, S::kRepair);
    EXPECT_EQ(Names(Kinds(d.actions)), Names({A::kDrain, A::kRequeueJobs, A::kOpenRepair}));
    EXPECT_FALSE(d.next.spare_in_use);
  }
}

TEST(Policy, ClockGoingBackwardsNeverExpiresATimer) {
  const Decision d =
      Transition(In(S::kQuarantined), Of(E::kTimerExpired), kT0 - 5h, PolicyConfig{});
  EXPECT_EQ(d.next.state, S::kQuarantined);
}

TEST(Policy, NamesRoundTrip) {
  for (S s : {S::kHealthy, S::kSuspect, S::kQuarantined, S::kValidating, S::kReintroduced,
              S::kRepair, S::kRetired}) {
    EXPECT_EQ(ParseNodeState(NodeStateName(s)).value(), s);
  }
  EXPECT_FALSE(ParseNodeState("healthy").has_value());
  EXPECT_EQ(ParseFaultAction("reset-gpu").value(), FaultAction::kResetGpu);
  EXPECT_FALSE(ParseFaultAction("RESET_GPU").has_value());
}

}  // namespace
}  // namespace cmax::remediate
