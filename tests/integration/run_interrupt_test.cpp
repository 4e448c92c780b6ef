// `cmax run` interrupted by SIGTERM or SIGINT closes its run as interrupted with what it had.
// The real binary runs against a stand-in scontrol that hangs (a slow controller).
#include <signal.h>

#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <thread>

#include "store/store.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;

void WriteScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
}

// Output that never reached stdout (a full disk; /dev/full here) is a failure of the command,
// exit 3 with the cause, not 0: a script reading `cmax report > page.html && publish` must know.
TEST(StdoutLost, AWriteThatFailedIsExitThree) {
  struct stat full {};
  if (::stat("/dev/full", &full) != 0 || !S_ISCHR(full.st_mode)) GTEST_SKIP() << "no /dev/full";
  testing::TempDir dir;
  sys::PosixProcessRunner runner;
  // One line, a page, and 80 KB: more than a pipe holds, for the reader that stops below.
  for (const std::string& args :
       {std::string("--version"), "--db " + dir.File("cmax.db") + " db path",
        "--db " + dir.File("cmax.db") + " nccl platforms",
        "--db " + dir.File("cmax.db") + " audit --show --format json"}) {
    auto r =
        runner.Run({.argv = {"/bin/sh", "-c", "\"$0\" " + args + " > /dev/full", CMAX_BINARY}});
    ASSERT_TRUE(r) << args;
    EXPECT_EQ(r->exit_code, 3) << args << ": " << r->stderr_text;
    EXPECT_NE(r->stderr_text.find("cannot write to standard output: No space left on device"),
              std::string::npos)
        << args << ": " << r->stderr_text;
    auto fine =
        runner.Run({.argv = {"/bin/sh", "-c", "\"$0\" " + args + " > /dev/null", CMAX_BINARY}});
    ASSERT_TRUE(fine);
    EXPECT_EQ(fine->exit_code, 0) << args << ": " << fine->stderr_text;
    // A reader that stops early (`| head`): no failure of cmax's, and nothing said.
    auto head = runner.Run(
        {.argv = {"/bin/bash", "-c", "set -o pipefail; \"$0\" " + args + " | head -c 1 >/dev/null",
                  CMAX_BINARY}});
    ASSERT_TRUE(head);
    EXPECT_EQ(head->exit_code, 0) << args << ": " << head->stderr_text;
    EXPECT_EQ(head->stderr_text, "") << args;
  }
}

class InterruptTest : public ::testing::TestWithParam<int> {};

TEST_P(InterruptTest, RunIsClosedAsInterruptedWithItsFindings) {
  const int signal_number = GetParam();
  testing::TempDir dir;
  // Stand-ins for the Slurm client: sinfo answers, scontrol ping hangs.
  ::mkdir(dir.File("bin").c_str(), 0755);
  WriteScript(dir.File("bin/sinfo"), "echo slurm 22.05.8");
  // It says it started (a file the test waits for) and hangs; its sleep is this test's own
  // (the other signal's test may run at the same time).
  const std::string sleeper = "sleep " + std::to_string(60 + signal_number);
  WriteScript(dir.File("bin/scontrol"),
              "echo hanging > " + dir.File("scontrol.started") + "; exec " + sleeper);
  std::ofstream(dir.File("slurm.conf")) << "ClusterName=stand-in\n";
  const std::string db = dir.File("cmax.db");
  const std::string pid_file = dir.File("cmax.pid");

  std::optional<Result<sys::ProcessResult>> result;
  std::thread child([&] {
    sys::PosixProcessRunner runner;
    sys::ProcessSpec spec{.argv = {"echo $$ > " + pid_file + "; exec " + std::string(CMAX_BINARY) +
                                   " run --no-html --probe-timeout 60 --db " + db},
                          .use_shell = true,
                          .env_add = {"PATH=" + dir.File("bin") + ":/usr/bin:/bin",
                                      "SLURM_CONF=" + dir.File("slurm.conf")}};
    spec.timeout = 60s;
    result = runner.Run(spec);
  });

  // Wait until the run is open and its first findings are stored, then interrupt it.
  const bool started = testing::WaitUntil(
      [&] {
        auto store = store::Store::Open({.path = db, .create = false, .busy_timeout_ms = 200});
        if (!store) return false;
        auto runs = store->ListRuns(1);
        return runs && !runs->empty() && (*runs)[0].counts.Total() > 0;
      },
      10s);
  int pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_TRUE(started && pid > 0) << "cmax run did not start";
  // Into the hanging scontrol.
  ASSERT_TRUE(testing::WaitForText(dir.File("scontrol.started"), "hanging"));
  ::kill(pid, signal_number);
  child.join();

  ASSERT_TRUE(result.has_value() && *result) << "the child did not run";
  EXPECT_EQ((*result)->exit_code, 128 + signal_number) << (*result)->stderr_text;
  EXPECT_LT((*result)->duration, 20s) << "the hanging probe was not cut short";
  EXPECT_NE((*result)->stderr_text.find("interrupted"), std::string::npos);

  auto store = store::Store::Open({.path = db, .create = false});
  ASSERT_TRUE(store);
  auto record = store->LoadRun(store->LatestRunId().value());
  ASSERT_TRUE(record);
  EXPECT_EQ(record->run.state, RunState::kInterrupted);
  EXPECT_EQ(record->run.exit_code, 128 + signal_number);
  EXPECT_TRUE(record->run.ended_at.has_value());
  bool has_host = false;
  bool has_scheduler = false;
  for (const Finding& f : record->findings) {
    has_host |= f.check_id == "host.kernel";
    has_scheduler |= f.check_id == "scheduler.slurm";
  }
  EXPECT_TRUE(has_host) << "what the run had before the signal is kept";
  EXPECT_FALSE(has_scheduler) << "a probe cut short is not recorded as a finding";
  // The hanging stand-in was killed with its process group.
  sys::PosixProcessRunner runner;
  std::string survivors;
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        auto sleepers = runner.Run({.argv = {"pgrep", "-f", "^" + sleeper + "$"}});
        survivors = sleepers ? sleepers->stdout_text : "";
        return sleepers && sleepers->exit_code != 0;
      },
      5s))
      << "scontrol stand-in survived: " << survivors;
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptTest, ::testing::Values(SIGTERM, SIGINT));

}  // namespace
}  // namespace cmax
