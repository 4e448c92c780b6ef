// `cmax train run`'s runner against a stand-in training job (tests/data/train/standin_train.sh,
// a shell script that prints TorchTitan's lines and trains nothing) under the real process
// runner: a run that finishes, one stopped at its step budget, one that hangs until its
// deadline, one that crashes mid-run. Each waits on the job's end, never on a sleep.
#include "train/train_runner.hpp"

#include <chrono>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/strings.hpp"
#include "support/corpus.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::train {
namespace {

using namespace std::chrono_literals;

const std::string kStandIn = std::string(CMAX_TEST_DATA) + "/train/standin_train.sh";

class TrainRunnerTest : public ::testing::Test {
 protected:
  TrainRunResult Run(std::vector<std::string> args, TrainRunOptions options = {}) {
    options.command = {"/bin/sh", kStandIn};
    options.command.insert(options.command.end(), args.begin(), args.end());
    options.log_path = dir_.File("logs/train.log");  // its folder is made
    const TrainRunIo io{.runner = &runner_, .fs = &fs_, .progress = [this](std::string_view line) {
                          progress_.emplace_back(line);
                        }};
    auto result = RunTraining(options, io);
    EXPECT_TRUE(result) << result.error().message;
    return result ? std::move(*result) : TrainRunResult{};
  }
  std::string Log() { return testing::SlurpFile(dir_.File("logs/train.log")); }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  std::vector<std::string> progress_;
};

TEST_F(TrainRunnerTest, ARunThatFinishesIsReadAsItPrints) {
  const TrainRunResult r = Run({"finish", "50"});
  EXPECT_EQ(r.ending, TrainEnding::kFinished) << r.ending_words;
  EXPECT_EQ(r.figures.state, TrainState::kSteady);
  EXPECT_EQ(r.figures.steps_logged, 6U);
  EXPECT_EQ(r.figures.warmup, (std::vector<int64_t>{1}));
  EXPECT_DOUBLE_EQ(*r.figures.tokens_per_s_per_gpu, 5800);
  EXPECT_TRUE(r.log.info.completed);
  ASSERT_EQ(progress_.size(), 6U);
  EXPECT_EQ(progress_[1], "step 10 (rank 0): 5800 tokens/s/GPU, loss 12.1");
  // The log file holds what the job printed, as it printed it.
  EXPECT_NE(Log().find("- step: 50  loss:"), std::string::npos);
  EXPECT_NE(Log().find("Training completed\n"), std::string::npos);
}

// The budget reached, the job is asked to stop (SIGTERM): it says so in its log and exits on
// its own terms; the run ends as "budget", not as a failure.
TEST_F(TrainRunnerTest, TheStepBudgetStopsItCleanly) {
  TrainRunOptions options;
  options.step_budget = 40;
  options.deadline = 60s;
  const TrainRunResult r = Run({"forever"}, options);
  EXPECT_EQ(r.ending, TrainEnding::kBudget) << r.ending_words;
  EXPECT_TRUE(r.process.stopped);
  EXPECT_FALSE(r.process.timed_out);
  EXPECT_GE(*r.figures.last_step, 40);
  EXPECT_NE(r.ending_words.find("stopped at the step budget (40)"), std::string::npos)
      << r.ending_words;
  EXPECT_NE(Log().find("Received SIGTERM: saving and stopping"), std::string::npos);
  EXPECT_FALSE(r.figures.first_error);
}

// A job that hangs after step 20 is killed at its deadline, and the last step seen is said.
TEST_F(TrainRunnerTest, AHangIsKilledAtItsDeadline) {
  TrainRunOptions options;
  options.deadline = 2s;
  options.stop_grace = 1s;
  const auto start = std::chrono::steady_clock::now();
  const TrainRunResult r = Run({"hang", "20"}, options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_EQ(r.ending, TrainEnding::kDeadline) << r.ending_words;
  EXPECT_EQ(r.figures.last_step, 20);
  EXPECT_NE(r.ending_words.find("the last step logged was 20"), std::string::npos)
      << r.ending_words;
  const Finding f = TrainEndingFinding(r);
  EXPECT_EQ(f.status, CheckStatus::kFail);
}

// A crash mid-run: its exit, and the first error from the job's stderr, with its rank.
TEST_F(TrainRunnerTest, ACrashMidRunIsFoundWithItsRank) {
  const TrainRunResult r = Run({"crash", "30"});
  EXPECT_EQ(r.ending, TrainEnding::kFailed) << r.ending_words;
  EXPECT_EQ(r.process.exit_code, 1);
  EXPECT_EQ(r.figures.state, TrainState::kFailed);
  ASSERT_TRUE(r.figures.first_error);
  EXPECT_EQ(r.figures.first_error->kind, FailureKind::kOutOfMemory);
  EXPECT_EQ(r.figures.first_error->rank, 3);
  EXPECT_EQ(r.figures.first_error->host, "stand-in");
  EXPECT_EQ(r.figures.error_after_step, 30);
  EXPECT_NE(Log().find("torch.OutOfMemoryError"), std::string::npos);  // stderr kept too
}

// A launcher that fails before the job began (mpirun crashing, or failing to start its daemons,
// in namespace hosts) is started again when asked; one that died after the job's first lines, on
// stderr as TorchTitan's logger writes them, is the job's end.
TEST_F(TrainRunnerTest, ALauncherThatFailsBeforeTheJobBeganIsStartedAgainWhenAsked) {
  const std::string marker = dir_.File("crashed-once");
  const TrainRunResult retried = Run({"segv-once", marker}, {.crash_retries = 2});
  EXPECT_EQ(retried.ending, TrainEnding::kFinished) << retried.ending_words;
  EXPECT_EQ(retried.figures.last_step, 20);
  EXPECT_EQ(retried.log.nccl_warnings, 0U) << "the launcher's words are not the job's";
  const std::string log = Log();
  EXPECT_NE(log.find("*** Process received signal ***"), std::string::npos) << log;
  EXPECT_NE(log.find("ended (killed by signal 11) before the job began; started again (1 of 2)"),
            std::string::npos)
      << log;

  std::filesystem::remove(dir_.File("logs/train.log"));
  const TrainRunResult relaunched =
      Run({"fail-once", dir_.File("failed-once")}, {.crash_retries = 2});
  EXPECT_EQ(relaunched.ending, TrainEnding::kFinished) << relaunched.ending_words;
  EXPECT_NE(Log().find("ended (exit 1) before the job began; started again (1 of 2)"),
            std::string::npos)
      << Log();

  // A failure later than the launcher's start-up time is the job's own: not started again.
  std::filesystem::remove(dir_.File("logs/train.log"));
  const TrainRunResult slow =
      Run({"fail-once", dir_.File("failed-once-late")}, {.crash_retries = 2, .retry_within = {}});
  EXPECT_EQ(slow.ending, TrainEnding::kFailed) << slow.ending_words;
  EXPECT_EQ(Log().find("started again"), std::string::npos) << Log();

  const std::string marker2 = dir_.File("crashed-once-more");
  const TrainRunResult not_asked = Run({"segv-once", marker2});
  EXPECT_EQ(not_asked.ending, TrainEnding::kFailed) << not_asked.ending_words;
  EXPECT_EQ(not_asked.process.signal, 11);

  std::filesystem::remove(dir_.File("logs/train.log"));  // the runs above appended to it
  const TrainRunResult late = Run({"segv-late"}, {.crash_retries = 2});
  EXPECT_EQ(late.ending, TrainEnding::kFailed) << late.ending_words;
  EXPECT_EQ(late.figures.last_step, 1);
  EXPECT_EQ(Log().find("started again"), std::string::npos) << Log();
}

TEST_F(TrainRunnerTest, ACommandThatCannotStartIsAnError) {
  const TrainRunIo io{.runner = &runner_, .fs = &fs_};
  auto missing = RunTraining({.command = {dir_.File("no-such-program")}}, io);
  EXPECT_FALSE(missing);
  EXPECT_FALSE(RunTraining({}, io));
  auto unwritable = RunTraining(
      {.command = {"/bin/true"}, .log_path = "/proc/cmax-no-such-folder/train.log"}, io);
  EXPECT_FALSE(unwritable);
}

// Recorded as a run: with no log named, the output is kept in the default one beside the store
// (and the report says where); --shell joins the words for /bin/sh -c; --exit-zero makes the
// code 0 for a run that failed, and only the code.
TEST_F(TrainRunnerTest, ARecordedRunKeepsItsLogBesideTheStoreUnlessTold) {
  ManualClock clock(WallTime{} + std::chrono::hours(24 * 20000));
  const TrainLogIo store_io{
      .db_path = dir_.File("cmax.db"), .cmax_version = "test", .fs = &fs_, .clock = &clock};
  const TrainRunIo io{.runner = &runner_, .fs = &fs_};
  TrainRunOptions options{.command = {"/bin/sh", kStandIn, "crash", "20"}, .use_shell = true};
  auto crashed = RunAndRecordTraining(options, io, store_io);
  ASSERT_TRUE(crashed) << crashed.error().message;
  EXPECT_EQ(crashed->log_path, DefaultTrainLogPath(store_io.db_path, clock.Now()));
  EXPECT_EQ(crashed->log_path.rfind(dir_.File("train-"), 0), 0U) << crashed->log_path;
  EXPECT_NE(testing::SlurpFile(crashed->log_path).find("OutOfMemoryError"), std::string::npos);
  EXPECT_EQ(crashed->run.ending, TrainEnding::kFailed) << crashed->run.ending_words;
  EXPECT_EQ(crashed->recorded.exit_code, 1);
  // What ran, as it ran: the words joined for /bin/sh -c.
  const auto& evidence = crashed->recorded.record.evidence;
  const auto command = std::ranges::find_if(
      evidence, [](const EvidenceItem& e) { return e.key == "train.command"; });
  ASSERT_NE(command, evidence.end());
  EXPECT_EQ(command->value_json, R"(["/bin/sh","-c","/bin/sh )" + kStandIn + R"( crash 20"])");

  options.exit_zero = true;
  options.log_path = dir_.File("named.log");
  auto forgiven = RunAndRecordTraining(options, io, store_io);
  ASSERT_TRUE(forgiven) << forgiven.error().message;
  EXPECT_EQ(forgiven->log_path, dir_.File("named.log"));
  EXPECT_EQ(forgiven->run.ending, TrainEnding::kFailed);
  EXPECT_EQ(forgiven->recorded.exit_code, 0);
}

}  // namespace
}  // namespace cmax::train
