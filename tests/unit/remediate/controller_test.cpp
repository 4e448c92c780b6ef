// The controller against a real SQLite store and a stand-in scheduler that keeps node states in
// memory and records every call: the whole loop, a restart after a crash at every point, the
// circuit breaker, dry runs and a scheduler that is away. The same controller drives the real
// Slurm lab in tests/integration/remediate_lab_test.cpp.
#include "remediate/controller.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <map>

#include "remediate/views.hpp"
#include "support/conditions.hpp"
#include "support/fake_process_runner.hpp"
#include "support/temp_dir.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;

// A stand-in scheduler: nodes in memory, every call recorded as "verb node".
class FakeScheduler final : public Scheduler {
 public:
  explicit FakeScheduler(int nodes) {
    for (int i = 1; i <= nodes; ++i) nodes_["gpu" + std::to_string(i)] = {};
    nodes_["spare1"] = {};
  }
  struct State {
    bool drain = false;
    std::string reason;
    std::string boot = "2026-11-30T00:00:00";
  };
  Result<std::vector<SchedulerNode>> Nodes() override {
    if (away_nodes > 0 && away_nodes-- > 0) return Fail(ErrorCode::kUnavailable, "controller away");
    std::vector<SchedulerNode> out;
    for (const auto& [name, s] : nodes_)
      out.push_back({name, s.drain ? "drained" : "idle", s.drain, s.reason, {}});
    return out;
  }
  Result<std::vector<TakeOut>> CmaxTakeOuts() override { return elsewhere; }
  Result<std::string> Drain(const std::string& node, const std::string& reason) override {
    if (Away()) return Fail(ErrorCode::kUnavailable, "controller away");
    if (drain_fails) return Fail(ErrorCode::kIo, "scontrol: error: Invalid user for SlurmUser");
    State& s = nodes_.at(node);
    if (s.drain)
      return std::string(IsCmaxReason(s.reason) ? "already drained by cmax" : "someone else");
    calls.push_back("drain " + node);
    s = {true, reason, s.boot};
    return std::string("drained");
  }
  Result<std::string> Resume(const std::string& node) override {
    State& s = nodes_.at(node);
    if (!s.drain) return std::string("nothing to resume");
    if (!IsCmaxReason(s.reason)) return Fail(ErrorCode::kPermissionDenied, "operator drain");
    calls.push_back("resume " + node);
    s.drain = false;
    return std::string("resumed");
  }
  Result<std::string> RequeueJobs(const std::string& node) override {
    calls.push_back("requeue " + node);
    return std::string("requeued 7");
  }
  Result<std::vector<std::string>> JobsOn(const std::string&) override {
    if (jobs_unknown) return Fail(ErrorCode::kIo, "squeue: error: slurm_load_jobs");
    return jobs_left;
  }
  Result<std::string> Reboot(const std::string& node, const std::string&) override {
    calls.push_back("reboot " + node);
    return std::string("reboot requested");
  }
  Result<std::string> BootTime(const std::string& node) override { return nodes_.at(node).boot; }
  Result<std::string> StartValidation(const std::string& node, const ValidationSpec&) override {
    calls.push_back("validate " + node);
    nodes_.at(node).drain = false;  // inside its reservation
    return std::string("42");
  }
  Result<ValidationStatus> PollValidation(const std::string&, const std::string&) override {
    return ValidationStatus{validation, "exit 0"};
  }
  Result<std::string> EndValidation(const std::string& node, bool passed,
                                    const std::string& reason) override {
    calls.push_back(std::string(passed ? "end-pass " : "end-fail ") + node);
    if (!passed) nodes_.at(node) = {true, reason, nodes_.at(node).boot};
    return std::string("ended");
  }
  Result<std::string> PickSpare() override {
    if (no_spare) return Fail(ErrorCode::kUnavailable, "no idle spare in partition spares");
    return std::string("spare1");
  }
  Result<std::string> SwapInSpare(const std::string& spare) override {
    calls.push_back("spare-in " + spare);
    return std::string("in");
  }
  Result<std::string> ReturnSpare(const std::string& spare) override {
    calls.push_back("spare-out " + spare);
    return std::string("out");
  }

