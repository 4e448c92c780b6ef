// A run named by a person, loaded from the store: each answer and whose fault its error is
// (kInvalidArgument: the person's, exit 2; kUnavailable: nothing to show yet, exit 3).
#include <gtest/gtest.h>

#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"
#include "sys/host.hpp"

namespace cmax::store {
namespace {

TEST(StoredRun, EachAnswerAndWhoseFaultItIs) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const auto no_store = LoadStoredRun(db, "latest");
  ASSERT_FALSE(no_store);
  EXPECT_EQ(no_store.error().code, ErrorCode::kUnavailable);
  auto run = BeginRecordedRun(db, {.command = "health", .target = "node/gpu1", .pid = 1});
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_TRUE(run->writer.Finish(0, SystemClock().Now()));
  const int64_t id = run->writer.RunId();

  const auto latest = LoadStoredRun(db, "latest");
  ASSERT_TRUE(latest) << latest.error().message;
  EXPECT_EQ(latest->run.id, id);
  EXPECT_EQ(latest->run.target, "node/gpu1");
  ASSERT_TRUE(LoadStoredRun(db, std::to_string(id), "health"));

  const auto none_of_that_kind = LoadStoredRun(db, "latest", "reliability");
  ASSERT_FALSE(none_of_that_kind);
  EXPECT_EQ(none_of_that_kind.error().code, ErrorCode::kUnavailable);
  // An empty word (a script's unset variable) is no run, not the newest.
  for (const std::string& text :
       {std::string("1x"), std::string("-3"), std::string("99"), std::string()}) {
    const auto bad = LoadStoredRun(db, text);
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument) << text << ": " << bad.error().message;
  }
  const auto other = LoadStoredRun(db, std::to_string(id), "reliability");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(other.error().message,
            "run " + std::to_string(id) + " was made by `cmax health`, not `cmax reliability`");
}

TEST(StoredRun, ARunWhoseProcessIsGoneIsShownAbandoned) {
  RunInfo run;
  run.state = RunState::kRunning;
  run.host = "another-host";
  run.pid = 1;
  EXPECT_EQ(DisplayState(run), "running");  // another host's: cannot tell
  run.host = sys::Hostname();
  run.pid = 999'999'999;  // no such process here
  EXPECT_EQ(DisplayState(run), "abandoned");
  run.state = RunState::kOk;
  EXPECT_EQ(DisplayState(run), std::string(RunStateName(RunState::kOk)));
}

}  // namespace
}  // namespace cmax::store
