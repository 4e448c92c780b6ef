// The sweep for real: the real mpirun on this machine starts each step, with a deadline, and
// the store keeps the run. The nccl-tests binaries here are stand-ins (shell scripts in a
// temporary build folder, named as such): one prints a whole table, one prints half a table
// and hangs (a hung collective), one fails as nccl-tests does. The hung step must be killed at
// its deadline with the sizes it finished kept, the failed one reported with its cause, and the
// sweep must go on past both.
#include "net/nccl_sweep.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <iterator>
#include <string>

#include "core/clock.hpp"
#include "core/strings.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::net {
namespace {

using namespace std::chrono_literals;

class NcclSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.CreateDirs(dir_.File("nccl-tests"), 0755));
    const std::string table = std::string(CMAX_TEST_DATA) + "/nccl/modern_all_reduce.txt";
    // Stand-in: a whole all-to-all table.
    Script("alltoall_perf", "sed s/all_reduce_perf/alltoall_perf/ " + table + "\n");
    // Stand-in: the header and three sizes, then a collective that never returns (the fault
    // under test; the test waits on the sweep's deadline, not on this).
    Script("all_reduce_perf", "head -n 16 " + table + "\nexec tail -f /dev/null\n");
    // Stand-in: nccl-tests 2.17.3 or later, whose -h offers -J; it writes its JSON file and, as
    // through a launcher that swallowed it, prints nothing.
    Script("all_gather_perf",
           "for a in \"$@\"; do [ \"$a\" = -h ] && { echo '[-J,--output_file <file>]'; exit 0; }; "
           "done\n"
           "while [ $# -gt 0 ]; do [ \"$1\" = -J ] && out=$2; shift; done\n"
           "sed s/all_reduce_perf_mpi/all_gather_perf/ " +
               std::string(CMAX_TEST_DATA) + "/nccl/json_file_v3.txt > \"$out\"\n");
    // Stand-in: NCCL's failure as nccl-tests reports it.
    Script("broadcast_perf",
           "echo 'gpu-a-001: Test NCCL failure common.cu:1279 \"unhandled system error\"' >&2\n"
           "exit 3\n");
  }
  void Script(const std::string& name, const std::string& body) {
    ASSERT_TRUE(fs_.WriteFileAtomic(
        dir_.File("nccl-tests/" + name),
        "#!/bin/sh\n# A stand-in for nccl-tests' " + name + ".\n" + body, 0755));
  }
  NcclSweepRequest Request() {
    NcclSweepRequest r;
    r.sweep.hosts = {"localhost"};
    r.sweep.gpus_per_node = 1;
    r.sweep.collectives = {"all_reduce", "alltoall", "broadcast"};
    r.sweep.step_timeout = 3s;
    r.nccl_tests_dir = dir_.File("nccl-tests");
    r.out_dir = dir_.File("logs");
    return r;
  }
  NcclSweepIo Io() {
    return {.analyze = {.db_path = dir_.File("cmax.db"),
                        .cmax_version = "test",
                        .fs = &fs_,
                        .clock = &clock_},
            .fs = &fs_,
            .runner = &runner_,
            .progress = [this](std::string_view line) { progress_.emplace_back(line); }};
  }
  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  SystemClock clock_;
  std::vector<std::string> progress_;
};

