// Timelines and verdicts from observations: pass, late, never, lost contact, a watch that
// ended early; the pass bars as data.
#include "reliability/timeline.hpp"

#include <gtest/gtest.h>

namespace cmax::reliability {
namespace {

using namespace std::chrono_literals;
using K = ObservationKind;

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};

WallTime At(Duration d) {
  return kT0 + std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

const PassBars& Hgx() {
  return BuiltinPassBars().at("hgx");
}
const PassBars& Nvl72() {
  return BuiltinPassBars().at("nvl72");
}

TEST(Timeline, BuiltinBarsAreTheRatingsBars) {
  EXPECT_EQ(Hgx().detect, 120s);
  EXPECT_EQ(Hgx().replace, Duration(3600s));
  EXPECT_EQ(Nvl72().out_of_service, 120s);
  EXPECT_FALSE(Nvl72().replace.has_value());
}

TEST(Timeline, AProviderThatDrainsAndSwapsInTimePasses) {
  const std::vector<Observation> seen = {
      {At(-5s), "gpu1", K::kDrained, "old drain, before the injection"},
      {At(1s), "gpu2", K::kDrained, "another node"},
      {At(3s), "gpu1", K::kDrained, "cmax: Xid 79 on 0000:17:00"},
      {At(40s), "spare1", K::kSpareIn, ""},
      {At(90s), "gpu1", K::kResumed, ""}};
  const Timeline t = BuildTimeline("gpu1", kT0, seen, At(100s));
  EXPECT_EQ(t.detected, Duration(3s));
  EXPECT_EQ(t.detected_by, "drained: cmax: Xid 79 on 0000:17:00");
  EXPECT_EQ(t.out_of_service, Duration(3s));
  EXPECT_EQ(t.replaced, Duration(40s));
  EXPECT_EQ(t.spare, "spare1");
  EXPECT_EQ(t.back, Duration(90s));
  EXPECT_TRUE(Decided(t, Hgx()));
  const Judgement j = Judge(t, Hgx());
  EXPECT_EQ(j.verdict, Verdict::kPass);
  ASSERT_EQ(j.reasons.size(), 3U);
  EXPECT_EQ(j.reasons[0], "detected in 3.00s (bar 2m00s): drained: cmax: Xid 79 on 0000:17:00");
}

TEST(Timeline, NoDrainWithinTheBarFails) {
  const Timeline t = BuildTimeline("gpu1", kT0, {}, At(121s));
  const Judgement j = Judge(t, Nvl72());
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_EQ(j.reasons[0], "no drain, cordon, taint or alert within 2m00s");
  EXPECT_EQ(j.reasons[1], "no drain within 2m00s");
  EXPECT_TRUE(Decided(t, Nvl72()));
}

TEST(Timeline, AnAlertDetectsButDoesNotTakeOut) {
  const std::vector<Observation> seen = {{At(10s), "gpu1", K::kAlert, "GpuXid79"}};
  const Timeline t = BuildTimeline("gpu1", kT0, seen, At(130s));
  EXPECT_EQ(t.detected, Duration(10s));
  EXPECT_FALSE(t.out_of_service);
  EXPECT_EQ(Judge(t, Nvl72()).verdict, Verdict::kFail);  // health output nothing acts on
}

TEST(Timeline, LateIsAFailThatSaysHowLate) {
  const std::vector<Observation> seen = {{At(190s), "gpu1", K::kDrained, "x"}};
  const Judgement j = Judge(BuildTimeline("gpu1", kT0, seen, At(200s)), Nvl72());
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_EQ(j.reasons[1], "out of service only after 3m10s (bar 2m00s)");
}

TEST(Timeline, LostContactIsUnknownNeverPass) {
  const std::vector<Observation> seen = {{At(30s), "", K::kContactLost, "sinfo: timed out"}};
  const Timeline t = BuildTimeline("gpu1", kT0, seen, At(300s));
  const Judgement j = Judge(t, Nvl72());
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_NE(j.reasons[0].find("lost contact"), std::string::npos) << j.reasons[0];
  // Drained in time, spare never seen because contact was lost before its bar: unknown.
  const std::vector<Observation> partly = {{At(5s), "gpu1", K::kDrained, "x"},
                                           {At(60s), "", K::kContactLost, ""}};
  EXPECT_EQ(Judge(BuildTimeline("gpu1", kT0, partly, At(4000s)), Hgx()).verdict, Verdict::kUnknown);
}

TEST(Timeline, AWatchThatEndedEarlyIsUnknownAndNotDecided) {
  const std::vector<Observation> seen = {{At(5s), "gpu1", K::kDrained, "x"}};
  const Timeline t = BuildTimeline("gpu1", kT0, seen, At(60s));
  EXPECT_FALSE(Decided(t, Hgx()));  // the spare may still come
  const Judgement j = Judge(t, Hgx());
  EXPECT_EQ(j.verdict, Verdict::kUnknown);
  EXPECT_EQ(j.reasons[2], "spare in service: unknown, watched only 1m00s of 1h00m");
}

TEST(Timeline, BarsAreData) {
  auto bars = ParsePassBars(R"({"schema": "cmax.reliability-bars/v1",
    "architectures": {"lab": {"detect_s": 1.5, "out_of_service_s": 2}}})");
  ASSERT_TRUE(bars) << bars.error().message;
  EXPECT_EQ(bars->at("lab").detect, 1500ms);
  EXPECT_FALSE(ParsePassBars("{}"));
  EXPECT_FALSE(ParsePassBars(R"({"schema": "cmax.reliability-bars/v1", "architectures": {}})"));
  EXPECT_FALSE(ParsePassBars(R"({"schema": "cmax.reliability-bars/v1",
    "architectures": {"x": {"detect_s": -1, "out_of_service_s": 2}}})"));
  EXPECT_FALSE(ParsePassBars(R"({"schema": "cmax.reliability-bars/v1",
    "architectures": {"x": {"detect_s": 1}}})"));
  // Two bars for one step: which was meant is not ours to guess.
  auto twice = ParsePassBars(R"({"schema": "cmax.reliability-bars/v1",
    "architectures": {"x": {"detect_s": 1, "out_of_service_s": 2,
                            "detect_s": 60}}})");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message,
            "pass bars: line 3: the key \"detect_s\" appears twice in one object");
}

}  // namespace
}  // namespace cmax::reliability

