// Drains by cause: a table of reasons as the remediation controller, Slurm's operators and
// other tools write them, each under the cause it names; and the split read from a store's
// remediation journal by `cmax rate` (done drains only: not dry runs, not failed ones).
#include "rate/drains.hpp"

#include <gtest/gtest.h>

#include "rate/rate_run.hpp"
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

TEST(Drains, RatedFromTheStoresRemediationJournal) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  {
    auto store = store::Store::Open({.path = path});
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->BeginRun({.command = "audit"}));
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
  EXPECT_NE(RatingText(*rating).find("Drains by cause (the remediation journal): 2 in all: GPU 1, "
                                     "CPU lockup 0, filesystem 1, network 0, other 0"),
            std::string::npos)
      << RatingText(*rating);
}

}  // namespace
}  // namespace cmax::rate
