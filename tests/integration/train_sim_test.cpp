// cmax-train-sim, the CPU stand-in for a data-parallel training job, run for real under
// OpenMPI's mpirun on this machine: its log read by the TorchTitan parser as a steady run whose
// loss falls, its traces read by the Kineto reader with every step, each layer's compute and
// each reduction in them; stopped at a step budget by `cmax train run`'s runner (SIGTERM through
// mpirun); bad arguments are exit 2.
#include <chrono>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "core/byte_source.hpp"
#include "support/corpus.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"
#include "train/kineto_trace.hpp"
#include "train/torchtitan_log.hpp"
#include "train/trace_analysis.hpp"
#include "train/train_figures.hpp"
#include "train/train_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;

// Tests run as root, which mpirun refuses unless told; no remote hosts, so no rsh agent.
const std::vector<std::string> kMpiEnv = {
    "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_plm_rsh_agent=false"};

std::vector<std::string> MpiRunArgv(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe",
                                   "--mca",  "btl", "self,vader,tcp"};
  argv.emplace_back(CMAX_TRAIN_SIM);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

sys::ProcessResult MpiRun(int ranks, const std::vector<std::string>& args) {
  sys::PosixProcessRunner runner;
  auto r = runner.Run({.argv = MpiRunArgv(ranks, args), .env_add = kMpiEnv, .timeout = 120s});
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : sys::ProcessResult{};
}

// Small enough for a debug build on two shared cores: 12 steps of 2 layers of 64 x 64.
const std::vector<std::string> kSmallJob = {"--steps", "12", "--layers",   "2", "--width", "64",
                                            "--batch", "16", "--log-freq", "5"};

TEST(TrainSim, ItsLogReadsAsASteadyRunWhoseLossFalls) {
  const auto r = MpiRun(2, kSmallJob);
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  const train::TrainLog log = train::ParseTorchTitanLog(r.stdout_text);
  EXPECT_TRUE(log.notes.empty()) << log.notes.front();
  EXPECT_EQ(log.info.start_step, 1);
  EXPECT_EQ(log.info.total_steps, 12);
  std::vector<int64_t> steps;
  for (const train::TrainStep& s : log.steps) {
    steps.push_back(s.step);
    ASSERT_TRUE(s.loss && s.tps && s.tflops && s.memory_gib && s.time_s) << s.line;
    EXPECT_GT(*s.tps, 0);
    EXPECT_GT(*s.memory_gib, 0);
    EXPECT_FALSE(s.mfu_pct) << "a CPU's peak is not known: no mfu";
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 5, 10, 12}));  // the first, every 5th, the last
  EXPECT_TRUE(log.failures.empty());
  const train::TrainFigures figures = train::AnalyzeTrainLog(log);
  EXPECT_EQ(figures.state, train::TrainState::kSteady) << figures.verdict;
  EXPECT_EQ(figures.loss_trend, train::LossTrend::kDecreasing) << figures.loss_detail;
  EXPECT_LT(*log.steps.back().loss, *log.steps.front().loss / 10) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("Training completed"), std::string::npos);
}

