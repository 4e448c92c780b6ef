// TorchTitan's logs in their shapes: each NAME.log in tests/data/train (written from the format
// strings of TorchTitan's metrics.py and logging.py and of torchrun's elastic error report) gives
// NAME.expected.json (the figures and what was read); and the facts that matter, asserted by
// hand.
#include "train/torchtitan_log.hpp"

#include <gtest/gtest.h>
#include <string>

#include "support/corpus.hpp"
#include "support/golden.hpp"
#include "train/train_figures.hpp"

namespace cmax::train {
namespace {

std::string Read(const std::string& stem) {
  return testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/train/" + stem + ".log");
}

class TrainLogGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainLogGolden, MatchesExpectedFigures) {
  const TrainLog log = ParseTorchTitanLog(Read(GetParam()));
  testing::ExpectGolden("train/" + GetParam() + ".expected.json",
                        TrainFiguresJson(AnalyzeTrainLog(log), log).dump(1) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Cases, TrainLogGolden,
                         ::testing::ValuesIn(testing::GoldenStems("train", ".log")),
                         [](const auto& test) { return test.param; });

TEST(TrainLogGoldenFolder, EveryExpectationHasItsLog) {
  testing::ExpectNoOrphanGoldens("train", ".log", ".expected.json");
  EXPECT_GE(testing::GoldenStems("train", ".log").size(), 8U);
}

// run_train.sh's shape: torchrun's [rank0]: prefix, TorchTitan's colours and logger date; the
// run's facts from the lines around the steps.
TEST(TorchTitanLog, ReadsTheColouredRankZeroLogOfRunTrain) {
  const TrainLog log = ParseTorchTitanLog(Read("run_train_rank0_coloured"));
  ASSERT_EQ(log.steps.size(), 11U);
  const TrainStep& s = log.steps[1];
  EXPECT_EQ(s.step, 10);
  EXPECT_EQ(s.rank, 0);
  EXPECT_DOUBLE_EQ(*s.loss, 12.1420);
  EXPECT_DOUBLE_EQ(*s.grad_norm, 2.0667);
  EXPECT_DOUBLE_EQ(*s.memory_gib, 49.66);
  EXPECT_DOUBLE_EQ(*s.memory_pct, 52.28);
  EXPECT_DOUBLE_EQ(*s.tps, 5821);  // "5,821"
  EXPECT_DOUBLE_EQ(*s.tflops, 337.04);
  EXPECT_DOUBLE_EQ(*s.mfu_pct, 34.08);
  ASSERT_TRUE(s.time_s);
  EXPECT_NEAR(*s.time_s, 55.535, 1e-6);  // 22:01:05,905 after the first dated line's 22:00:10,370
  EXPECT_TRUE(s.other.empty());
  EXPECT_TRUE(log.notes.empty()) << log.notes.front();
  EXPECT_EQ(log.info.model, "llama3 8B");
  EXPECT_EQ(log.info.parameters, 8030261248);
  EXPECT_EQ(log.info.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.info.peak_flops, 9.89e14);
  EXPECT_EQ(log.info.world_size, 8);
  EXPECT_EQ(log.info.start_step, 1);
  EXPECT_TRUE(log.info.completed);
  EXPECT_TRUE(log.failures.empty());
}

// 2024's releases: wps for tps, no grad_norm or tflops, no "[titan] ", and the long start line.
TEST(TorchTitanLog, ReadsTheOlderReleaseWithWps) {
  const TrainLog log = ParseTorchTitanLog(Read("older_wps_release"));
  ASSERT_EQ(log.steps.size(), 6U);
  EXPECT_DOUBLE_EQ(*log.steps[1].tps, 2819);
  EXPECT_FALSE(log.steps[1].grad_norm);
  EXPECT_FALSE(log.steps[1].tflops);
  EXPECT_TRUE(log.steps[1].time_s);
  EXPECT_EQ(log.info.start_step, 1);
  EXPECT_EQ(log.info.total_steps, 50);
  EXPECT_EQ(log.info.warmup_steps, 5);
  EXPECT_EQ(log.info.global_batch, 8);
  EXPECT_EQ(log.info.seq_len, 4096);
}

// A step logged under a date or time that does not exist is still a step, without a time (it
// was dropped, and the run's last loss with it).
TEST(TorchTitanLog, AStepUnderAnImpossibleDateIsKept) {
  for (const char* when : {"2024-02-30 10:01:50", "2024-13-16 10:01:50", "2024-04-32 10:01:50",
                           "2024-04-16 10:61:50", "2024-04-16 24:01:50"}) {
    std::string text = Read("older_wps_release");
    const size_t at = text.find("2024-04-16 10:01:50");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 19, when);
    const TrainLog log = ParseTorchTitanLog(text);
    ASSERT_EQ(log.steps.size(), 6U) << when;
    EXPECT_EQ(log.steps.back().step, 50) << when;
    EXPECT_DOUBLE_EQ(*log.steps.back().loss, 4.9) << when;
    EXPECT_FALSE(log.steps.back().time_s) << when;
  }
}

// torchrun's report names rank 3 on its host; that rank's own exception says why. torchrun's
// ChildFailedError wrapper is not a failure of its own, and PyTorch's doubled "[rank3]:" prefix
// comes off.
TEST(TorchTitanLog, TheRootCauseAndTheRanksOwnException) {
  const TrainLog log = ParseTorchTitanLog(Read("oom_on_rank3_torchrun_report"));
  ASSERT_EQ(log.failures.size(), 2U);
  EXPECT_EQ(log.failures[0].kind, FailureKind::kOutOfMemory);
  EXPECT_EQ(log.failures[0].rank, 3);
  EXPECT_TRUE(log.failures[0].message.starts_with("torch.OutOfMemoryError: CUDA out of memory."));
  EXPECT_EQ(log.failures[1].kind, FailureKind::kProcessExit);
  EXPECT_EQ(log.failures[1].rank, 3);
  EXPECT_EQ(log.failures[1].host, "gpu-node-017");
  EXPECT_EQ(log.failures[1].exit_code, 1);
  const TrainFigures f = AnalyzeTrainLog(log);
  EXPECT_EQ(f.state, TrainState::kFailed);
  ASSERT_TRUE(f.first_error);
  EXPECT_EQ(f.first_error->kind, FailureKind::kOutOfMemory);
  EXPECT_EQ(f.first_error->host, "gpu-node-017");
  EXPECT_EQ(f.error_after_step, 30);
  EXPECT_NE(f.verdict.find("failed after step 30: rank 3 on gpu-node-017: torch.OutOfMemoryError"),
            std::string::npos)
      << f.verdict;
}

// A hang ended by NCCL's watchdog: the timeout names rank 13; torchrun's report says SIGABRT.
// srun -l's task prefix sits before torchrun's; two ranks print steps, rank 0's are the figures.
TEST(TorchTitanLog, AWatchdogTimeoutUnderSrun) {
  const TrainLog log = ParseTorchTitanLog(Read("nccl_watchdog_hang_srun"));
  EXPECT_EQ(log.steps.size(), 10U);
  EXPECT_EQ(log.nccl_warnings, 1U);
  ASSERT_EQ(log.failures.size(), 2U);
  EXPECT_EQ(log.failures[0].kind, FailureKind::kNcclTimeout);
  EXPECT_EQ(log.failures[0].rank, 13);
  EXPECT_EQ(log.failures[1].signal, "SIGABRT");
  EXPECT_EQ(log.failures[1].exit_code, -6);
  const TrainFigures f = AnalyzeTrainLog(log);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 8}));
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.steps_logged, 5U);
  EXPECT_DOUBLE_EQ(*f.tokens_per_s_per_gpu, 3480);
  EXPECT_EQ(f.first_error->kind, FailureKind::kNcclTimeout);
  EXPECT_EQ(f.first_error->signal, "SIGABRT");  // the root cause's, same rank
}

