// `cmax rate` reads the newest run of each command (of a provider's, with --provider), and of
// the health runs the newest of each kind: a node's passive check, a node's active checks and
// the fleet's view (`cmax --provider NAME health schedule`) follow one another in the store, so
// the newest health run alone would miss two of them.
#include "rate/rate_run.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "store/run_writer.hpp"
#include "store/sqlite.hpp"
#include "support/stop_while_blocked.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"

namespace cmax::rate {
namespace {

TEST(RateRun, AProvidersRatingReadsItsFleetViewBesideTheNodesChecks) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  SystemClock clock;
  const auto record = [&](const char* target, const char* provider, std::vector<Metric> metrics) {
    auto run = store::RecordWholeRun(path,
                                     {.command = "health",
                                      .target = target,
                                      .started_at = clock.Now(),
                                      .cmax_version = "test",
                                      .provider = provider},
                                     {}, {}, metrics, clock.Now());
    EXPECT_TRUE(run) << run.error().message;
    return run ? run->record.run.id : 0;
  };
  const int64_t passive = record("node/gpu1", "Beta", {});
  const int64_t fleet = record("active schedule", "Beta",
                               {{.name = "active.fleet_checked_share", .value = 1, .unit = "ratio"},
                                {.name = "active.fleet_pass_share", .value = 1, .unit = "ratio"}});
  record("active schedule", "Alpha",
         {{.name = "active.fleet_checked_share", .value = 0.1, .unit = "ratio"}});
  const int64_t node = record("active checks (quick)", "Beta", {});
  sys::LocalFileSystem fs;
  auto rating = RateStoredRuns({.provider = "Beta"}, {.db_path = path, .fs = &fs, .clock = &clock});
  ASSERT_TRUE(rating) << rating.error().message;
  EXPECT_EQ(rating->runs, (std::vector<int64_t>{node, fleet, passive}));  // newest first
  bool weekly = false;
  for (const ItemRating& item : rating->items) {
    if (item.id != "monitoring.active-checks-weekly") continue;
    weekly = true;
    EXPECT_EQ(item.score, 1.0) << item.evidence;  // Beta's, not Alpha's 0.1
  }
  EXPECT_TRUE(weekly);
  // Without --provider: the newest of each kind, whoever recorded it.
  auto all = RateStoredRuns({}, {.db_path = path, .fs = &fs, .clock = &clock});
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->runs.size(), 3U);
  EXPECT_NE(std::ranges::find(all->runs, passive), all->runs.end());
}

// A store handed over whose run ids are not cmax's (a negative one, set by hand): plain `rate`
// rates the newest run by the id the store gives, rather than refusing it as if typed ("'-5' is
// not a run id", exit 2, with nothing typed).
TEST(RateRun, TheNewestRunIsRatedWhateverItsId) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  SystemClock clock;
  auto run = store::RecordWholeRun(
      path,
      {.command = "health", .target = "node/gpu1", .started_at = clock.Now(), .cmax_version = "t"},
      {}, {}, {}, clock.Now());
  ASSERT_TRUE(run) << run.error().message;
  {
    auto db = store::Database::Open(path, false, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Execute("UPDATE runs SET id = -5"));
  }
  sys::LocalFileSystem fs;
  auto rating = RateStoredRuns({}, {.db_path = path, .fs = &fs, .clock = &clock});
  ASSERT_TRUE(rating) << rating.error().message;
  EXPECT_EQ(rating->runs, std::vector<int64_t>{-5});
}

// A rubric or attestation named as a FIFO waits for its writer; Ctrl-C or SIGTERM meanwhile is
// an interruption (exit 128+N), not a file that cannot be read (exit 2, "Interrupted system
// call").
TEST(RateRun, AStopWhileARatingFileWaitsIsAnInterruption) {
  testing::TempDir dir;
  const std::string fifo = dir.File("rubric.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  sys::LocalFileSystem fs;
  SystemClock clock;
  for (const bool rubric : {true, false}) {
    RateOptions options;
    (rubric ? options.rubric : options.attestation) = fifo;
    auto files = testing::WithAStopWhileBlocked([&] {
      return LoadRatingFiles(options, {.db_path = dir.File("cmax.db"), .fs = &fs, .clock = &clock});
    });
    ASSERT_FALSE(files);
    EXPECT_EQ(files.error().code, ErrorCode::kInterrupted) << files.error().message;
  }
}

}  // namespace
}  // namespace cmax::rate
