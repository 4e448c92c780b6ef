// `lab down` stops only what the lab started: a recorded pid that now belongs to another
// process (pid reuse) is left alone. Real processes, no Slurm needed.
#include <signal.h>

#include <gtest/gtest.h>
#include <thread>

#include "lab/lab.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::lab {
namespace {

using namespace std::chrono_literals;

class LabDownTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int pid : started_) ::kill(pid, SIGKILL);
  }
  int StartSleeper() {
    auto pid = sys::SpawnDaemon({{"sleep", "60"}, {}, dir_.File("sleep.log"), dir_.Path()});
    EXPECT_TRUE(pid) << pid.error().message;
    started_.push_back(*pid);
    return *pid;
  }
  void WriteState(const std::vector<Daemon>& daemons) {
    LabState state;
    state.spec.dir = dir_.Path();
    state.daemons = daemons;
    ASSERT_TRUE(fs_.WriteFileAtomic(PathsFor(dir_.Path()).state_file, SerializeState(state), 0644));
  }
  static bool GoneWithin(int pid, std::chrono::milliseconds limit) {
    return testing::WaitUntil([&] { return !sys::ProcessAlive(pid); }, limit, 10ms);
  }

  testing::TempDir dir_;
  std::vector<int> started_;
  SystemClock clock_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  LabContext ctx_{fs_, runner_, clock_, {}};
};

TEST_F(LabDownTest, LeavesAReusedPidAlone) {
  const int stranger = StartSleeper();
  const auto ticks = sys::ProcessStartTicks(stranger);
  ASSERT_TRUE(ticks);
  // The state says slurmd-gpu1 had this pid, but it started at another time: not ours.
  WriteState({{"slurmd-gpu1", "/usr/sbin/slurmd", stranger, *ticks + 12345, "/dev/null"}});
  auto down = Down(dir_.Path(), ctx_);
  ASSERT_TRUE(down) << down.error().message;
  EXPECT_EQ(down->not_ours, std::vector<std::string>{"slurmd-gpu1"});
  EXPECT_TRUE(down->stopped.empty());
  EXPECT_TRUE(sys::ProcessAlive(stranger)) << "down killed a process it did not start";
  EXPECT_FALSE(fs_.Exists(PathsFor(dir_.Path()).state_file));
}

TEST_F(LabDownTest, StopsWhatItStartedAndNotesWhatIsGone) {
  const int ours = StartSleeper();
  const auto ticks = sys::ProcessStartTicks(ours);
  ASSERT_TRUE(ticks);
  WriteState({{"munged", "/usr/sbin/munged", 999999, 1, "/dev/null"},
              {"slurmd-gpu1", "/usr/sbin/slurmd", ours, *ticks, "/dev/null"}});
  auto status = Status(dir_.Path(), ctx_);
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->Running());
  EXPECT_FALSE(status->nodes_error.empty()) << "no slurmctld, so no node states";
  auto down = Down(dir_.Path(), ctx_);
  ASSERT_TRUE(down) << down.error().message;
  EXPECT_EQ(down->stopped, std::vector<std::string>{"slurmd-gpu1"});
  EXPECT_EQ(down->already_gone, std::vector<std::string>{"munged"});
  EXPECT_TRUE(GoneWithin(ours, 2000ms));
}

TEST_F(LabDownTest, NoLabIsNotFoundAndADamagedStateIsAnError) {
  auto none = Down(dir_.Path(), ctx_);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(fs_.WriteFileAtomic(PathsFor(dir_.Path()).state_file, "{broken", 0644));
  auto damaged = Status(dir_.Path(), ctx_);
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(damaged.error().message.find("lab.json"), std::string::npos);
}

}  // namespace
}  // namespace cmax::lab
