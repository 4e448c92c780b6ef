// Setting a controller up from what a person asked for: the checks on the settings, the config
// they make, the scheduler they name, one controller per store.
#include "remediate/settings.hpp"

#include <gtest/gtest.h>

#include "remediate/agent_hooks.hpp"
#include "store/store.hpp"
#include "support/fake_process_runner.hpp"
#include "support/temp_dir.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;

ControllerSettings Acting() {
  ControllerSettings s;
  s.act = true;
  s.validation_command = "dcgmi diag -r 3";
  return s;
}

TEST(ControllerSettings, TheConfigTheyMake) {
  sys::MemoryFileSystem fs;
  ControllerSettings s = Acting();
  s.breaker_percent = 25;
  s.breaker_window_s = 60;
  s.probation_min = 30;
  s.no_spares = true;
  s.escalation_faults = 4;
  s.validation_timeout_min = 10;
  s.nodes = {"gpu1"};
  const ControllerConfig c = BuildControllerConfig(s, fs).value();
  EXPECT_FALSE(c.dry_run);
  EXPECT_EQ(c.validation.command, "dcgmi diag -r 3");
  EXPECT_EQ(c.validation.timeout, 10min);
  EXPECT_DOUBLE_EQ(c.breaker.max_fraction, 0.25);
  EXPECT_EQ(c.breaker.window, 60s);
  EXPECT_EQ(c.policy.probation, 30min);
  EXPECT_EQ(c.policy.validation_timeout, 10min);
  EXPECT_FALSE(c.policy.spares);
  EXPECT_EQ(c.policy.escalation_faults, 4);
  EXPECT_EQ(c.policy.architecture, Architecture::kHgx);
  EXPECT_EQ(c.nodes, std::vector<std::string>{"gpu1"});
}

TEST(ControllerSettings, RefusedWithAReason) {
  sys::MemoryFileSystem fs;
  const auto refused = [&](ControllerSettings s, const std::string& why) {
    auto c = BuildControllerConfig(s, fs);
    ASSERT_FALSE(c) << why;
    EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(c.error().message.find(why), std::string::npos) << c.error().message;
  };
  refused(ControllerSettings{}, "say --act");  // neither --act nor --dry-run
  ControllerSettings both = Acting();
  both.dry_run = true;
  refused(both, "--act and --dry-run exclude each other");
  for (const char* node : {"", "a\x1b[2Jb", "gpu1 gpu2"}) {
    ControllerSettings named = Acting();
    named.nodes = {"gpu1", node};
    refused(named, "a node's name, without spaces or control characters");
  }
  ControllerSettings no_validation = Acting();
  no_validation.validation_command = "  ";
  refused(no_validation, "--validation-command is required");
  ControllerSettings breaker = Acting();
  breaker.breaker_percent = 101;
  refused(breaker, "--breaker-percent");
  ControllerSettings nan = Acting();
  nan.probation_min = std::nan("");
  refused(nan, "positive numbers");
  ControllerSettings arch = Acting();
  arch.architecture = "gb300";
  refused(arch, "hgx or nvl72");
  ControllerSettings racks = Acting();
  racks.racks_file = "/racks";
  refused(racks, "--racks needs --architecture nvl72");
  // A dry run needs no validation: it carries nothing out.
  ControllerSettings dry;
  dry.dry_run = true;
  EXPECT_TRUE(BuildControllerConfig(dry, fs));
}

TEST(ControllerSettings, RacksAreReadForNvl72) {
  sys::MemoryFileSystem fs;
  ASSERT_TRUE(fs.WriteFileAtomic("/racks", "rack-a tray[01-03]\n", 0644));
  ControllerSettings s = Acting();
  s.architecture = "nvl72";
  s.racks_file = "/racks";
  s.rack_down_at = 2;
  const ControllerConfig c = BuildControllerConfig(s, fs).value();
  ASSERT_EQ(c.racks.count("rack-a"), 1U);
  EXPECT_EQ(c.racks.at("rack-a").size(), 3U);
  EXPECT_EQ(c.rack.down_at, 2);
  s.racks_file = "/missing";
  EXPECT_FALSE(BuildControllerConfig(s, fs));
}

TEST(ControllerSettings, TheSchedulerTheyName) {
  testing::FakeProcessRunner runner;
  ManualClock clock{WallTime{}};
  ControllerSettings s = Acting();
  auto slurm = MakeScheduler(s, runner, clock, {});
  ASSERT_TRUE(slurm) << slurm.error().message;
  EXPECT_EQ((*slurm)->description, "Slurm");
  EXPECT_EQ((*slurm)->kube, nullptr);
  s.scheduler = "kubernetes";  // no API server anywhere: said so
  auto nowhere = MakeScheduler(s, runner, clock, {});
  EXPECT_FALSE(nowhere);
  s.scheduler = "pbs";
  auto unknown = MakeScheduler(s, runner, clock, {});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("slurm or kubernetes"), std::string::npos);
}

TEST(ControllerLock, OnePerStore) {
  testing::TempDir dir;
  const std::string store = dir.File("cmax.db");
  {
    auto first = ControllerLock::Take(store);
    ASSERT_TRUE(first) << first.error().message;
    const ControllerLock moved = std::move(*first);  // the lock goes with the move
    auto second = ControllerLock::Take(store);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code, ErrorCode::kBusy);
    EXPECT_NE(second.error().message.find("another controller"), std::string::npos);
  }
  EXPECT_TRUE(ControllerLock::Take(store)) << "released when its holder ends";
}

// The agent's hooks: nothing unless asked; a controller only with its settings and its lock.
TEST(AgentHooks, OnlyWhatWasAskedForAndOneControllerPerStore) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  auto store = store::Store::Open({.path = db});
  ASSERT_TRUE(store);
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;
  SystemClock clock;
  auto none = AgentHooks::Make({.node = "gpu1"}, db, *store, fs, runner, clock);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE((*none)->Empty());
  auto unset = AgentHooks::Make({.node = "gpu1", .remediate = true}, db, *store, fs, runner, clock);
  ASSERT_FALSE(unset);  // no validation command
  EXPECT_EQ(unset.error().code, ErrorCode::kInvalidArgument);
  auto mine = AgentHooks::Make({.node = "gpu1", .remediate_dry_run = true, .controller = Acting()},
                               db, *store, fs, runner, clock);
  ASSERT_TRUE(mine) << mine.error().message;
  EXPECT_FALSE((*mine)->Empty());
  auto second = AgentHooks::Make({.node = "gpu1", .remediate = true, .controller = Acting()}, db,
                                 *store, fs, runner, clock);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kBusy);  // the store's controller is the first's
}

}  // namespace
}  // namespace cmax::remediate