  bool Away() {
    if (away_calls > 0) {
      --away_calls;
      return true;
    }
    return false;
  }
  std::map<std::string, State> nodes_;
  std::vector<std::string> calls;
  ValidationState validation = ValidationState::kRunning;
  int away_calls = 0;                  // drains that find the controller away
  bool drain_fails = false;            // every drain fails outright (not away)
  bool no_spare = false;               // no idle spare (kUnavailable, as Slurm's adapter says)
  int away_nodes = 0;                  // node listings that do
  std::vector<TakeOut> elsewhere;      // nodes other controllers took out
  std::vector<std::string> jobs_left;  // still on a node after their requeue (an epilog ...)
  bool jobs_unknown = false;           // the job listing fails
};

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::Open({.path = dir_.File("cmax.db")});
    ASSERT_TRUE(s) << s.error().message;
    store_.emplace(std::move(*s));
    config_.reset_command = "true";
    config_.validation = {"true", 30min};
  }
  Controller Make() { return Controller(*store_, sched_, runner_, clock_, config_); }
  // What the agent on `node` would write for an Xid.
  void Xid(const std::string& node, int code, const std::string& action, uint64_t count = 1,
           bool recovered = false, const std::string& device = "0000:17:00") {
    NodeCondition c = testing::XidCondition(node, code, action, clock_.Now(), device);
    c.count = count;
    c.recovered = recovered;
    ASSERT_TRUE(store_->SaveConditions({c}, {}));
  }
  NodeState State(const std::string& node) {
    return Journal(store_->Db()).Node(node, clock_.Now()).value().record.state;
  }
  // The decision on an Xid 79 on gpu2, written as the controller writes it (drain, requeue,
  // reset planned), and nothing carried out: where a killed controller stops.
  Result<std::vector<int64_t>> DecideXid79OnGpu2(Journal& journal) {
    NodeEntry entry = journal.Node("gpu2", kT0).value();
    Event e;
    e.kind = EventKind::kFault;
    e.severity = Severity::kCritical;
    e.fault_action = FaultAction::kResetGpu;
    e.device = "0000:17:00";
    e.summary = "Xid 79 on 0000:17:00";
    const Decision d = Transition(entry.record, e, kT0, config_.policy);
    return journal.Apply(entry, e, d, kT0, false, {{"gpu2", "xid/0000:17:00/79", 1, false}});
  }
  StepSummary Step() {
    Controller c = Make();
    auto s = c.Step();
    EXPECT_TRUE(s) << s.error().message;
    return s.value_or(StepSummary{});
  }

  testing::TempDir dir_;
  std::optional<store::Store> store_;
  FakeScheduler sched_{4};
  testing::FakeProcessRunner runner_;
  ManualClock clock_{kT0};
  ControllerConfig config_;
};

TEST_F(ControllerTest, Xid79AllTheWayBackIntoService) {
  runner_.AnswerStdout("true", "");  // stands in for the reset command
  Xid("gpu2", 79, "reset-gpu");
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kValidating);
  // Every result was handed on as it came: none is left for a restart to hand on again.
  EXPECT_TRUE(Journal(store_->Db()).ResultsDue().value().empty());
  EXPECT_EQ(sched_.calls,
            (std::vector<std::string>{"drain gpu2", "requeue gpu2", "validate gpu2"}));
  ASSERT_EQ(runner_.calls.size(), 1U);
  EXPECT_EQ(runner_.calls[0].argv[0], "true");

  Step();  // validation still running: nothing changes
  EXPECT_EQ(State("gpu2"), NodeState::kValidating);
  sched_.validation = ValidationState::kPassed;
  clock_.Advance(2min);
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kReintroduced);
  EXPECT_EQ(sched_.calls.back(), "end-pass gpu2");
  clock_.Advance(61min);
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kHealthy);

  Journal journal(store_->Db());
  const auto history = journal.History("gpu2", 100).value();
  std::vector<std::string> path;
  for (const HistoryRow& h : history) path.push_back(h.from + ">" + h.to);
  EXPECT_EQ(path, (std::vector<std::string>{"HEALTHY>QUARANTINED", "QUARANTINED>VALIDATING",
                                            "VALIDATING>REINTRODUCED", "REINTRODUCED>HEALTHY"}));
  EXPECT_EQ(history[0].event_detail, "Xid 79 on 0000:17:00");
  // A named vector: a range-for over `.value()` of a temporary Result reads freed memory.
  const std::vector<ActionRow> all = journal.Actions("gpu2", 100).value();
  for (const ActionRow& a : all) {
    EXPECT_EQ(a.outcome, Outcome::kDone) << ActionKindName(a.action.kind) << " " << a.detail;
    EXPECT_TRUE(a.started_at.has_value());
    EXPECT_TRUE(a.finished_at.has_value());
  }
  EXPECT_TRUE(journal.OpenActions().value().empty());
}

TEST_F(ControllerTest, ASeenConditionIsNotActedOnTwiceButAGrownOneIs) {
  Xid("gpu2", 13, "restart-app");  // critical by our stand-in severity: serious
  Step();
  const size_t calls = sched_.calls.size();
  Step();
  EXPECT_EQ(sched_.calls.size(), calls);
  const auto faults =
      Journal(store_->Db()).Node("gpu2", clock_.Now()).value().record.serious_faults;
  EXPECT_EQ(faults.size(), 1U);
  Xid("gpu2", 13, "restart-app", 2);
  Step();
  EXPECT_EQ(Journal(store_->Db()).Node("gpu2", clock_.Now()).value().record.serious_faults.size(),
            2U);
}

