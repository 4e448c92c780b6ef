#include "remediate/fleet.hpp"

#include <algorithm>
#include <gtest/gtest.h>

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;
using S = NodeState;

const WallTime kNow{std::chrono::milliseconds(1'800'000'000'000)};

TEST(Breaker, ThreeOfFourAtOnceTripsOnTheThird) {
  const BreakerConfig config;  // more than 50% within 5 min
  const BreakerState closed;
  std::vector<TakeOut> out;
  EXPECT_TRUE(CheckBreaker(closed, out, "n1", 4, kNow, config).allow);  // 1 of 4
  out.push_back({"n1", kNow});
  EXPECT_TRUE(CheckBreaker(closed, out, "n2", 4, kNow, config).allow);  // 2 of 4 = 50%, not more
  out.push_back({"n2", kNow});
  const BreakerVerdict third = CheckBreaker(closed, out, "n3", 4, kNow, config);
  EXPECT_FALSE(third.allow);
  EXPECT_TRUE(third.trips_now);
  EXPECT_EQ(third.reason, "3 of 4 nodes taken out within 5m00s (limit 50%)");
}

TEST(Breaker, OneNodeTakenOutAgainAndAgainIsNotAStorm) {
  const std::vector<TakeOut> out{{"n1", kNow - 1min}, {"n1", kNow - 2min}, {"n1", kNow - 3min}};
  EXPECT_TRUE(CheckBreaker({}, out, "n1", 4, kNow, BreakerConfig{}).allow);
  EXPECT_TRUE(CheckBreaker({}, out, "n2", 4, kNow, BreakerConfig{}).allow);  // 2 of 4
}

TEST(Breaker, OldTakeOutsAndFutureOnesDoNotCount) {
  const BreakerConfig config;
  const std::vector<TakeOut> out{{"a", kNow - 5min}, {"b", kNow - 10min}, {"c", kNow + 1h}};
  EXPECT_TRUE(CheckBreaker({}, out, "d", 4, kNow, config).allow);
}

TEST(Breaker, StaysTrippedUntilAPersonResetsIt) {
  BreakerState tripped;
  tripped.tripped = true;
  tripped.reason = "3 of 4";
  const BreakerVerdict v = CheckBreaker(tripped, {}, "n1", 1000, kNow, BreakerConfig{});
  EXPECT_FALSE(v.allow);
  EXPECT_FALSE(v.trips_now);
  EXPECT_EQ(v.reason, "circuit breaker tripped: 3 of 4");
}

TEST(Breaker, EmptyFleetCountsAsOneNode) {
  BreakerConfig config;
  config.max_fraction = 1.0;
  EXPECT_TRUE(CheckBreaker({}, {}, "n1", 0, kNow, config).allow);
  config.max_fraction = 0.5;
  EXPECT_FALSE(CheckBreaker({}, {}, "n1", 0, kNow, config).allow);
}

TEST(RateLimit, CountsOnlyTheWindow) {
  const RateLimit limit{2, 1h};
  EXPECT_TRUE(WithinRateLimit(std::vector<WallTime>{kNow - 2h, kNow - 90min}, kNow, limit));
  EXPECT_TRUE(WithinRateLimit(std::vector<WallTime>{kNow - 10min}, kNow, limit));
  EXPECT_FALSE(WithinRateLimit(std::vector<WallTime>{kNow - 10min, kNow - 1min}, kNow, limit));
}

RackView Rack(int out, std::set<std::string> held = {}) {
  RackView rack;
  rack.name = "r1";
  for (int i = 1; i <= 18; ++i) {
    rack.trays["tray" + std::to_string(i)] = i <= out ? S::kQuarantined : S::kHealthy;
  }
  rack.held = std::move(held);
  return rack;
}

TEST(Rack, TwoTraysOutIsDegradedAndHoldsNothing) {
  const RackPlan plan = PlanRack(Rack(2), RackConfig{});
  EXPECT_EQ(plan.health, RackHealth::kDegraded);
  EXPECT_EQ(plan.out, 2);
  EXPECT_TRUE(plan.hold.empty());
  EXPECT_TRUE(plan.reason.empty());
}

TEST(Rack, ThreeTraysOutTakesTheRestOutOfScheduling) {
  const RackPlan plan = PlanRack(Rack(3), RackConfig{});
  EXPECT_EQ(plan.health, RackHealth::kDown);
  EXPECT_EQ(plan.hold.size(), 15U);
  EXPECT_EQ(plan.reason, "cmax: rack r1 down (3 of 18 trays out)");
  EXPECT_TRUE(std::ranges::find(plan.hold, "tray1") == plan.hold.end());  // already out
}