// A line cut short at the end of a file: its step is kept, the value it lost is not guessed
// ("4,2" is not 42), and the note says so; the restart from a checkpoint is seen.
TEST(TorchTitanLog, ACutLineAndARestart) {
  const TrainLog log = ParseTorchTitanLog(Read("resumed_from_checkpoint"));
  ASSERT_FALSE(log.steps.empty());
  EXPECT_EQ(log.steps.back().step, 90);
  EXPECT_FALSE(log.steps.back().tps);
  ASSERT_EQ(log.notes.size(), 1U);
  EXPECT_NE(log.notes[0].find("tps: 4,2"), std::string::npos) << log.notes[0];
  EXPECT_EQ(log.validation.size(), 1U);
  const TrainFigures f = AnalyzeTrainLog(log);
  EXPECT_TRUE(f.restarted);
  EXPECT_EQ(f.first_step, 41);
  EXPECT_EQ(f.warmup, (std::vector<int64_t>{41}));
}

struct LineCase {
  const char* line;
  int64_t step;
  std::optional<int> rank;
  std::optional<double> tps;
};

TEST(TorchTitanLog, PrefixesAndNumbers) {
  const LineCase cases[] = {
      {"step: 5  loss: 1.0  tps: 1,234,567", 5, std::nullopt, 1234567},
      {"[default7]:[titan] 2025-01-01 00:00:00,000 - root - INFO - step: 6  tps: 10", 6, 7, 10},
      {"  12: [rank12]:step: 7  tps:11", 7, 12, 11},  // srun -l, then torchrun; "key:value"
      {"3: step: 8  tps: 4,2", 8, 3, std::nullopt},   // a cut group of thousands
      {"\x1b[31mstep:  9  \x1b[34mtps: 99\x1b[39m", 9, std::nullopt, 99},
      {"step: 10  tps: 1.5e+03", 10, std::nullopt, 1500},
  };
  for (const LineCase& c : cases) {
    const TrainLog log = ParseTorchTitanLog(c.line);
    ASSERT_EQ(log.steps.size(), 1U) << c.line;
    EXPECT_EQ(log.steps[0].step, c.step) << c.line;
    EXPECT_EQ(log.steps[0].rank, c.rank) << c.line;
    EXPECT_EQ(log.steps[0].tps, c.tps) << c.line;
  }
  // Not metric lines: a message that mentions a step, an exception outside a traceback.
  const TrainLog other = ParseTorchTitanLog(
      "Training starts at step 1\nRuntimeError: not in a traceback\nstep:  loss: 1\n");
  EXPECT_TRUE(other.steps.empty());
  EXPECT_TRUE(other.failures.empty());
  EXPECT_EQ(other.notes.size(), 1U);  // the step line without a number
}