TEST_F(ControllerTest, NoResetCommandMeansReboot) {
  config_.reset_command.clear();
  Xid("gpu3", 79, "reset-gpu");
  Step();
  EXPECT_EQ(State("gpu3"), NodeState::kQuarantined);
  EXPECT_EQ(sched_.calls, (std::vector<std::string>{"drain gpu3", "requeue gpu3", "reboot gpu3"}));
  Step();  // not booted yet
  EXPECT_EQ(State("gpu3"), NodeState::kQuarantined);
  sched_.nodes_["gpu3"].boot = "2026-11-30T01:00:00";
  Step();
  EXPECT_EQ(State("gpu3"), NodeState::kValidating);
  EXPECT_EQ(sched_.calls.back(), "validate gpu3");
}

// Killed after it asked for the reboot and before it wrote the reboot down as done: the node
// that has rebooted since is not rebooted again; one whose boot time is unchanged (the asking
// may never have reached Slurm) is asked again.
TEST_F(ControllerTest, RestartAfterACrashMidRebootNeverRebootsTwice) {
  config_.reset_command.clear();
  Xid("gpu3", 79, "reset-gpu");
  Step();
  ASSERT_EQ(sched_.calls.back(), "reboot gpu3");
  // As the killed controller left it: started, not finished.
  const auto reopen = [&](const std::string& node) {
    ASSERT_TRUE(store_->Db().Execute(
        "UPDATE remediation_actions SET outcome = 'started', finished_at = NULL "
        "WHERE action = 'reboot-node' AND node = '" +
        node + "'"));
  };
  reopen("gpu3");
  sched_.nodes_["gpu3"].boot = "2026-11-30T01:00:00";  // it rebooted meanwhile
  Step();
  EXPECT_EQ(std::ranges::count(sched_.calls, "reboot gpu3"), 1);
  EXPECT_EQ(State("gpu3"), NodeState::kValidating);

  Xid("gpu2", 79, "reset-gpu");
  Step();
  ASSERT_EQ(sched_.calls.back(), "reboot gpu2");
  reopen("gpu2");
  Step();  // no new boot time: asked again
  EXPECT_EQ(std::ranges::count(sched_.calls, "reboot gpu2"), 2);
}

TEST_F(ControllerTest, RestartAfterACrashBetweenPlanAndActionDrainsExactlyOnce) {
  // The controller wrote its decision and died before carrying anything out.
  Journal journal(store_->Db());
  const auto ids = DecideXid79OnGpu2(journal);
  ASSERT_TRUE(ids);
  // ... and a second time it died after the drain had started but before it was written done.
  ASSERT_TRUE(journal.Started(ids->at(0), kT0));
  sched_.nodes_["gpu2"] = {true, "cmax: Xid 79 on 0000:17:00"};
  Xid("gpu2", 79, "reset-gpu");

  runner_.AnswerStdout("true", "");
  Step();
  EXPECT_EQ(std::ranges::count(sched_.calls, "drain gpu2"), 0);  // it was already drained
  EXPECT_EQ(std::ranges::count(sched_.calls, "requeue gpu2"), 1);
  EXPECT_EQ(std::ranges::count(sched_.calls, "validate gpu2"), 1);
  EXPECT_EQ(State("gpu2"), NodeState::kValidating);
  EXPECT_TRUE(journal.OpenActions().value().empty());
  EXPECT_EQ(journal.Actions("gpu2", 10).value().front().detail, "already drained by cmax");
}

// Killed between carrying an action out and deciding on its result: the GPU reset is done and
// written down, the validation it leads to not yet started. The next controller hands the result
// to the policy (the node validates) rather than leave it for the action timeout (REPAIR), and
// neither resets again nor hands it on twice.
TEST_F(ControllerTest, RestartAfterACrashBetweenAnActionAndItsResultCarriesOn) {
  Journal journal(store_->Db());
  ASSERT_TRUE(DecideXid79OnGpu2(journal));
  const std::vector<ActionRow> planned = journal.Actions("gpu2", 10).value();
  ASSERT_EQ(planned.back().action.kind, ActionKind::kResetGpu);
  sched_.nodes_["gpu2"] = {true, "cmax: Xid 79 on 0000:17:00"};
  for (const ActionRow& row : planned) {
    const bool reset = row.action.kind == ActionKind::kResetGpu;
    ASSERT_TRUE(journal.Finished(row.id, true, reset ? "GPU reset" : "done", kT0, reset));
  }
  ASSERT_EQ(journal.ResultsDue().value().size(), 1U);
  ASSERT_EQ(State("gpu2"), NodeState::kQuarantined);

  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kValidating);
  EXPECT_EQ(std::ranges::count(sched_.calls, "validate gpu2"), 1);
  EXPECT_TRUE(runner_.calls.empty()) << "the reset command ran again";
  EXPECT_TRUE(journal.ResultsDue().value().empty());
  Step();
  EXPECT_EQ(std::ranges::count(sched_.calls, "validate gpu2"), 1);
}

