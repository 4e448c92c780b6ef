// A stored audit regraded from its own evidence: a local run's evidence items, a Slurm run's
// nodes (and the ones that did not answer), today's table deciding; what changed, in words.
#include "audit/review.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/grading.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

const WallTime kNow = *ParseIso8601("2026-09-28T00:00:00Z");

RunRecord Audited(const std::string& target, std::vector<EvidenceItem> evidence) {
  RunRecord record;
  record.run.id = 7;
  record.run.command = "audit";
  record.run.target = target;
  record.evidence = std::move(evidence);
  record.evidence.push_back({"audit.profile", json("versions").dump()});
  return record;
}

const Finding& Of(const std::vector<Finding>& findings, std::string_view id) {
  for (const Finding& f : findings) {
    if (f.check_id == id) return f;
  }
  ADD_FAILURE() << "no " << id;
  return findings.front();
}

TEST(Regrade, ALocalRunFromItsEvidenceItems) {
  const RunRecord record = Audited("local/standalone", {{"audit.target", json("standalone").dump()},
                                                        {"software.nvcc.release", "\"12.8\""}});
  auto findings = RegradeRecord(record, MinimumTable::Builtin(), kNow);
  ASSERT_TRUE(findings) << findings.error().message;
  EXPECT_EQ(Of(*findings, "versions.cuda-toolkit").status, CheckStatus::kFail);
  EXPECT_EQ(Of(*findings, "versions.runc").status, CheckStatus::kUnknown);  // not in the run
  for (const Finding& f : *findings) EXPECT_EQ(f.check_id.substr(0, 9), "versions.");
}

TEST(Regrade, ASlurmRunNodeByNodeTheWorstDeciding) {
  const json gpu1 = {{"node", "gpu1"}, {"evidence", {{"software.nvcc.release", "13.1"}}}};
  const json gpu2 = {{"node", "gpu2"}, {"evidence", {{"software.nvcc.release", "12.8"}}}};
  const json coverage = {{"unreachable", {{"gpu3", "Slurm says it is not responding"}}}};
  const RunRecord record = Audited("slurm/all", {{"audit.target", json("slurm").dump()},
                                                 {"audit.node.gpu1", gpu1.dump()},
                                                 {"audit.node.gpu2", gpu2.dump()},
                                                 {"audit.coverage", coverage.dump()}});
  auto findings = RegradeRecord(record, MinimumTable::Builtin(), kNow);
  ASSERT_TRUE(findings) << findings.error().message;
  const Finding& cuda = Of(*findings, "versions.cuda-toolkit");
  EXPECT_EQ(cuda.status, CheckStatus::kFail);
  EXPECT_NE(cuda.message.find("gpu2: "), std::string::npos) << cuda.message;
  EXPECT_NE(cuda.message.find("of 3 nodes"), std::string::npos) << cuda.message;
  EXPECT_NE(cuda.message.find("UNKNOWN on 1"), std::string::npos) << cuda.message;
}

TEST(Regrade, WhatIsNotAnAuditIsRefused) {
  RunRecord health = Audited("local/standalone", {});
  health.run.command = "health";
  EXPECT_EQ(RegradeRecord(health, MinimumTable::Builtin(), kNow).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(RegradeRecord(Audited("local/standalone", {}), MinimumTable::Builtin(), kNow))
      << "no audit.target: nothing to grade against";
}

TEST(Regrade, ChangesAreTheChecksWhoseStatusMoved) {
  const std::vector<Finding> was = {{.check_id = "a", .status = CheckStatus::kPass},
                                    {.check_id = "b", .status = CheckStatus::kFail},
                                    {.check_id = "gone", .status = CheckStatus::kPass}};
  const std::vector<Finding> now = {
      {.check_id = "a", .status = CheckStatus::kPass},
      {.check_id = "b", .status = CheckStatus::kPass, .message = "fixed"},
      {.check_id = "new", .status = CheckStatus::kWarn, .message = "odd"}};
  const std::vector<GradeChange> changes = CompareGrades(was, now);
  ASSERT_EQ(changes.size(), 3U);
  EXPECT_EQ(changes[0].check_id, "b");
  EXPECT_EQ(changes[0].was, CheckStatus::kFail);
  EXPECT_EQ(changes[0].now, CheckStatus::kPass);
  EXPECT_EQ(changes[1].check_id, "new");
  EXPECT_EQ(changes[1].message, "not graded before: odd");
  EXPECT_EQ(changes[2].check_id, "gone");
  EXPECT_EQ(changes[2].now, CheckStatus::kUnknown);

  RunRecord record = Audited("local/vm", {});
  Regrade regrade{.findings = now, .changes = changes, .was_table = "then", .now_table = "now"};
  const std::string text = RegradeText(record, regrade);
  EXPECT_NE(text.find("FAIL -> PASS    fixed"), std::string::npos) << text;
  EXPECT_NE(text.find("3 check(s) changed, 1 unchanged."), std::string::npos) << text;
  const json doc = json::parse(RegradeJson(record, regrade));
  EXPECT_EQ(doc["schema"], "cmax.audit-regrade/v1");
  EXPECT_EQ(doc["changes"][0]["was"], "FAIL");
  regrade.changes.clear();
  EXPECT_NE(RegradeText(record, regrade).find("No check changed (3 checks)."), std::string::npos);
}

}  // namespace
}  // namespace cmax::audit