TEST_F(NcclSweepTest, AHungStepIsKilledAFailedOneNamedAndTheSweepGoesOn) {
  auto report = SweepNccl(Request(), Io());
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->steps.size(), 3U);
  EXPECT_EQ(report->steps_planned, 3U);
  const NcclStepOutcome& hung = report->steps[0];
  EXPECT_EQ(hung.step.collective, "all_reduce");
  EXPECT_NE(
      hung.problem.find("hung: killed at its 3.0 s deadline (the sizes it finished are kept)"),
      std::string::npos)
      << hung.problem;
  EXPECT_LT(hung.took, 20s);
  EXPECT_TRUE(report->steps[1].problem.empty()) << report->steps[1].problem;
  const NcclStepOutcome& failed = report->steps[2];
  EXPECT_NE(failed.problem.find("Test NCCL failure common.cu:1279"), std::string::npos)
      << failed.problem;
  // Every step's log is kept; what the hung one finished is analysed as a curve cut short.
  for (const NcclStepOutcome& s : report->steps) EXPECT_TRUE(fs_.Exists(s.log_path)) << s.log_path;
  const NcclAnalysis& analysis = report->analyzed.analysis;
  ASSERT_EQ(analysis.curves.size(), 2U);
  EXPECT_EQ(analysis.curves[0].collective, "all_reduce");
  EXPECT_FALSE(analysis.curves[0].concluded);
  EXPECT_EQ(analysis.curves[0].points.size(), 3U);
  EXPECT_EQ(analysis.curves[1].collective, "alltoall");
  EXPECT_TRUE(analysis.curves[1].concluded);
  // The run in the store: a FAIL per failed step, beside the analysis's findings; exit 1.
  EXPECT_EQ(report->analyzed.exit_code, 1);
  const RunRecord& run = report->analyzed.record;
  EXPECT_EQ(run.run.command, "nccl");
  EXPECT_EQ(run.run.target, "nccl sweep over 1 node");
  int step_failures = 0;
  for (const Finding& f : run.findings) {
    if (f.check_id == "network.nccl-step" && f.status == CheckStatus::kFail) ++step_failures;
  }
  EXPECT_EQ(step_failures, 2);
  // A line per step (and, before them, whether Slurm could say what runs on localhost).
  std::vector<std::string> steps;
  std::ranges::copy_if(progress_, std::back_inserter(steps),
                       [](const std::string& line) { return line.starts_with("step "); });
  ASSERT_EQ(steps.size(), 3U);
  EXPECT_TRUE(steps[0].starts_with("step 1/3: all_reduce over 1 node (localhost): hung"))
      << steps[0];
  // Nothing of the hung step lives on.
  const auto left = runner_.Run({.argv = {"pgrep", "-f", dir_.File("nccl-tests")}});
  ASSERT_TRUE(left);
  EXPECT_NE(left->exit_code, 0) << left->stdout_text;
}

TEST_F(NcclSweepTest, AFailedStepAloneMakesTheSweepFail) {
  NcclSweepRequest r = Request();
  r.sweep.collectives = {"alltoall", "broadcast"};
  auto report = SweepNccl(r, Io());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(report->analyzed.analysis.Faulty());  // the curve that ran is clean
  EXPECT_EQ(report->analyzed.exit_code, 1);
  r.analysis.exit_zero = true;
  report = SweepNccl(r, Io());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->analyzed.exit_code, 0);
}

TEST_F(NcclSweepTest, TheJsonFileIsWrittenWhereOfferedAndReadWhenNothingIsPrinted) {
  NcclSweepRequest r = Request();
  r.sweep.collectives = {"all_gather"};
  auto report = SweepNccl(r, Io());
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->steps.size(), 1U);
  EXPECT_NE(report->steps[0].step.argv.back().find("all_gather-default-1n.log.json"),
            std::string::npos);
  EXPECT_TRUE(report->steps[0].problem.empty()) << report->steps[0].problem;
  ASSERT_EQ(report->analyzed.analysis.curves.size(), 1U);
  const NcclCurve& curve = report->analyzed.analysis.curves[0];
  EXPECT_EQ(curve.collective, "all_gather");
  EXPECT_NE(curve.origin.find(".log.json"), std::string::npos) << curve.origin;
  EXPECT_EQ(curve.nodes, 2);  // the JSON's own devices, not the sweep's host list
}

// A JSON file an earlier sweep left in the folder is not read for a step that wrote none.
TEST_F(NcclSweepTest, AnEarlierSweepsJsonFileIsNotTakenForThisOnes) {
  NcclSweepRequest r = Request();
  r.sweep.collectives = {"all_gather", "broadcast"};
  ASSERT_TRUE(fs_.CreateDirs(r.out_dir, 0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(
      r.out_dir + "/broadcast-default-1n.log.json",
      *fs_.ReadFile(std::string(CMAX_TEST_DATA) + "/nccl/json_file_v3.txt", 1 << 20), 0644));
  auto report = SweepNccl(r, Io());
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->steps.size(), 2U);
  EXPECT_NE(report->steps[1].problem.find("exited"), std::string::npos) << report->steps[1].problem;
  ASSERT_EQ(report->analyzed.analysis.curves.size(), 1U);
  EXPECT_EQ(report->analyzed.analysis.curves[0].collective, "all_gather");
}