// A drain that finds the scheduler away stays open, and the node's later actions wait behind
// it: a requeue or a GPU reset on a node that was not drained would hit the tenant's job. The
// next pass carries them out in order.
TEST_F(ControllerTest, SchedulerAwayKeepsTheActionPendingUntilItIsBack) {
  runner_.AnswerStdout("true", "");
  sched_.away_calls = 1;  // the drain finds the controller away
  Xid("gpu2", 79, "reset-gpu");
  Step();
  Journal journal(store_->Db());
  const std::vector<ActionRow> open = journal.OpenActions().value();
  ASSERT_EQ(open.size(), 3U);
  EXPECT_EQ(open[0].action.kind, ActionKind::kDrain);
  EXPECT_EQ(open[1].action.kind, ActionKind::kRequeueJobs);
  EXPECT_EQ(open[2].action.kind, ActionKind::kResetGpu);
  EXPECT_FALSE(sched_.nodes_["gpu2"].drain);
  EXPECT_TRUE(sched_.calls.empty());
  EXPECT_TRUE(runner_.calls.empty()) << "a GPU reset on a node that was not drained";
  Step();
  EXPECT_EQ(sched_.calls,
            (std::vector<std::string>{"drain gpu2", "requeue gpu2", "validate gpu2"}));
  EXPECT_EQ(runner_.calls.size(), 1U);  // the reset, after the drain and the requeue
  EXPECT_TRUE(journal.OpenActions().value().empty());
}

TEST_F(ControllerTest, SchedulerAwayBeforeTheDecisionKeepsTheFaultForTheNextStep) {
  runner_.AnswerStdout("true", "");
  sched_.away_nodes = 1;  // the breaker cannot count the fleet
  Xid("gpu2", 79, "reset-gpu");
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kHealthy);
  EXPECT_TRUE(sched_.calls.empty());
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kValidating);
  EXPECT_EQ(std::ranges::count(sched_.calls, "drain gpu2"), 1);
}

TEST_F(ControllerTest, BreakerTripsWhenThreeOfFourFailAtOnce) {
  FakeScheduler four(3);  // gpu1-3 and spare1: a fleet of four
  Controller c(*store_, four, runner_, clock_, config_);
  runner_.AnswerStdout("true", "");
  for (const char* node : {"gpu1", "gpu2", "gpu3"}) Xid(node, 79, "reset-gpu");
  auto s = c.Step();
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->breaker_tripped);
  EXPECT_EQ(s->refused, 1);
  EXPECT_EQ(std::ranges::count_if(four.calls,
                                  [](const std::string& x) { return x.starts_with("drain"); }),
            2);
  Journal journal(store_->Db());
  EXPECT_TRUE(journal.Breaker().value().tripped);
  EXPECT_EQ(journal.Breaker().value().reason, "3 of 4 nodes taken out within 5m00s (limit 50%)");
  // Tripped: nothing more happens, even later.
  clock_.Advance(1h);
  const size_t calls = four.calls.size();
  EXPECT_TRUE(c.Step()->breaker_tripped);
  EXPECT_EQ(four.calls.size(), calls);
  // A person resets it; the refused fault was kept and is acted on now.
  ASSERT_TRUE(journal.SetBreaker({}));
  ASSERT_TRUE(c.Step());
  EXPECT_EQ(std::ranges::count_if(four.calls,
                                  [](const std::string& x) { return x.starts_with("drain"); }),
            3);
}

TEST_F(ControllerTest, BreakerCountsNodesOtherControllersTookOut) {
  // gpu1 and gpu2 were drained by their own agents, which write to their own stores.
  sched_.elsewhere = {{"gpu1", clock_.Now() - 1min}, {"gpu2", clock_.Now() - 2min}};
  Xid("gpu3", 79, "reset-gpu");  // a fleet of 5: the third node would be 60%
  const StepSummary s = Step();
  EXPECT_TRUE(s.breaker_tripped);
  EXPECT_TRUE(sched_.calls.empty());
}

TEST_F(ControllerTest, FailedValidationGoesToRepairWithTheSpareAndBack) {
  runner_.AnswerStdout("true", "");
  Xid("gpu2", 79, "reset-gpu");
  Step();
  sched_.validation = ValidationState::kFailed;
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kRepair);
  EXPECT_TRUE(sched_.nodes_["gpu2"].drain);
  EXPECT_EQ(sched_.nodes_["gpu2"].reason, "cmax: validation failed");
  EXPECT_EQ(std::ranges::count(sched_.calls, "spare-in spare1"), 1);
  Journal journal(store_->Db());
  EXPECT_EQ(journal.Node("gpu2", kT0).value().spare, "spare1");

  // Repaired by a person: validated again, passes, the spare goes back.
  NodeEntry entry = journal.Node("gpu2", kT0).value();
  Event repaired;
  repaired.kind = EventKind::kRepaired;
  const Decision d = Transition(entry.record, repaired, clock_.Now(), config_.policy);
  ASSERT_TRUE(journal.Apply(entry, repaired, d, clock_.Now(), false, {}));
  sched_.validation = ValidationState::kPassed;
  Step();  // carries out the start-validation the operator's event planned
  Step();  // sees it passed
  EXPECT_EQ(State("gpu2"), NodeState::kReintroduced);
  EXPECT_EQ(sched_.calls.back(), "spare-out spare1");
  EXPECT_EQ(journal.Node("gpu2", kT0).value().spare, "");
}

