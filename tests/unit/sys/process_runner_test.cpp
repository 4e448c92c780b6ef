#include "sys/process_runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>

#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/interrupt.hpp"

namespace cmax::sys {
namespace {

using namespace std::chrono_literals;

ProcessSpec Shell(const std::string& script, Duration timeout = 10s) {
  ProcessSpec spec{.argv = {script}, .use_shell = true};
  spec.timeout = timeout;
  return spec;
}

TEST(ProcessRunner, CapturesOutputAndExitCode) {
  PosixProcessRunner runner;
  auto r = runner.Run(Shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->signal, 0);
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "err\n");
  EXPECT_FALSE(r->Succeeded());
  EXPECT_EQ(r->Describe(), "exit 3");
}

TEST(ProcessRunner, RunsArgvWithoutAShell) {
  PosixProcessRunner runner;
  // With no shell, metacharacters are plain arguments.
  auto r = runner.Run({.argv = {"echo", "$HOME", ";", "ls"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text, "$HOME ; ls\n");
  EXPECT_TRUE(r->Succeeded());
}

TEST(ProcessRunner, MissingProgramIsAnError) {
  PosixProcessRunner runner;
  auto r = runner.Run({.argv = {"/no/such/program"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("/no/such/program"), std::string::npos);
  EXPECT_FALSE(runner.Run({.argv = {}}));
  EXPECT_FALSE(runner.Run({.argv = {"a", "b"}, .use_shell = true}));
}

TEST(ProcessRunner, ReportsTheSignalThatEndedIt) {
  PosixProcessRunner runner;
  auto r = runner.Run(Shell("kill -SEGV $$"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->signal, SIGSEGV);
  EXPECT_EQ(r->exit_code, -1);
}

TEST(ProcessRunner, TimeoutKillsTheWholeProcessGroup) {
  testing::TempDir dir;
  const std::string pid_file = dir.File("grandchild.pid");
  PosixProcessRunner runner;
  // The grandchild ignores SIGTERM and keeps the pipes open: only SIGKILL to the group ends it.
  auto spec = Shell("(trap '' TERM; echo $$ >/dev/null; sh -c 'echo $$ > " + pid_file +
                        "; trap \"\" TERM; exec sleep 30') & wait",
                    300ms);
  spec.kill_grace = 200ms;
  const auto start = std::chrono::steady_clock::now();
  auto r = runner.Run(spec);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->Succeeded());
  EXPECT_LT(took, 5s);
  std::ifstream in(pid_file);
  int grandchild = 0;
  ASSERT_TRUE(in >> grandchild);
  // Give the kernel a moment to tear it down, then it must be gone (or a zombie).
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessAlive(grandchild); }, 1s, 10ms));
  EXPECT_FALSE(ProcessAlive(grandchild)) << "grandchild " << grandchild << " survived";
}

// Output is handed over as it comes, from both streams; asked to stop, the runner sends
// SIGTERM to the group (here answered with a last word and exit 0), and says it stopped it.
TEST(ProcessRunner, OutputFollowedAsItComesAndAStopOnRequest) {
  PosixProcessRunner runner;
  auto spec = Shell(
      "trap 'echo bye; exit 0' TERM; echo to-stderr >&2; i=0; while :; do i=$((i+1)); "
      "echo line $i; done",
      30s);
  std::string seen_out;
  std::string seen_err;
  spec.on_output = [&](int stream, std::string_view data) {
    (stream == 1 ? seen_out : seen_err).append(data);
    return seen_out.find("line 100\n") == std::string::npos;
  };
  auto r = runner.Run(spec);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->stopped);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 0);  // its TERM trap ended it
  EXPECT_NE(seen_out.find("line 100\n"), std::string::npos);
  EXPECT_NE(seen_out.find("bye\n"), std::string::npos);  // what it said after the stop, too
  EXPECT_EQ(seen_err, "to-stderr\n");
  EXPECT_EQ(r->stdout_text.substr(0, 14), "line 1\nline 2\n");
  EXPECT_NE(r->Describe().find("stopped as asked"), std::string::npos) << r->Describe();
}

// A program that says nothing can still be stopped: keep_running is asked as it runs (a server
// whose client gave up), and false stops it as on_output's false does.
TEST(ProcessRunner, AQuietProgramStoppedWhenKeepRunningSaysNo) {
  PosixProcessRunner runner;
  const testing::TempDir dir;
  const std::string ready = dir.File("ready");
  auto spec = Shell("echo up > '" + ready + "'; exec tail -f /dev/null", 30s);  // quiet, endless
  int asked = 0;
  spec.keep_running = [&] {
    ++asked;
    return !std::filesystem::exists(ready);  // stop once it has shown it runs
  };
  auto r = runner.Run(spec);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->stopped);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_GE(asked, 1);
  EXPECT_LT(r->duration, 10s);
}

