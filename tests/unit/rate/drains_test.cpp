// Drains by cause: a table of reasons as the remediation controller, Slurm's operators and
// other tools write them, each under the cause it names; and the split read from a store's
// remediation journal by `cmax rate` (done drains only: not dry runs, not failed ones).
#include "rate/drains.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rate/rate_run.hpp"
#include "rate/rating.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"

namespace cmax::rate {
namespace {

TEST(Drains, EachReasonUnderTheCauseItNames) {
  const std::pair<const char*, DrainCause> table[] = {
      {"cmax: Xid 79 on 0000:17:00", DrainCause::kGpu},
      {"cmax: SXid 20034 on 0000:05:00", DrainCause::kGpu},
      {"cmax: gpu_fallen_off_bus on 0000:17:00", DrainCause::kGpu},
      {"DCGM diag failed: NVLink errors", DrainCause::kGpu},
      {"ECC DBE on GPU 3", DrainCause::kGpu},
      {"cmax: soft_lockup", DrainCause::kCpuLockup},
      {"cmax: hung_task", DrainCause::kCpuLockup},
      {"cmax: rcu_stall", DrainCause::kCpuLockup},
      {"cmax: fs_timeout on 10.0.0.5:/home", DrainCause::kFilesystem},
      {"NFS server not responding", DrainCause::kFilesystem},
      {"/lustre not mounted", DrainCause::kFilesystem},
      {"cmax: nic_link_down on mlx5_0", DrainCause::kNetwork},
      {"cmax: nic_fatal on ib0", DrainCause::kNetwork},
      {"IB port 3 down", DrainCause::kNetwork},
      {"RoCE link flapping", DrainCause::kNetwork},
      {"cmax: pcie_aer on 0000:3b:00", DrainCause::kOther},
      {"cmax: oom_kill", DrainCause::kOther},
      {"cmax: machine_check", DrainCause::kOther},
      {"Kill task failed", DrainCause::kOther},
      {"panic in libfoo", DrainCause::kOther},  // "nic" and "ib" only as words of their own
      {"", DrainCause::kOther},
  };
  for (const auto& [reason, cause] : table) {
    EXPECT_EQ(DrainCauseName(CauseOfDrain(reason)), DrainCauseName(cause)) << reason;
  }
}

TEST(Drains, SplitCountsEveryCauseAndKeepsExamples) {
  const auto split = SplitDrains({"cmax: Xid 79 on a", "cmax: Xid 79 on a", "cmax: Xid 48 on b",
                                  "cmax: Xid 94 on c", "cmax: Xid 13 on d", "cmax: soft_lockup"});
  ASSERT_EQ(split.size(), 5U);
  EXPECT_EQ(split[0].cause, DrainCause::kGpu);
  EXPECT_EQ(split[0].drains, 5);
  EXPECT_EQ(split[0].examples, (std::vector<std::string>{"cmax: Xid 79 on a", "cmax: Xid 48 on b",
                                                         "cmax: Xid 94 on c"}));
  EXPECT_EQ(split[1].drains, 1);
  EXPECT_EQ(split[2].drains, 0);
  EXPECT_EQ(split[4].cause, DrainCause::kOther);
}

// A reliability run's timeline as it stores it: the step's node and what it injected, one
// "drained" observation per drain seen (on `seen_node`, by default the step's).
EvidenceItem Timeline(const std::string& key, const std::string& node, const std::string& at,
                      const std::string& reason, const nlohmann::json& record = nullptr,
                      const std::string& seen_node = "") {
  const std::string drained = seen_node.empty() ? node : seen_node;
  const nlohmann::json doc = {
      {"step", "s"},
      {"node", node},
      {"record", record},
      {"observations",
       {{{"at", at}, {"kind", "detected"}, {"node", drained}, {"detail", "x"}},
        {{"at", at}, {"kind", "drained"}, {"node", drained}, {"detail", reason}}}}};
  return {key, doc.dump()};
}

std::vector<std::string> Reasons(const std::vector<DrainRecord>& drains) {
  std::vector<std::string> out;
  for (const DrainRecord& d : drains) out.push_back(d.reason);
  return out;
}

WallTime At(const char* text) {
  return *ParseIso8601(text);
}

// The drains the provider's scheduler showed while a reliability run watched: counted once
// though the phase's run and the evaluation it was folded into both hold the timeline; the
// injected fault is the cause only of its own node's unexplained drain; anything that is not a
// timeline or not a drain is not one.
TEST(Drains, SeenInTheRatedRunsTimelines) {
  const char* kXid = "NVRM: Xid (PCI:0000:17:00): 48";
  RunRecord phase;
  phase.evidence = {
      Timeline("reliability.xid.timeline", "gpu1", "2026-12-01T10:00:00Z", "cmax: Xid 48 on a"),
      Timeline("reliability.fs.timeline", "gpu2", "2026-12-01T10:05:00Z", "nfs timeout"),
      Timeline("reliability.empty.timeline", "gpu3", "2026-12-01T10:06:00Z", ""),
      // Validated in a maintenance reservation, with no reason of the scheduler's: the fault
      // the step injected is the cause; on another node it is not.
      Timeline("reliability.maint.timeline", "gpu4", "2026-12-01T10:07:00Z",
               "in a maintenance reservation", kXid),
      Timeline("reliability.other.timeline", "gpu4", "2026-12-01T10:08:00Z", "", kXid, "gpu6"),
      Timeline("reliability.odd.timeline", "gpu5", "not a time", "", 48),
      Timeline("audit.node.gpu1", "gpu1", "2026-12-01T10:00:00Z", "not a timeline"),
      {"reliability.bad.timeline", "{not json"},
      {"reliability.list.timeline", R"({"observations": [1, "x", {"kind": 2}]})"}};
  RunRecord evaluation;
  evaluation.evidence = {Timeline("phase.xid.reliability.xid.timeline", "gpu1",
                                  "2026-12-01T10:00:00Z", "cmax: Xid 48 on a"),
                         Timeline("phase.xid.reliability.again.timeline", "gpu1",
                                  "2026-12-01T11:00:00Z", "cmax: Xid 48 on a")};
  const std::vector<DrainRecord> seen = DrainsSeenInTimelines({&evaluation, &phase});
  EXPECT_EQ(Reasons(seen),
            (std::vector<std::string>{
                "cmax: Xid 48 on a", "cmax: Xid 48 on a", "nfs timeout",
                "(the scheduler gave no reason)", std::string("after the injected ") + kXid,
                "(the scheduler gave no reason)", "(the scheduler gave no reason)"}));
  ASSERT_TRUE(seen[0].at);
  EXPECT_EQ(*seen[0].at, At("2026-12-01T10:00:00Z"));
  EXPECT_FALSE(seen.back().at);  // "not a time"

  // The journal drained gpu1 at 10:02 (its own words): the drain seen at 10:00 is that one;
  // the one at 11:00 is another. One on gpu4 at 10:07 is the reservation's drain, though the
  // words differ; an old journal drain of the same words elsewhere matches nothing.
  const std::vector<DrainRecord> journal = {
      {"gpu1", At("2026-12-01T10:02:00Z"), "cmax: xid_48 on 0000:17:00"},
      {"gpu4", At("2026-12-01T10:07:30Z"), "cmax: xid_48 on 0000:17:00"},
      {"gpu2", At("2026-11-01T10:05:00Z"), "nfs timeout"},
      {"gpu9", std::nullopt, "cmax: soft_lockup"}};
  EXPECT_EQ(
      MergeDrains(journal, seen),
      (std::vector<std::string>{
          "cmax: xid_48 on 0000:17:00", "cmax: xid_48 on 0000:17:00", "nfs timeout",
          "cmax: soft_lockup", "cmax: Xid 48 on a", "nfs timeout", "(the scheduler gave no reason)",
          "(the scheduler gave no reason)", "(the scheduler gave no reason)"}));

  // In a rating: split by cause, with where they came from, even without the journal (a
  // ranking of providers, whose journals are not theirs).
  const Rating rating = RateEvidence(Rubric::Builtin(), {.runs = {&evaluation, &phase}});
  ASSERT_TRUE(rating.drains);
  EXPECT_EQ((*rating.drains)[0].drains, 3);  // GPU
  EXPECT_EQ((*rating.drains)[2].drains, 1);  // filesystem
  EXPECT_EQ((*rating.drains)[4].drains, 3);  // other: no reason
  EXPECT_FALSE(rating.drains_journal);
  EXPECT_EQ(rating.drains_seen, 7);
  EXPECT_EQ(RatingJson(rating)["drains_from"], nlohmann::json({{"journal", nullptr}, {"seen", 7}}));
  EXPECT_NE(RatingText(rating).find(
                "Drains by cause (seen on the scheduler in the rated runs: 7): 7 in all: GPU 3"),
            std::string::npos)
      << RatingText(rating);
  // No timeline and no journal: none, not zero.
  RunRecord bare;
  EXPECT_FALSE(RateEvidence(Rubric::Builtin(), {.runs = {&bare}}).drains);
}

TEST(Drains, RatedFromTheStoresRemediationJournal) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  {
    auto store = store::Store::Open({.path = path});
    ASSERT_TRUE(store);
    const auto id = store->BeginRun({.command = "audit"});
    ASSERT_TRUE(id);
    ASSERT_TRUE(store->FinishRun(*id, RunState::kOk, 0, WallTime{}));  // rated: it ended
  }
  {
    auto db = store::Database::Open(path, false, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Execute(
        "INSERT INTO remediation_actions (node, action, reason, outcome, planned_at, dry_run) "
        "VALUES ('n1', 'drain', 'cmax: Xid 79 on 0000:17:00', 'done', 't', 0),"
        "('n2', 'drain', 'cmax: fs_timeout on nfs:/home', 'done', 't', 0),"
        "('n3', 'drain', 'cmax: Xid 48 on 0000:18:00', 'done', 't', 1),"   // a dry run
        "('n4', 'drain', 'cmax: nic_fatal on mlx5_0', 'failed', 't', 0),"  // did not happen
        "('n1', 'reset-gpu', 'cmax: Xid 79', 'done', 't', 0)"));
  }
  sys::LocalFileSystem fs;
  SystemClock clock;
  auto rating = RateStoredRuns({}, {.db_path = path, .fs = &fs, .clock = &clock});
  ASSERT_TRUE(rating) << rating.error().message;
  ASSERT_TRUE(rating->drains);
  EXPECT_EQ((*rating->drains)[0].drains, 1);  // GPU
  EXPECT_EQ((*rating->drains)[2].drains, 1);  // filesystem
  EXPECT_EQ((*rating->drains)[3].drains, 0);  // network: the failed one is not counted
  const nlohmann::json json = RatingJson(*rating);
  EXPECT_EQ(json["drains"][0]["cause"], "GPU");
  EXPECT_EQ(json["drains"][2]["examples"][0], "cmax: fs_timeout on nfs:/home");
  EXPECT_NE(RatingText(*rating).find("Drains by cause (the remediation journal: 2): 2 in all: GPU "
                                     "1, CPU lockup 0, filesystem 1, network 0, other 0"),
            std::string::npos)
      << RatingText(*rating);
}

}  // namespace
}  // namespace cmax::rate