// A drain that fails outright (not the scheduler away) is given up on: what would hit the
// tenant's job on the node (the requeue, the GPU reset) is not carried out after it.
TEST_F(ControllerTest, ADrainThatFailsStopsTheRequeueAndTheResetAfterIt) {
  runner_.AnswerStdout("true", "");
  sched_.drain_fails = true;
  Xid("gpu2", 79, "reset-gpu");
  const StepSummary s = Step();
  EXPECT_EQ(std::ranges::count(sched_.calls, "requeue gpu2"), 0);
  EXPECT_TRUE(runner_.calls.empty()) << "a GPU reset on a node that was not drained";
  EXPECT_GE(s.actions_failed, 3);  // the drain, then the requeue and the reset not carried out
  const std::vector<ActionRow> all = Journal(store_->Db()).Actions("gpu2", 20).value();
  bool said = false;
  for (const ActionRow& a : all) {
    if (a.action.kind == ActionKind::kResetGpu) {
      EXPECT_EQ(a.outcome, Outcome::kFailed);
      said = a.detail.find("drain or requeue before it did not happen") != std::string::npos;
    }
  }
  EXPECT_TRUE(said);
}

// A requeue returns before the jobs have gone: the reset waits, open, until nothing is left on
// the node, and until the scheduler can say so.
TEST_F(ControllerTest, TheResetWaitsUntilTheRequeuedJobsHaveLeft) {
  runner_.AnswerStdout("true", "");
  sched_.jobs_left = {"7", "8", "9", "10", "11", "12"};
  Xid("gpu2", 79, "reset-gpu");
  Step();
  EXPECT_EQ(sched_.calls, (std::vector<std::string>{"drain gpu2", "requeue gpu2"}));
  EXPECT_TRUE(runner_.calls.empty()) << "a GPU reset with the tenant's jobs still on the node";
  Journal journal(store_->Db());
  std::vector<ActionRow> open = journal.OpenActions().value();
  ASSERT_EQ(open.size(), 1U);
  EXPECT_EQ(open[0].action.kind, ActionKind::kResetGpu);

  sched_.jobs_left = {"7"};
  sched_.jobs_unknown = true;
  Step();
  EXPECT_TRUE(runner_.calls.empty()) << "a GPU reset when no one could say the node was empty";
  EXPECT_EQ(journal.OpenActions().value().size(), 1U);

  sched_.jobs_unknown = false;
  sched_.jobs_left.clear();
  Step();
  EXPECT_EQ(runner_.calls.size(), 1U);
  EXPECT_EQ(sched_.calls.back(), "validate gpu2");
  EXPECT_TRUE(journal.OpenActions().value().empty());
}

// Jobs that never leave (stuck completing after an Xid 79): the node goes to REPAIR at the action
// timeout, and the reset that waited is closed, never carried out later on a node that has moved
// on, even once the node is empty.
TEST_F(ControllerTest, AResetStillWaitingWhenTheNodeMovesOnIsNeverCarriedOut) {
  runner_.AnswerStdout("true", "");
  sched_.jobs_left = {"7"};
  Xid("gpu2", 79, "reset-gpu");
  Step();
  Journal journal(store_->Db());
  const std::vector<ActionRow> waiting = journal.OpenActions().value();
  ASSERT_EQ(waiting.size(), 1U);
  ASSERT_TRUE(waiting[0].started_at.has_value());
  const WallTime first_start = *waiting[0].started_at;
  clock_.Advance(10min);
  Step();
  EXPECT_EQ(*journal.OpenActions().value()[0].started_at, first_start);  // when it first began
  clock_.Advance(21min);
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kRepair);
  sched_.jobs_left.clear();
  Step();
  EXPECT_TRUE(runner_.calls.empty()) << "a GPU reset on a node that had moved on";
  EXPECT_TRUE(journal.OpenActions().value().empty());
  bool closed = false;
  const std::vector<ActionRow> all = journal.Actions("gpu2", 20).value();  // named: see above
  for (const ActionRow& a : all) {
    if (a.action.kind != ActionKind::kResetGpu) continue;
    EXPECT_EQ(a.outcome, Outcome::kFailed);
    closed = a.detail == "not carried out: the node is REPAIR now, no longer waiting for it";
  }
  EXPECT_TRUE(closed);
}

