// The phases of an evaluation as values: how a phase's run ends as a phase, the finding each
// phase leaves (an UNTESTED phase is a SKIP that says why, never a PASS), and how a phase's run
// is folded into the evaluation's without two phases' evidence colliding.
#include "evaluate/phases.hpp"

#include <gtest/gtest.h>

namespace cmax::evaluate {
namespace {

TEST(Phases, ARunEndsAsAPhase) {
  const struct {
    RunState state;
    PhaseState phase;
    std::string reason;
  } cases[] = {
      {RunState::kOk, PhaseState::kRan, ""},
      {RunState::kChecksFailed, PhaseState::kFailed, "a check failed"},
      {RunState::kInterrupted, PhaseState::kUntested, "its run ended interrupted"},
      {RunState::kError, PhaseState::kUntested,
       "its run ended in error: a check could not read what it judges"},
      {RunState::kRunning, PhaseState::kUntested, "its run ended running"},
  };
  for (const auto& c : cases) {
    const PhaseOutcome out = OutcomeOfRun("endpoint", "chat", {.id = 7, .state = c.state});
    EXPECT_EQ(out.state, c.phase) << RunStateName(c.state);
    EXPECT_EQ(out.reason, c.reason);
    EXPECT_EQ(out.run_id, 7);
    EXPECT_EQ(out.kind, "endpoint");
    EXPECT_EQ(out.name, "chat");
  }
}

TEST(Phases, EachPhaseLeavesAFindingAndUntestedIsNeverAPass) {
  const Finding ran =
      PhaseFinding({.kind = "endpoint", .name = "chat", .state = PhaseState::kRan, .run_id = 12});
  EXPECT_EQ(ran.check_id, "evaluation.endpoint");
  EXPECT_EQ(ran.status, CheckStatus::kPass);
  EXPECT_EQ(ran.observed, "chat: ran (run 12)");

  const Finding failed = PhaseFinding({.kind = "endpoint",
                                       .name = "dead",
                                       .state = PhaseState::kFailed,
                                       .reason = "a check failed",
                                       .run_id = 13});
  EXPECT_EQ(failed.status, CheckStatus::kFail);
  EXPECT_EQ(failed.observed, "dead: failed (run 13)");
  EXPECT_EQ(failed.message, "dead: a check failed");
  EXPECT_EQ(failed.remediation, "cmax report 13");

  const Finding untested = PhaseFinding({.kind = "network",
                                         .name = "network",
                                         .state = PhaseState::kUntested,
                                         .reason = "cmax does not evaluate NCCL sweeps yet"});
  EXPECT_EQ(untested.status, CheckStatus::kSkip);
  EXPECT_EQ(untested.observed, "network: UNTESTED");
  EXPECT_EQ(untested.message, "UNTESTED: network: cmax does not evaluate NCCL sweeps yet");
  // A reason is outside text (an error from a server, a file name): shown safe.
  const Finding odd = PhaseFinding(
      {.kind = "endpoint", .name = "e", .state = PhaseState::kUntested, .reason = "bad \xff byte"});
  EXPECT_EQ(odd.message.find('\xff'), std::string::npos);
}

TEST(Phases, APhaseRunIsFoldedUnderItsName) {
  RunRecord run;
  run.evidence = {{"endpoint.result", "{\"ok\":true}"}};
  run.findings = {{.check_id = "endpoint.errors",
                   .status = CheckStatus::kFail,
                   .observed = "64 of 64 requests failed",
                   .message = "every request failed"},
                  {.check_id = "endpoint.client", .status = CheckStatus::kPass}};
  run.metrics = {{"endpoint.failed", {{"model", "m"}}, 64, "requests"}};
  const Folded folded = FoldPhaseRun(run, "dead");
  ASSERT_EQ(folded.evidence.size(), 1U);
  EXPECT_EQ(folded.evidence[0].key, "phase.dead.endpoint.result");
  EXPECT_EQ(folded.evidence[0].value_json, "{\"ok\":true}");
  ASSERT_EQ(folded.findings.size(), 2U);
  EXPECT_EQ(folded.findings[0].check_id, "endpoint.errors");
  EXPECT_EQ(folded.findings[0].status, CheckStatus::kFail);
  EXPECT_EQ(folded.findings[0].observed, "dead: 64 of 64 requests failed");
  EXPECT_EQ(folded.findings[0].message, "dead: every request failed");
  EXPECT_EQ(folded.findings[1].observed, "dead");
  EXPECT_EQ(folded.findings[1].message, "");
  ASSERT_EQ(folded.metrics.size(), 1U);
  EXPECT_EQ(folded.metrics[0].labels.at("phase"), "dead");
  EXPECT_EQ(folded.metrics[0].labels.at("model"), "m");
  EXPECT_EQ(folded.metrics[0].value, 64);
}

TEST(Phases, ThePhasesEvidenceListsEveryPhase) {
  const nlohmann::json json =
      PhasesJson({{.kind = "host", .name = "host", .state = PhaseState::kRan, .run_id = 3},
                  {.kind = "training",
                   .name = "training",
                   .state = PhaseState::kUntested,
                   .reason = "not yet"}});
  ASSERT_EQ(json.size(), 2U);
  EXPECT_EQ(
      json[0],
      nlohmann::json(
          {{"kind", "host"}, {"name", "host"}, {"state", "ran"}, {"reason", nullptr}, {"run", 3}}));
  EXPECT_EQ(json[1]["state"], "untested");
  EXPECT_EQ(json[1]["reason"], "not yet");
  EXPECT_EQ(json[1]["run"], nullptr);
}

}  // namespace
}  // namespace cmax::evaluate