// find-bad-node over two hosts of this machine: a search that settled scores; one stopped by
// Ctrl-C names nobody and scores nothing; and a pair with no reference, held against its own
// figure, is no verdict (it was "clean" and scored 1).
TEST_F(NcclSweepTest, FindBadNodeScoresOnlyASettledSearch) {
  NcclSweepRequest r = Request();
  r.sweep.hosts = {"localhost", "127.0.0.1"};
  Script("all_reduce_perf", "cat " + std::string(CMAX_TEST_DATA) + "/nccl/modern_all_reduce.txt\n");
  const auto slow_nodes = [](const RunRecord& run) {
    return std::ranges::count_if(run.metrics,
                                 [](const Metric& m) { return m.name == "nccl.slow_nodes"; });
  };
  auto clean = FindNcclBadNodes(r, {.reference_gbs = 250}, Io());  // the table's: 257.82
  ASSERT_TRUE(clean) << clean.error().message;
  EXPECT_TRUE(clean->clean) << NcclBadNodeText(*clean);
  EXPECT_EQ(clean->exit_code, 0);
  EXPECT_EQ(slow_nodes(clean->record), 1);
  auto alone = FindNcclBadNodes(r, {}, Io());
  ASSERT_TRUE(alone) << alone.error().message;
  EXPECT_FALSE(alone->clean) << NcclBadNodeText(*alone);
  EXPECT_EQ(alone->exit_code, 0);
  EXPECT_EQ(slow_nodes(alone->record), 0);
  EXPECT_TRUE(std::ranges::any_of(alone->record.findings, [](const Finding& f) {
    return f.check_id == "network.nccl-bad-node" && f.status == CheckStatus::kWarn &&
           f.message.starts_with("nothing to judge the figures by: two nodes alone");
  })) << NcclBadNodeText(*alone);
  NcclSweepIo io = Io();
  io.interrupted = [] { return true; };
  auto stopped = FindNcclBadNodes(r, {}, io);
  ASSERT_TRUE(stopped) << stopped.error().message;
  EXPECT_TRUE(stopped->interrupted);
  EXPECT_TRUE(stopped->verdict.slow.empty());
  EXPECT_EQ(slow_nodes(stopped->record), 0);
  EXPECT_TRUE(std::ranges::any_of(stopped->record.findings, [](const Finding& f) {
    return f.check_id == "network.nccl-bad-node" && f.status == CheckStatus::kUnknown;
  }));
}

// What Slurm cannot say is said, and the sweep goes on (stand-in squeue and sinfo, found as
// the sweep's own find_program finds them): a Slurm that cannot be asked; an sinfo that fails,
// leaving node names alone to match; hosts that are no Slurm node by any name.
TEST_F(NcclSweepTest, WhatSlurmCannotSayIsSaid) {
  NcclSweepRequest r = Request();
  r.sweep.collectives = {"alltoall"};
  const auto sweep_with = [&](const std::string& squeue, const std::string& sinfo) {
    Script("squeue", squeue);
    Script("sinfo", sinfo);
    progress_.clear();
    NcclSweepIo io = Io();
    io.find_program = [this](const std::string& name) { return dir_.File("nccl-tests/" + name); };
    auto report = SweepNccl(r, io);
    EXPECT_TRUE(report) << report.error().message;
    EXPECT_EQ(report ? report->steps.size() : 0U, 1U);
  };
  const auto said = [this](const std::string& line) {
    return std::ranges::find(progress_, line) != progress_.end();
  };
  sweep_with("echo 'squeue: fatal: Could not establish a configuration source' >&2\nexit 1\n",
             "exit 1\n");
  EXPECT_TRUE(
      said("not checked for others' Slurm jobs: squeue exit 1: squeue: fatal: Could not "
           "establish a configuration source"))
      << Join(progress_, "\n");
  sweep_with("exit 0\n", "echo 'sinfo: error: slurm_load_node: Access denied' >&2\nexit 1\n");
  EXPECT_TRUE(
      said("sinfo exit 1: sinfo: error: slurm_load_node: Access denied: hosts matched to "
           "Slurm's nodes by node name only"))
      << Join(progress_, "\n");
  sweep_with("exit 0\n", "echo 'gpu1|gpu1|10.0.0.1'\n");
  EXPECT_TRUE(said("no Slurm node by these names, so not checked for others' jobs: localhost"))
      << Join(progress_, "\n");
}

TEST_F(NcclSweepTest, AMissingBuildFolderOrBinaryStopsBeforeAnyStep) {
  NcclSweepRequest r = Request();
  r.nccl_tests_dir = dir_.File("nowhere");
  auto report = SweepNccl(r, Io());
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("not a folder"), std::string::npos);
  r = Request();
  r.sweep.collectives = {"sendrecv"};
  report = SweepNccl(r, Io());
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("no nccl-tests binary for sendrecv"), std::string::npos);
  r = Request();
  r.analysis.platform = "nosuch";
  report = SweepNccl(r, Io());
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("no platform 'nosuch'"), std::string::npos);
  EXPECT_TRUE(progress_.empty());
  EXPECT_FALSE(fs_.Exists(dir_.File("cmax.db")));
}

}  // namespace
}  // namespace cmax::net
