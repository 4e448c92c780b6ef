// The figures of a training log on synthetic step series whose warm-up, loss trend, jitter and
// failures are known by construction.
#include "train/train_figures.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

namespace cmax::train {
namespace {

TrainStep Step(int64_t n, double tps, double loss = 5, std::optional<double> time = {}) {
  return {.step = n, .loss = loss, .tps = tps, .time_s = time};
}

TrainLog Log(std::vector<TrainStep> steps) {
  TrainLog log;
  size_t line = 0;
  for (TrainStep& s : steps) s.line = ++line;
  log.steps = std::move(steps);
  return log;
}

// A log of more steps than a chart needs lists every k-th (and the last) in its JSON; the
// figures are from every step. (A million-line log was held as a million JSON objects: GBs.)
TEST(TrainFiguresJson, ListsAtMostTheCapOfStepsAndSaysHowOften) {
  std::vector<TrainStep> many;
  for (int64_t n = 1; n <= 25'001; ++n) many.push_back(Step(n, 1000));
  const TrainLog log = Log(std::move(many));
  const TrainFigures figures = AnalyzeTrainLog(log);
  const nlohmann::json j = TrainFiguresJson(figures, log);
  EXPECT_EQ(j["steps_logged"], 25'001);
  EXPECT_EQ(j["steps_listed_every"], 3);
  ASSERT_EQ(j["steps"].size(), 8'335U);  // steps 1, 4, ... 25,000, and 25,001
  EXPECT_EQ(j["steps"][1]["step"], 4);
  EXPECT_EQ(j["steps"].back()["step"], 25'001);
  // At the cap's edges too: never one more than it.
  for (const int64_t n : {10'001, 20'000, 20'001, 29'998}) {
    std::vector<TrainStep> steps;
    for (int64_t i = 1; i <= n; ++i) steps.push_back(Step(i, 1000));
    const TrainLog edge = Log(std::move(steps));
    const nlohmann::json listed = TrainFiguresJson(AnalyzeTrainLog(edge), edge);
    EXPECT_LE(listed["steps"].size(), kMaxListedSteps) << n;
    EXPECT_EQ(listed["steps"].back()["step"], n);
  }
  const TrainLog few = Log({Step(1, 900), Step(2, 1000)});
  const nlohmann::json all = TrainFiguresJson(AnalyzeTrainLog(few), few);
  EXPECT_EQ(all["steps_listed_every"], 1);
  EXPECT_EQ(all["steps"].size(), 2U);
}

// The first logged step carries the start-up; the slow ones after it too; then steady.
TEST(AnalyzeTrainLog, WarmUpIsTheFirstStepAndTheSlowOnesAfterIt) {
  const TrainLog log = Log({Step(1, 900), Step(10, 3000), Step(20, 4800), Step(30, 5000),
                            Step(40, 5100), Step(50, 4950), Step(60, 5050)});
  const TrainFigures f = AnalyzeTrainLog(log);
  EXPECT_EQ(f.state, TrainState::kSteady);
  EXPECT_EQ(f.warmup, (std::vector<int64_t>{1, 10}));  // 3000 is far below ~5000; 4800 is not
  EXPECT_EQ(f.steady, (std::vector<int64_t>{20, 30, 40, 50, 60}));
  EXPECT_DOUBLE_EQ(*f.tokens_per_s_per_gpu, 5000);  // the median, not the mean
  // Said by the user instead: everything up to step 30.
  const TrainFigures told = AnalyzeTrainLog(log, {.warmup_steps = 30});
  EXPECT_EQ(told.warmup, (std::vector<int64_t>{1, 10, 20, 30}));
  EXPECT_DOUBLE_EQ(*told.tokens_per_s_per_gpu, 5050);
}

TEST(AnalyzeTrainLog, OneStepOrOnlySlowStepsNeverGetPastWarmUp) {
  EXPECT_EQ(AnalyzeTrainLog(Log({Step(1, 300)})).state, TrainState::kWarmUpOnly);
  const TrainFigures f = AnalyzeTrainLog(Log({Step(1, 300), Step(10, 900)}), {.warmup_steps = 10});
  EXPECT_EQ(f.state, TrainState::kWarmUpOnly);
  EXPECT_FALSE(f.tokens_per_s_per_gpu);
  EXPECT_NE(f.verdict.find("never got past warm-up"), std::string::npos) << f.verdict;
  EXPECT_EQ(AnalyzeTrainLog(TrainLog{}).state, TrainState::kNoSteps);
}

struct TrendCase {
  std::vector<double> losses;
  LossTrend want;
};

TEST(AnalyzeTrainLog, LossTrends) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const TrendCase cases[] = {
      {{10, 9, 8, 7, 6, 5, 4, 3}, LossTrend::kDecreasing},
      {{5, 5.01, 4.99, 5, 5.02, 4.98, 5, 5}, LossTrend::kFlat},
      {{5, 5.5, 6, 7, 8, 9, 10, 12}, LossTrend::kDiverged},  // above where it started
      {{10, 6, 3, 2, 2, 3, 6, 9}, LossTrend::kDiverged},     // back up 50% over its low
      {{10, 9, nan, 8}, LossTrend::kNotANumber},
      {{10, 9}, LossTrend::kUnknown},
  };
  for (const TrendCase& c : cases) {
    std::vector<TrainStep> steps;
    for (size_t i = 0; i < c.losses.size(); ++i) {
      steps.push_back(Step(static_cast<int64_t>(i * 10 + 1), 1000, c.losses[i]));
    }
    const TrainFigures f = AnalyzeTrainLog(Log(steps));
    EXPECT_EQ(LossTrendName(f.loss_trend), LossTrendName(c.want)) << f.loss_detail;
  }
  std::vector<TrainStep> steps = {Step(1, 1, 3), Step(10, 1, 2),
                                  Step(20, 1, std::numeric_limits<double>::infinity())};
  EXPECT_EQ(AnalyzeTrainLog(Log(steps)).loss_detail, "inf at step 20");
}

// Time per step from the log's dates (10 steps per line): 10 s, 10 s, 12 s, 10 s per line, so
// 1.0, 1.0, 1.2, 1.0 s per step; without dates, from 1/tps.
TEST(AnalyzeTrainLog, StepTimeAndJitter) {
  const TrainFigures dated =
      AnalyzeTrainLog(Log({Step(1, 100, 5, 0), Step(10, 1000, 5, 30), Step(20, 1000, 5, 40),
                           Step(30, 1000, 5, 50), Step(40, 1000, 5, 62), Step(50, 1000, 5, 72)}));
  ASSERT_TRUE(dated.step_time_s);
  EXPECT_DOUBLE_EQ(*dated.step_time_s, 1.0);
  EXPECT_EQ(dated.jitter_source, "dates");
  EXPECT_NEAR(*dated.jitter_pct, 100 * 0.1 / 1.05, 1e-9);  // stddev 0.1 of 1, 1, 1.2, 1
  const TrainFigures undated =
      AnalyzeTrainLog(Log({Step(1, 100), Step(10, 1000), Step(20, 1000), Step(30, 500)}));
  EXPECT_FALSE(undated.step_time_s);
  EXPECT_EQ(undated.jitter_source, "tps");
  EXPECT_GT(*undated.jitter_pct, 30);
}

// TorchTitan takes an unknown GPU for an A100: the MFU it prints then passes 100%, said in a note.
TEST(AnalyzeTrainLog, AnMfuAboveOneHundredPercentIsCalledOut) {
  TrainLog log = Log({Step(1, 100), Step(10, 1000), Step(20, 1000)});
  for (TrainStep& s : log.steps) s.mfu_pct = 212.5;
  const TrainFigures f = AnalyzeTrainLog(log);
  ASSERT_EQ(f.notes.size(), 1U);
  EXPECT_NE(f.notes[0].find("MFU 212.5% is above 100%"), std::string::npos) << f.notes[0];
  for (TrainStep& s : log.steps) s.mfu_pct = 40;
  EXPECT_TRUE(AnalyzeTrainLog(log).notes.empty());
}

// A figure past what a whole number holds is shown as it is, never as an overflowed one
// ("--9,223,372,036,854,775,808 tokens/s/GPU"); a jitter of steps too fast to invert is none.
TEST(AnalyzeTrainLog, FiguresPastAWholeNumberAreShownAsTheyAre) {
  const TrainLog log = Log({Step(1, 1e30), Step(10, 1e30), Step(20, 1e30)});
  const TrainFigures f = AnalyzeTrainLog(log);
  const std::string text = TrainFiguresText(f, log);
  EXPECT_EQ(text.find("-9,223"), std::string::npos) << text;
  EXPECT_NE(text.find("1e+30"), std::string::npos) << text;
  const TrainLog tiny = Log({Step(1, 1e-300), Step(10, 1e-310), Step(20, 1e-300)});
  EXPECT_FALSE(AnalyzeTrainLog(tiny).jitter_pct);
}

// The root cause names rank 5: its exception wins over rank 2's earlier one (rank 2 failed
// because rank 5 had). Without a report, the first failure seen.
TEST(AnalyzeTrainLog, TheFirstErrorIsTheRootCauseRanks) {
  TrainLog log = Log({Step(1, 100), Step(10, 1000)});
  log.failures = {
      {.kind = FailureKind::kNccl, .message = "rank 2's", .rank = 2, .line = 5},
      {.kind = FailureKind::kCuda, .message = "rank 5's", .rank = 5, .line = 6},
      {.kind = FailureKind::kProcessExit,
       .message = "torchrun",
       .rank = 5,
       .host = "n5",
       .exit_code = 1,
       .line = 9},
  };
  TrainFigures f = AnalyzeTrainLog(log);
  ASSERT_TRUE(f.first_error);
  EXPECT_EQ(f.first_error->message, "rank 5's");
  EXPECT_EQ(f.first_error->host, "n5");
  EXPECT_EQ(f.error_after_step, 10);
  log.failures.pop_back();
  f = AnalyzeTrainLog(log);
  EXPECT_EQ(f.first_error->message, "rank 2's");
  // Only the report: it is the error.
  log.failures = {{.kind = FailureKind::kProcessExit,
                   .message = "torchrun: rank 1 failed",
                   .rank = 1,
                   .line = 3}};
  f = AnalyzeTrainLog(log);
  EXPECT_EQ(f.first_error->kind, FailureKind::kProcessExit);
  EXPECT_TRUE(f.verdict.starts_with(
      "failed after step 10: torchrun: rank 1 failed; before it 1,000 tokens/s/GPU"))
      << f.verdict;
}

}  // namespace
}  // namespace cmax::train