TEST(Rack, HeldTraysAreNotHeldTwiceAndComeBackWithTheRack) {
  RackView rack = Rack(3, {"tray4", "tray5"});
  RackPlan plan = PlanRack(rack, RackConfig{});
  EXPECT_EQ(plan.hold.size(), 13U);
  EXPECT_TRUE(plan.release.empty());
  rack.trays["tray3"] = S::kReintroduced;  // back to two out: the rack is up again
  plan = PlanRack(rack, RackConfig{});
  EXPECT_EQ(plan.health, RackHealth::kDegraded);
  EXPECT_EQ(plan.release, (std::vector<std::string>{"tray4", "tray5"}));
  EXPECT_TRUE(plan.hold.empty());
}

TEST(Rack, HeldTrayThatFailsOrLeavesIsForgotten) {
  RackView rack = Rack(3, {"tray4", "tray99"});
  rack.trays["tray4"] = S::kRepair;
  const RackPlan plan = PlanRack(rack, RackConfig{});
  EXPECT_EQ(plan.out, 4);
  EXPECT_EQ(plan.forget, (std::vector<std::string>{"tray4", "tray99"}));
  EXPECT_TRUE(plan.release.empty());
}

TEST(Rack, DomainThatNeedsEveryTrayGoesDownWithOne) {
  RackConfig config;
  config.domain_survives_tray_loss = false;
  const RackPlan plan = PlanRack(Rack(1), config);
  EXPECT_EQ(plan.health, RackHealth::kDown);
  EXPECT_EQ(plan.hold.size(), 17U);
  EXPECT_EQ(plan.reason, "cmax: rack r1 NVLink domain needs every tray (1 out)");
  EXPECT_EQ(PlanRack(Rack(0), config).health, RackHealth::kUp);
}

TEST(Rack, OutOfServiceStates) {
  EXPECT_FALSE(OutOfService(S::kHealthy));
  EXPECT_FALSE(OutOfService(S::kSuspect));
  EXPECT_FALSE(OutOfService(S::kReintroduced));
  EXPECT_TRUE(OutOfService(S::kQuarantined));
  EXPECT_TRUE(OutOfService(S::kValidating));
  EXPECT_TRUE(OutOfService(S::kRepair));
  EXPECT_TRUE(OutOfService(S::kRetired));
}

TEST(RackFile, RangesListsAndComments) {
  auto racks = ParseRacks(
      "# two NVL72 racks\n"
      "rack-a nvl-a[01-03]   # more later\n"
      "\n"
      "rack-b b1,b2 b[3-4,7] x[8-10]y\n");
  ASSERT_TRUE(racks) << racks.error().message;
  EXPECT_EQ(racks->at("rack-a"), (std::vector<std::string>{"nvl-a01", "nvl-a02", "nvl-a03"}));
  EXPECT_EQ(racks->at("rack-b"),
            (std::vector<std::string>{"b1", "b2", "b3", "b4", "b7", "x8y", "x9y", "x10y"}));
}

TEST(RackFile, RefusesWhatCannotBeRight) {
  EXPECT_FALSE(ParseRacks("rack-a t1 t2\nrack-b t2\n"));  // a tray in two racks
  EXPECT_FALSE(ParseRacks("rack-a t1\nrack-a t2\n"));     // a rack twice
  EXPECT_FALSE(ParseRacks("rack-a\n"));                   // no trays
  EXPECT_FALSE(ParseRacks("rack-a t[3-1]\n"));
  EXPECT_FALSE(ParseRacks(""));  // no rack: the rules would be off unsaid
  EXPECT_FALSE(ParseRacks("# only a comment\n\n"));
  EXPECT_FALSE(ParseRacks("rack\x1b[2J t1\n"));  // names go into drain reasons
  EXPECT_FALSE(ParseRacks("rack-a t[1-x]\n"));
  EXPECT_FALSE(ParseRacks("rack-a t[1-2\n"));
  EXPECT_FALSE(ParseRacks("rack-a t]1[\n"));
  EXPECT_FALSE(ParseRacks("rack-a t[1-2][3-4]\n"));
  EXPECT_FALSE(ParseRacks("rack-a t[1-9999999]\n"));
  const auto e = ParseRacks("rack-a t1\n\nrack-b t1\n");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("line 3"), std::string::npos) << e.error().message;
  EXPECT_FALSE(ParseRacks("# nothing\n"));
  // Saved on Windows: CRLF line ends are line ends.
  const auto crlf = ParseRacks("rack-a t1 t2\r\nrack-b t3\r\n");
  ASSERT_TRUE(crlf) << crlf.error().message;
  EXPECT_EQ(crlf->at("rack-a"), (std::vector<std::string>{"t1", "t2"}));
}

}  // namespace
}  // namespace cmax::remediate