// No idle spare is not the scheduler away for the node itself: a spare that cannot be had now
// holds nothing of the node's own (its validation after a repair goes ahead).
TEST_F(ControllerTest, NoIdleSpareHoldsNothingOfTheNodesOwn) {
  runner_.AnswerStdout("true", "");
  sched_.no_spare = true;
  Xid("gpu2", 79, "reset-gpu");
  Step();
  sched_.validation = ValidationState::kFailed;
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kRepair);
  Journal journal(store_->Db());
  NodeEntry entry = journal.Node("gpu2", kT0).value();
  Event repaired;
  repaired.kind = EventKind::kRepaired;
  const Decision d = Transition(entry.record, repaired, clock_.Now(), config_.policy);
  ASSERT_TRUE(journal.Apply(entry, repaired, d, clock_.Now(), false, {}));
  const size_t validations = std::ranges::count(sched_.calls, "validate gpu2");
  sched_.validation = ValidationState::kRunning;
  Step();  // the swap-in is still pending (no spare); the validation goes ahead
  EXPECT_EQ(std::ranges::count(sched_.calls, "validate gpu2"), validations + 1);
  EXPECT_EQ(State("gpu2"), NodeState::kValidating);
}

// A dry run says what it would do and changes nothing: not the nodes, not the store's journal.
// So an acting controller after it starts from the facts: the fault the dry run "handled" is
// still to be acted on (it was marked seen, and the node quarantined, in the store: the acting
// run then never drained it).
TEST_F(ControllerTest, DryRunSaysWhatItWouldDoAndLeavesTheJournalAsItWas) {
  config_.dry_run = true;
  Xid("gpu2", 79, "reset-gpu");
  Controller dry = Make();
  const StepSummary first = dry.Step().value();
  EXPECT_TRUE(sched_.calls.empty());
  EXPECT_TRUE(runner_.calls.empty());
  ASSERT_EQ(first.decided.size(), 1U);
  EXPECT_TRUE(first.decided[0].starts_with("gpu2: HEALTHY -> QUARANTINED on fault (Xid 79"))
      << first.decided[0];
  EXPECT_NE(first.decided[0].find("; would drain"), std::string::npos) << first.decided[0];
  EXPECT_NE(PassView(first).find("  gpu2: HEALTHY -> QUARANTINED"), std::string::npos);
  // The same controller's next pass remembers what it decided: said once.
  EXPECT_TRUE(dry.Step().value().decided.empty());
  Journal journal(store_->Db());
  EXPECT_EQ(State("gpu2"), NodeState::kHealthy);
  EXPECT_TRUE(journal.Actions("gpu2", 10).value().empty());
  EXPECT_TRUE(journal.History("gpu2", 10).value().empty());
  EXPECT_TRUE(journal.Seen().value().empty());

  config_.dry_run = false;
  runner_.AnswerStdout("true", "");
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kValidating);
  ASSERT_FALSE(sched_.calls.empty());
  EXPECT_EQ(sched_.calls.front(), "drain gpu2");
}

// What an earlier acting run left open (planned, not carried out: killed, or the scheduler was
// away) is said by a dry run, never carried out.
TEST_F(ControllerTest, DryRunNeverCarriesOutWhatAnEarlierRunLeftOpen) {
  sched_.away_calls = 1;  // the drain finds the scheduler away: it stays open in the journal
  Xid("gpu2", 79, "reset-gpu");
  Step();
  const size_t calls = sched_.calls.size();
  ASSERT_FALSE(Journal(store_->Db()).OpenActions().value().empty());
  config_.dry_run = true;
  const StepSummary dry = Step();
  EXPECT_EQ(sched_.calls.size(), calls);
  EXPECT_TRUE(runner_.calls.empty());
  ASSERT_FALSE(dry.decided.empty());
  EXPECT_NE(dry.decided[0].find("gpu2: would carry out drain left started by an earlier run"),
            std::string::npos)
      << dry.decided[0];
  EXPECT_FALSE(Journal(store_->Db()).OpenActions().value().empty());  // still the acting run's
}

TEST_F(ControllerTest, OperatorDrainIsNeverResumed) {
  runner_.AnswerStdout("true", "");
  Xid("gpu2", 79, "reset-gpu");
  Step();
  sched_.nodes_["gpu2"] = {true, "bad fan, ticket 123"};  // an operator stepped in
  sched_.validation = ValidationState::kPassed;
  Step();
  EXPECT_TRUE(sched_.nodes_["gpu2"].drain);
  EXPECT_EQ(sched_.nodes_["gpu2"].reason, "bad fan, ticket 123");
  Journal journal(store_->Db());
  const auto actions = journal.Actions("gpu2", 10).value();
  const auto resume = std::ranges::find_if(
      actions, [](const ActionRow& a) { return a.action.kind == ActionKind::kResume; });
  ASSERT_NE(resume, actions.end());
  EXPECT_EQ(resume->outcome, Outcome::kFailed);
  EXPECT_EQ(actions.back().action.kind, ActionKind::kAlert);
}

TEST_F(ControllerTest, OnlyTheWatchedNodes) {
  config_.nodes = {"gpu1"};
  Xid("gpu2", 79, "reset-gpu");
  Step();
  EXPECT_TRUE(sched_.calls.empty());
}