TEST(TrainSim, EachRanksTraceHoldsItsStepsComputeAndReductions) {
  testing::TempDir dir;
  std::vector<std::string> args = kSmallJob;
  args.insert(args.end(), {std::string("--trace-dir"), dir.Path()});
  const auto r = MpiRun(2, args);
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  std::vector<train::NamedTrace> traces;
  for (const int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const std::string file = "rank" + std::to_string(rank) + ".trace.json";
    const std::string text = testing::SlurpFile(dir.File(file));
    StringByteSource input(text);
    auto trace = train::ReadKinetoTrace(input);
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_EQ(trace->rank, rank);
    EXPECT_EQ(trace->world_size, 2);
    ASSERT_EQ(trace->steps.size(), 12U);
    EXPECT_EQ(trace->steps.front().step, 1);
    size_t compute = 0;
    size_t communication = 0;
    for (const train::GpuInterval& g : trace->gpu) {
      EXPECT_GE(g.end_ns, g.start_ns);
      compute += g.kind == train::KernelKind::kCompute ? 1 : 0;
      communication += g.kind == train::KernelKind::kCommunication ? 1 : 0;
    }
    // Per step: 2 forward, 2 backward, the optimizer; a reduction per layer and the loss's.
    EXPECT_EQ(compute, 12U * 5);
    EXPECT_EQ(communication, 12U * 3);
    ASSERT_EQ(trace->collectives.size(), 12U * 3);
    EXPECT_EQ(trace->collectives.front().kind, train::CollectiveKind::kAllReduce);
    EXPECT_EQ(trace->collectives.front().bytes, 64.0 * 64 * 4);  // a layer's gradient, float
    EXPECT_EQ(trace->collectives.front().group_size, 2);
    EXPECT_EQ(trace->launches.size(), trace->gpu.size());
    traces.push_back({file, std::move(*trace)});
  }
  const train::TraceFigures figures = train::AnalyzeTraces(traces);
  ASSERT_EQ(figures.ranks.size(), 2U);
  EXPECT_GT(figures.compute_pct, 0);
  EXPECT_EQ(figures.timeline.size(), 11U) << "HTA's window leaves the last step out";
  ASSERT_EQ(figures.collectives.size(), 1U);
  EXPECT_EQ(figures.collectives[0].kind, train::CollectiveKind::kAllReduce);
}

// `cmax train run`'s runner stops the job at its step budget with SIGTERM: run alone (one rank,
// MPI's singleton), the stand-in finishes the step, says so as TorchTitan does and exits 0.
// Under mpirun, mpirun answers SIGTERM by killing its ranks, so the job's exit is mpirun's; the
// run still ends as stopped at the budget, with the steps logged up to it.
TEST(TrainSim, ItStopsAtTheRunnersStepBudget) {
  const std::vector<std::string> endless = {
      "--steps", "1000000", "--layers", "2", "--width", "64", "--batch", "16", "--log-freq", "5"};
  for (const bool under_mpirun : {false, true}) {
    SCOPED_TRACE(under_mpirun ? "under mpirun" : "alone");
    testing::TempDir dir;
    sys::LocalFileSystem fs;
    sys::PosixProcessRunner runner;
    std::vector<std::string> command = {CMAX_TRAIN_SIM};
    command.insert(command.end(), endless.begin(), endless.end());
    train::TrainRunOptions options{.command = under_mpirun ? MpiRunArgv(2, endless) : command,
                                   .env = kMpiEnv,
                                   .step_budget = 10,
                                   .deadline = 120s,
                                   .log_path = dir.File("train.log")};
    auto result = train::RunTraining(options, {.runner = &runner, .fs = &fs});
    ASSERT_TRUE(result) << result.error().message;
    const std::string log = testing::SlurpFile(dir.File("train.log"));
    EXPECT_EQ(result->ending, train::TrainEnding::kBudget) << result->ending_words << log;
    EXPECT_GE(result->figures.last_step, 10);
    EXPECT_EQ(result->figures.state, train::TrainState::kSteady) << result->figures.verdict;
    if (!under_mpirun) {
      EXPECT_EQ(result->process.exit_code, 0) << log;
      EXPECT_NE(log.find("stopping after this step"), std::string::npos) << log;
    }
  }
}

TEST(TrainSim, BadArgumentsAreExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--steps", "0"},
                                               {"--width", "1"},
                                               {"--lr", "-1"},
                                               {"--trace-dir"},
                                               {"--what", "1"}}) {
    SCOPED_TRACE(args.front());
    std::vector<std::string> argv = {CMAX_TRAIN_SIM};  // alone: MPI's singleton
    argv.insert(argv.end(), args.begin(), args.end());
    sys::PosixProcessRunner runner;
    auto run = runner.Run({.argv = argv, .env_add = kMpiEnv, .timeout = 60s});
    ASSERT_TRUE(run) << run.error().message;
    const sys::ProcessResult& r = *run;
    EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("usage: cmax-train-sim"), std::string::npos);
  }
}

}  // namespace
}  // namespace cmax