// Figures no GPU reaches are a log that is wrong, not a result: said among the unread, never
// scored (1e300 tokens/s earned full marks for training throughput). An MFU past 100 % is real
// (TorchTitan divides by an A100's peak for GPUs it does not know) and is kept.
TEST(TorchTitanLog, FiguresNoGpuReachesAreSaidNotTaken) {
  const TrainLog log = ParseTorchTitanLog(
      "step: 1  tps: 1e300  tflops: -1e300  mfu: -3%  memory: -49GiB(-5%)\n"
      "step: 2  tps: 5,000  tflops: 400  mfu: 212.5%  memory: 49.66GiB(52.28%)\n"
      "step: 3  tps: nan  tflops: 1e6  mfu: 1e5%\n");
  ASSERT_EQ(log.steps.size(), 3U);
  for (size_t i : {0U, 2U}) {
    EXPECT_FALSE(log.steps[i].tps) << i;
    EXPECT_FALSE(log.steps[i].tflops) << i;
    EXPECT_FALSE(log.steps[i].mfu_pct) << i;
  }
  EXPECT_FALSE(log.steps[0].memory_gib);
  EXPECT_EQ(log.steps[1].tps, 5000);
  EXPECT_EQ(log.steps[1].tflops, 400);
  EXPECT_EQ(log.steps[1].mfu_pct, 212.5);
  EXPECT_EQ(log.steps[1].memory_gib, 49.66);
  ASSERT_FALSE(log.notes.empty());
  EXPECT_NE(log.notes[0].find("tps: 1e300 (no GPU measures that)"), std::string::npos)
      << log.notes[0];
}

// What a metric line held that was not read is said in a few words, each cut short, and a
// count: a line of ten million unread words was kept whole (800 MB) and printed as a 60 MB note.
TEST(TorchTitanLog, AnUnreadLineIsSaidInAFewWords) {
  std::string line = "step: 1  tps: 10  " + std::string(200, 'x') + " ";
  for (int i = 0; i < 1000; ++i) line += "a ";
  const TrainLog log = ParseTorchTitanLog(line + "\n");
  ASSERT_EQ(log.steps.size(), 1U);
  EXPECT_EQ(log.steps[0].tps, 10);
  ASSERT_EQ(log.notes.size(), 1U);
  EXPECT_EQ(log.notes[0],
            "line 1: not read: " + std::string(80, 'x') + "..., a, a, a, a, a, a, a and 993 more");
}

// A device mesh whose sizes' product passes a million GPUs (or overflows) names no world size.
TEST(TorchTitanLog, AMeshPastAMillionGpusIsNoWorldSize) {
  for (const char* sizes :
       {"[3037000500, 3037000500]", "[4294967296, 4294967296]", "[1024, 1024, 2]"}) {
    const TrainLog log = ParseTorchTitanLog(
        std::string("[titan] 2025-01-01 00:00:00,000 - root - INFO - Building 2-D device mesh with "
                    "['a', 'b'], ") +
        sizes + "\n");
    EXPECT_FALSE(log.info.world_size) << sizes;
  }
  const TrainLog fine = ParseTorchTitanLog(
      "[titan] 2025-01-01 00:00:00,000 - root - INFO - Building 2-D device mesh with ['a', 'b'], "
      "[512, 8]\n");
  EXPECT_EQ(fine.info.world_size, 4096);
}

// torchrun's report cut off before its closing line still names the rank.
TEST(TorchTitanLog, AReportCutShortIsKept) {
  const TrainLog log = ParseTorchTitanLog(
      "Root Cause (first observed failure):\n[0]:\n  host      : n1\n  rank      : 2 (local_rank: "
      "2)\n");
  ASSERT_EQ(log.failures.size(), 1U);
  EXPECT_EQ(log.failures[0].rank, 2);
  EXPECT_EQ(log.failures[0].message, "torchrun: rank 2 on n1 failed");
}

}  // namespace
}  // namespace cmax::train