// Conflicting conditions in one pass: a reset-worthy fault, one that needs repair, and a
// recovery, all on one node. One drain, and the worst verdict wins.
TEST_F(ControllerTest, ConflictingConditionsInOnePassDrainOnceAndTheWorstWins) {
  runner_.AnswerStdout("true", "");
  Xid("gpu2", 79, "reset-gpu", 1, false, "0000:17:00");
  Xid("gpu2", 95, "drain-and-rma", 1, false, "0000:3b:00");
  Xid("gpu2", 48, "reset-gpu", 1, /*recovered=*/true, "0000:5d:00");
  Step();
  EXPECT_EQ(State("gpu2"), NodeState::kRepair);
  EXPECT_EQ(std::count(sched_.calls.begin(), sched_.calls.end(), "drain gpu2"), 1);
  EXPECT_TRUE(sched_.nodes_.at("gpu2").drain);
  Step();  // nothing left to decide
  EXPECT_EQ(State("gpu2"), NodeState::kRepair);
  EXPECT_EQ(std::count(sched_.calls.begin(), sched_.calls.end(), "drain gpu2"), 1);
}

// NVL72: an 18-tray rack. Trays out of service in their own right count; at 3 the rack is down
// and cmax drains its other trays (held); when the trays are back, the held ones are resumed.
class RackTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    for (int i = 5; i <= 18; ++i) sched_.nodes_["gpu" + std::to_string(i)] = {};
    for (int i = 1; i <= 18; ++i) trays_.push_back("gpu" + std::to_string(i));
    config_.policy.architecture = Architecture::kNvl72;
    config_.breaker.max_fraction = 1.0;
    runner_.AnswerStdout("true", "");
  }
  int Drained() {
    int n = 0;
    for (const auto& [name, state] : sched_.nodes_) n += state.drain ? 1 : 0;
    return n;
  }
  std::vector<RackHold> Holds() { return Journal(store_->Db()).RackHolds().value(); }
  std::vector<std::string> trays_;
};

TEST_F(RackTest, ThreeTraysOutHoldTheRackAndTheirReturnReleasesIt) {
  config_.racks = {{"rack-a", trays_}};
  Xid("gpu1", 79, "reset-gpu");
  Xid("gpu2", 79, "reset-gpu");
  auto s = Step();
  EXPECT_EQ(s.rack_holds, 0);  // degraded, not down
  EXPECT_EQ(Drained(), 0);     // validating trays run inside their reservation
  EXPECT_TRUE(Holds().empty());

  Xid("gpu3", 79, "reset-gpu");
  s = Step();
  EXPECT_EQ(s.rack_holds, 15);
  ASSERT_EQ(Holds().size(), 15U);
  for (const RackHold& h : Holds()) {
    EXPECT_EQ(h.state, "held");
    EXPECT_EQ(h.reason, "cmax: rack rack-a down (3 of 18 trays out)");
  }
  EXPECT_TRUE(sched_.nodes_.at("gpu18").drain);
  EXPECT_EQ(sched_.nodes_.at("gpu18").reason, "cmax: rack rack-a down (3 of 18 trays out)");
  EXPECT_FALSE(sched_.nodes_.at("spare1").drain);  // not in the rack

  // Nothing new: no second drain.
  const size_t calls = sched_.calls.size();
  EXPECT_EQ(Step().rack_holds, 0);
  EXPECT_EQ(sched_.calls.size(), calls);

  sched_.validation = ValidationState::kPassed;
  clock_.Advance(2min);
  s = Step();
  EXPECT_EQ(s.rack_releases, 15);
  EXPECT_TRUE(Holds().empty());
  EXPECT_EQ(Drained(), 0);
  const auto history = Journal(store_->Db()).History("gpu18", 10).value();
  ASSERT_FALSE(history.empty());
}

TEST_F(RackTest, ADomainThatNeedsEveryTrayIsHeldAtOne) {
  config_.racks = {{"rack-a", trays_}};
  config_.rack.domain_survives_tray_loss = false;
  Xid("gpu7", 79, "reset-gpu");
  EXPECT_EQ(Step().rack_holds, 17);
  EXPECT_EQ(Holds().front().reason, "cmax: rack rack-a NVLink domain needs every tray (1 out)");
}

TEST_F(RackTest, HoldsThatCouldNotBeDoneAreDoneLaterAndDryRunsHoldNothing) {
  Xid("gpu1", 79, "reset-gpu");
  Xid("gpu2", 79, "reset-gpu");
  Xid("gpu3", 79, "reset-gpu");
  Step();  // no racks configured yet: three trays validating, nothing held
  EXPECT_TRUE(Holds().empty());

  config_.racks = {{"rack-a", trays_}};
  config_.dry_run = true;
  Step();
  EXPECT_TRUE(Holds().empty());
  EXPECT_EQ(Drained(), 0);

  config_.dry_run = false;
  sched_.away_calls = 5;  // the scheduler is away for the first five drains
  auto s = Step();
  EXPECT_EQ(s.rack_holds, 10);
  EXPECT_EQ(Holds().size(), 15U);
  int holding = 0;
  for (const RackHold& h : Holds()) holding += h.state == "holding" ? 1 : 0;
  EXPECT_EQ(holding, 5);
  s = Step();
  EXPECT_EQ(s.rack_holds, 5);
  EXPECT_EQ(Drained(), 15);
}

