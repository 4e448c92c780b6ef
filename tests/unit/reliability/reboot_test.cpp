// Reboot timing over a stand-in scheduler on a clock the test moves: a node that comes back and
// whose GPUs answer, one that never comes back, one whose GPUs never answer.
#include "reliability/reboot.hpp"

#include <gtest/gtest.h>

#include "support/read_only_scheduler.hpp"

namespace cmax::reliability {
namespace {

using namespace std::chrono_literals;

// Reboots take `boot_after` on the clock; the scheduler does not answer while the node is down.
class RebootingScheduler final : public testing::ReadOnlyScheduler {
 public:
  RebootingScheduler(ManualClock& clock, std::optional<Duration> boot_after)
      : clock_(clock), boot_after_(boot_after) {}
  Result<std::string> BootTime(const std::string&) override {
    if (!rebooted_) return std::string("2026-11-30T00:00:00");
    const Duration since = clock_.Now() - *rebooted_;
    if (!boot_after_ || since < *boot_after_) {
      if (since < 5s) return std::string("2026-11-30T00:00:00");
      return Fail(ErrorCode::kUnavailable, "node not responding");
    }
    return std::string("2026-11-30T01:00:00");
  }
  Result<std::string> Reboot(const std::string& node, const std::string& reason) override {
    calls.push_back("reboot " + node + " " + reason);
    rebooted_ = clock_.Now();
    return std::string("reboot requested");
  }
  Result<std::string> Resume(const std::string& node) override {
    calls.push_back("resume " + node);
    return std::string("resumed");
  }

  std::vector<std::string> calls;

 private:
  ManualClock& clock_;
  std::optional<Duration> boot_after_;
  std::optional<WallTime> rebooted_;
};

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};

TEST(RebootTiming, BootedThenGpusAnswer) {
  ManualClock clock(kT0);
  RebootingScheduler s(clock, 90s);
  int asked = 0;
  RebootHooks hooks{[&]() -> Result<std::string> {
                      if (++asked < 3) return Fail(ErrorCode::kIo, "driver not loaded yet");
                      return std::string("GPU 0: NVIDIA H100");
                    },
                    {}};
  auto t = TimeReboot(s, clock, "gpu1", 1s, 10min, hooks);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->failure.empty()) << t->failure;
  EXPECT_EQ(t->booted, Duration(90s));
  EXPECT_EQ(t->gpu_ready, Duration(92s));
  EXPECT_EQ(t->gpu_output, "GPU 0: NVIDIA H100");
  EXPECT_EQ(t->boot_after, "2026-11-30T01:00:00");
  EXPECT_EQ(s.calls, (std::vector<std::string>{"reboot gpu1 cmax: reboot timing", "resume gpu1"}));
  EXPECT_EQ(t->undo, "");  // cmax put it back itself
}

TEST(RebootTiming, ANodeThatNeverComesBackIsAFailureWithTheReason) {
  ManualClock clock(kT0);
  RebootingScheduler s(clock, std::nullopt);
  RebootHooks hooks{[]() -> Result<std::string> { return std::string("never asked"); }, {}};
  auto t = TimeReboot(s, clock, "gpu1", 1s, 5min, hooks);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->booted);
  EXPECT_EQ(t->failure, "no new boot time within 5m00s");
  // Left out of service with cmax's reason: the way back is said.
  EXPECT_NE(t->undo.find("scontrol update nodename=gpu1 state=resume"), std::string::npos)
      << t->undo;
}

TEST(RebootTiming, GpusThatNeverAnswerAreAFailure) {
  ManualClock clock(kT0);
  RebootingScheduler s(clock, 30s);
  RebootHooks hooks{
      []() -> Result<std::string> { return Fail(ErrorCode::kIo, "No devices were found"); }, {}};
  auto t = TimeReboot(s, clock, "gpu1", 1s, 2min, hooks);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->booted, Duration(30s));
  EXPECT_FALSE(t->gpu_ready);
  EXPECT_EQ(t->failure, "the GPU query did not work within 2m00s: No devices were found");
}

}  // namespace
}  // namespace cmax::reliability