TEST(ProcessRunner, DoesNotWaitForABackgroundChildThatKeepsThePipes) {
  PosixProcessRunner runner;
  const auto start = std::chrono::steady_clock::now();
  auto r = runner.Run(Shell("sleep 3 & echo started", 10s));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->stdout_text, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(ProcessRunner, WriterAsFastAsWeReadCannotDefeatTheTimeout) {
  PosixProcessRunner runner;
  const auto start = std::chrono::steady_clock::now();
  auto r = runner.Run(Shell("exec yes", 300ms));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(ProcessRunner, CapsOutputAndStillDrainsIt) {
  PosixProcessRunner runner;
  auto spec = Shell("head -c 300000 /dev/zero; echo done >&2");
  spec.output_cap = 1000;
  auto r = runner.Run(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->stdout_text.size(), 1000u);
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_EQ(r->stderr_text, "done\n");
  EXPECT_FALSE(r->stderr_truncated);
}

TEST(ProcessRunner, FeedsStdinAndSetsEnvironmentAndFolder) {
  testing::TempDir dir;
  PosixProcessRunner runner;
  ProcessSpec spec{.argv = {"sh", "-c", "cat; echo \" $CMAX_TEST_VAR\"; pwd"},
                   .env_add = {"CMAX_TEST_VAR=hello"},
                   .cwd = dir.Path(),
                   .stdin_data = std::string("input")};
  auto r = runner.Run(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text, "input hello\n" + dir.Path() + "\n");
}

// "NAME" alone removes a variable of ours from the child's environment; "NAME=" sets it empty
// (what a host's Slurm would read as a configuration file of no name).
TEST(ProcessRunner, ANameAloneRemovesTheVariable) {
  ::setenv("CMAX_TEST_GONE", "ours", 1);
  ::setenv("CMAX_TEST_EMPTY", "ours", 1);
  PosixProcessRunner runner;
  auto r =
      runner.Run({.argv = {"sh", "-c", "echo ${CMAX_TEST_GONE-unset} [${CMAX_TEST_EMPTY-unset}]"},
                  .env_add = {"CMAX_TEST_GONE", "CMAX_TEST_EMPTY="}});
  ::unsetenv("CMAX_TEST_GONE");
  ::unsetenv("CMAX_TEST_EMPTY");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->stdout_text, "unset []\n");
}

TEST(ProcessRunner, LargeStdinDoesNotDeadlock) {
  PosixProcessRunner runner;
  ProcessSpec spec{.argv = {"wc", "-c"}, .stdin_data = std::string(1 << 20, 'x')};
  auto r = runner.Run(spec);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_text, "1048576\n");
}

TEST(ProcessRunner, InterruptStopsTheChild) {
  PosixProcessRunner runner;
  testing::TempDir dir;
  const std::string started = dir.File("started");
  std::thread interrupter([&] {
    (void)testing::WaitForText(started, "sleeping");  // the child runs
    RequestInterrupt(SIGINT);
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = runner.Run(Shell("echo sleeping > " + started + "; sleep 20", 30s));
  interrupter.join();
  ClearInterrupt();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(ProcessRunner, DaemonOutlivesItsStarterAndIsNotOurChild) {
  testing::TempDir dir;
  auto pid = SpawnDaemon({{"sleep", "30"}, {}, dir.File("daemon.log"), dir.Path()});
  ASSERT_TRUE(pid) << pid.error().message;
  EXPECT_TRUE(ProcessAlive(*pid));
  EXPECT_NE(::getppid(), *pid);
  auto ticks = ProcessStartTicks(*pid);
  EXPECT_TRUE(ticks);
  ::kill(*pid, SIGKILL);
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessAlive(*pid); }, 2s, 10ms));
  auto missing = SpawnDaemon({{"/no/such/daemon"}, {}, dir.File("daemon.log"), dir.Path()});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(ProcessRunner, FindsProgramsOnPath) {
  EXPECT_FALSE(FindProgram("sh").empty());
  EXPECT_TRUE(FindProgram("no-such-program-cmax").empty());
  EXPECT_FALSE(ProcessAlive(0));
  EXPECT_TRUE(ProcessAlive(::getpid()));
}

}  // namespace
}  // namespace cmax::sys