TEST_F(RackTest, APerNodeControllerHoldsNoRack) {
  config_.racks = {{"rack-a", trays_}};
  config_.nodes = {"gpu1", "gpu2", "gpu3"};
  Xid("gpu1", 79, "reset-gpu");
  Xid("gpu2", 79, "reset-gpu");
  Xid("gpu3", 79, "reset-gpu");
  EXPECT_EQ(Step().rack_holds, 0);
  EXPECT_TRUE(Holds().empty());
}

}  // namespace
}  // namespace cmax::remediate

namespace cmax::remediate {
namespace {

// `cmax remediate repaired/retire`: the word goes through the policy the controller last ran
// with, which the controller records in the store.
TEST_F(ControllerTest, AnOperatorsWordIsJudgedByTheControllersPolicy) {
  auto first = RecordOperatorWord(*store_, {"gpu3", EventKind::kRetire, "alice"}, clock_.Now());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->changed);
  EXPECT_EQ(first->from, NodeState::kHealthy);
  EXPECT_EQ(first->to, NodeState::kRetired);
  EXPECT_EQ(first->actions_planned, 1U);  // the drain, for the controller to carry out
  EXPECT_FALSE(first->policy_of_controller);

  config_.policy.probation = 7min;
  config_.policy.escalation_faults = 9;
  Step();
  auto saved = Journal(store_->Db()).SavedPolicy();
  ASSERT_TRUE(saved && saved->has_value());
  EXPECT_EQ((*saved)->probation, 7min);
  EXPECT_EQ((*saved)->escalation_faults, 9);

  auto back = RecordOperatorWord(*store_, {"gpu3", EventKind::kRepaired, "bob"}, clock_.Now());
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->policy_of_controller);
  EXPECT_EQ(back->from, NodeState::kRetired);
  EXPECT_EQ(back->to, NodeState::kValidating);
  EXPECT_EQ(State("gpu3"), NodeState::kValidating);
  // A word that changes nothing is said so, and nothing is written.
  auto nothing = RecordOperatorWord(*store_, {"gpu1", EventKind::kRepaired, ""}, clock_.Now());
  ASSERT_TRUE(nothing);
  EXPECT_FALSE(nothing->changed);
  EXPECT_EQ(nothing->actions_planned, 0U);
  EXPECT_FALSE(nothing->note.empty());
}

// The name goes into the drain reason, the journal and every view: a host's name only, and a
// refused one leaves the journal as it was.
TEST_F(ControllerTest, AnOperatorsWordForSomethingThatIsNotANodeNameIsRefused) {
  for (const std::string& bad : std::vector<std::string>{
           "", "gpu1 gpu2", "gpu1\n", "gpu\x1b[2J", "gpu\tx", std::string(254, 'n'), "gpu\xff"}) {
    auto word = RecordOperatorWord(*store_, {bad, EventKind::kRetire, "alice"}, clock_.Now());
    ASSERT_FALSE(word) << bad;
    EXPECT_EQ(word.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(word.error().message.find('\x1b'), std::string::npos);
  }
  auto nodes = Journal(store_->Db()).Nodes();
  ASSERT_TRUE(nodes);
  EXPECT_TRUE(nodes->empty());
  EXPECT_TRUE(IsNodeName("gpu-17.rack3.example.com"));
  EXPECT_TRUE(IsNodeName(std::string(253, 'n')));
}

TEST(PolicyJson, RoundTripsAndOldStoresKeepDefaults) {
  PolicyConfig c;
  c.architecture = Architecture::kNvl72;
  c.spares = false;
  c.probation = std::chrono::minutes(90);
  c.escalation_faults = 5;
  c.validation_timeout = std::chrono::minutes(12);
  const PolicyConfig back = ParsePolicyJson(PolicyJson(c)).value();
  EXPECT_EQ(back.architecture, Architecture::kNvl72);
  EXPECT_FALSE(back.spares);
  EXPECT_EQ(back.probation, std::chrono::minutes(90));
  EXPECT_EQ(back.escalation_faults, 5);
  EXPECT_EQ(back.validation_timeout, std::chrono::minutes(12));
  const PolicyConfig partial = ParsePolicyJson(R"({"probation_ms": "x", "spares": 1})").value();
  EXPECT_EQ(partial.probation, PolicyConfig{}.probation);
  EXPECT_TRUE(partial.spares);
  EXPECT_FALSE(ParsePolicyJson("not json"));
}

}  // namespace
}  // namespace cmax::remediate
