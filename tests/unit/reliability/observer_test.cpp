// The observer: changes between two looks at the scheduler, and a watcher over a scripted
// scheduler that goes away and comes back.
#include "reliability/observer.hpp"

#include <deque>
#include <gtest/gtest.h>

#include "support/read_only_scheduler.hpp"

namespace cmax::reliability {
namespace {

using namespace std::chrono_literals;
using K = ObservationKind;
using remediate::SchedulerNode;

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};

TEST(Observer, DiffSeesDrainsResumesAndSpares) {
  const SchedulerView before = ViewOf({{"gpu1", "idle", false, "", {"gpu"}},
                                       {"gpu2", "drained", true, "old", {"gpu"}},
                                       {"spare1", "idle", false, "", {"spare"}}});
  const SchedulerView after = ViewOf({{"gpu1", "drained", true, "cmax: Xid 79", {"gpu"}},
                                      {"gpu2", "idle", false, "", {"gpu"}},
                                      {"spare1", "idle", false, "", {"gpu", "spare"}},
                                      {"new9", "idle", false, "", {"gpu"}}});
  const auto seen = Diff(before, after, "gpu", kT0);
  ASSERT_EQ(seen.size(), 4U);
  EXPECT_EQ(seen[0].node, "gpu1");
  EXPECT_EQ(seen[0].kind, K::kDrained);
  EXPECT_EQ(seen[0].detail, "cmax: Xid 79");
  EXPECT_EQ(seen[1].kind, K::kResumed);
  EXPECT_EQ(seen[2].node, "new9");
  EXPECT_EQ(seen[2].kind, K::kSpareIn);
  EXPECT_EQ(seen[3].node, "spare1");
  EXPECT_EQ(seen[3].kind, K::kSpareIn);
  EXPECT_TRUE(Diff(after, after, "gpu", kT0).empty());
}

TEST(Observer, AMaintenanceReservationIsOutOfService) {
  SchedulerNode n{"gpu1", "mixed", false, "", {"gpu"}};
  n.maintenance = true;
  const SchedulerView v = ViewOf({n});
  EXPECT_TRUE(v.at("gpu1").drain);
  EXPECT_EQ(v.at("gpu1").reason, "in a maintenance reservation");
}

TEST(Observer, ANewTaintIsSeenWhoeverSetIt) {
  SchedulerNode before{"gpu1", "ready", false, "", {"service"}};
  before.taints = {"nvidia.com/gpu:NoSchedule"};  // always there on GPU nodes: not news
  SchedulerNode after = before;
  after.taints.push_back("nvsentinel.dgxc.nvidia.com/quarantine:NoExecute");
  const auto seen = Diff(ViewOf({before}), ViewOf({after}), "service", kT0);
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].kind, K::kTainted);
  EXPECT_EQ(seen[0].detail, "nvsentinel.dgxc.nvidia.com/quarantine:NoExecute");
  // A taint counts as taken out of service on the timeline.
  const Timeline t = BuildTimeline("gpu1", kT0 - 1s, seen, kT0 + 1s);
  EXPECT_EQ(t.out_of_service, Duration(1s));
}

TEST(Observer, ANewNodeConditionIsAnAlert) {
  SchedulerNode before{"gpu1", "ready", false, "", {"service"}};
  before.conditions = {"MemoryPressure"};  // already there: not this injection's
  SchedulerNode after = before;
  after.conditions.push_back("GpuXidError");
  const auto seen = Diff(ViewOf({before}), ViewOf({after}), "service", kT0);
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].kind, K::kAlert);
  EXPECT_EQ(seen[0].detail, "node condition GpuXidError");
}

TEST(Observer, ANodeInTwoPartitionsIsOneNode) {
  const SchedulerView v =
      ViewOf({{"gpu1", "drained", true, "r", {"gpu"}}, {"gpu1", "drained", true, "r", {"debug"}}});
  ASSERT_EQ(v.size(), 1U);
  EXPECT_EQ(v.at("gpu1").partitions, (std::set<std::string>{"debug", "gpu"}));
}

class ScriptedScheduler final : public testing::ReadOnlyScheduler {
 public:
  std::deque<Result<std::vector<SchedulerNode>>> answers;
  Result<std::vector<SchedulerNode>> Nodes() override {
    auto a = answers.front();
    if (answers.size() > 1) answers.pop_front();
    return a;
  }
};

TEST(Observer, WatcherReportsLostContactOnceAndItsReturn) {
  ScriptedScheduler s;
  const std::vector<SchedulerNode> idle = {{"gpu1", "idle", false, "", {"gpu"}}};
  const std::vector<SchedulerNode> drained = {{"gpu1", "drained", true, "x", {"gpu"}}};
  s.answers = {idle, Fail(ErrorCode::kUnavailable, "slurmctld away"),
               Fail(ErrorCode::kUnavailable, "slurmctld away"), drained};
  ManualClock clock(kT0);
  Watcher w(s, clock, "gpu");
  ASSERT_TRUE(w.Baseline());
  clock.Advance(1s);
  auto seen = w.Poll();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].kind, K::kContactLost);
  EXPECT_EQ(seen[0].detail, "slurmctld away");
  EXPECT_TRUE(w.Poll().empty());  // still away: said once
  clock.Advance(1s);
  seen = w.Poll();
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0].kind, K::kContactBack);
  EXPECT_EQ(seen[1].kind, K::kDrained);
  EXPECT_EQ(seen[1].at, kT0 + 2s);

  ScriptedScheduler blind;
  blind.answers = {Fail(ErrorCode::kUnavailable, "no slurm")};
  Watcher w2(blind, clock, "gpu");
  EXPECT_FALSE(w2.Baseline());
}

}  // namespace
}  // namespace cmax::reliability