namespace cmax::reliability {
namespace {

using namespace std::chrono_literals;

// A scenario's own bar for the node coming back: the watch goes on until it is met or missed.
TEST(Timeline, ABackInServiceBarKeepsTheWatchUntilTheNodeIsBack) {
  const WallTime t0{std::chrono::milliseconds(1'800'000'000'000)};
  const auto at = [&](Duration d) {
    return t0 + std::chrono::duration_cast<std::chrono::milliseconds>(d);
  };
  const PassBars bars{"custom", 2s, 2s, std::nullopt, Duration(60s)};
  std::vector<Observation> seen = {{at(1s), "gpu1", ObservationKind::kDrained, "cmax: Xid 48"}};
  EXPECT_FALSE(Decided(BuildTimeline("gpu1", t0, seen, at(10s)), bars)) << "not back yet";
  seen.push_back({at(12s), "gpu1", ObservationKind::kResumed, ""});
  const Timeline back = BuildTimeline("gpu1", t0, seen, at(12s));
  EXPECT_TRUE(Decided(back, bars));
  const Judgement passed = Judge(back, bars);
  EXPECT_EQ(passed.verdict, Verdict::kPass);
  ASSERT_EQ(passed.reasons.size(), 3U);
  EXPECT_EQ(passed.reasons[2], "back in service in 12.00s (bar 1m00s)");
  seen.pop_back();
  const Timeline never = BuildTimeline("gpu1", t0, seen, at(61s));
  EXPECT_TRUE(Decided(never, bars));
  const Judgement failed = Judge(never, bars);
  EXPECT_EQ(failed.verdict, Verdict::kFail);
  EXPECT_EQ(failed.reasons[2], "not back in service within 1m00s");
}

}  // namespace
}  // namespace cmax::reliability
