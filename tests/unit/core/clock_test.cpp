#include "core/clock.hpp"

#include <cmath>
#include <gtest/gtest.h>

#include "core/log.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax {
namespace {

TEST(Clock, Iso8601RoundTrips) {
  const WallTime t{std::chrono::milliseconds(1795944148911)};
  const std::string text = FormatIso8601(t);
  EXPECT_EQ(text, "2026-11-29T09:22:28.911Z");
  auto back = ParseIso8601(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, t);
  EXPECT_EQ(ParseIso8601("2026-11-29T09:22:28Z").value(),
            WallTime{std::chrono::milliseconds(1795944148000)});
}

TEST(Clock, UtcYearAtTheTurnOfTheYear) {
  EXPECT_EQ(UtcYear(*ParseIso8601("2026-12-31T23:59:59Z")), 2026);
  EXPECT_EQ(UtcYear(*ParseIso8601("2027-01-01T00:00:00Z")), 2027);
  EXPECT_EQ(UtcYear(*ParseIso8601("1969-12-31T23:59:59Z")), 1969);
}

TEST(Clock, Iso8601RejectsOtherShapes) {
  for (const char* bad : {"", "2026-11-29", "2026-11-29 09:22:28Z", "2026-13-01T00:00:00Z",
                          "2026-11-29T09:22:28.9Z", "2026-11-29T09:22:28.911", "x"}) {
    EXPECT_FALSE(ParseIso8601(bad)) << bad;
  }
}

// A day the month lacks is refused rather than carried into the next month (timegm would read
// 2026-02-31 as 3 March).
TEST(Clock, Iso8601RejectsDaysTheCalendarLacks) {
  for (const char* bad : {"2026-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-31T00:00:00Z",
                          "2026-04-31T12:00:00Z", "2100-02-29T00:00:00Z", "2026-01-00T00:00:00Z"}) {
    EXPECT_FALSE(ParseIso8601(bad)) << bad;
  }
  EXPECT_EQ(FormatIso8601(*ParseIso8601("2024-02-29T00:00:00Z")), "2024-02-29T00:00:00.000Z");
  EXPECT_EQ(FormatIso8601(*ParseIso8601("2000-02-29T00:00:00Z")), "2000-02-29T00:00:00.000Z");
  EXPECT_EQ(FormatIso8601(*ParseIso8601("2026-12-31T23:59:60Z")), "2027-01-01T00:00:00.000Z");
  EXPECT_TRUE(IsCalendarDate(2026, 12, 31));
  EXPECT_FALSE(IsCalendarDate(2026, 13, 1));
  EXPECT_FALSE(IsCalendarDate(2026, 0, 1));
}

TEST(Clock, ManualClockMovesOnlyWhenTold) {
  ManualClock clock(WallTime{std::chrono::milliseconds(1000)});
  const auto start = clock.Monotonic();
  clock.Sleep(std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.Now(), WallTime{std::chrono::milliseconds(2500)});
  EXPECT_EQ(clock.Monotonic() - start, std::chrono::milliseconds(1500));
}

TEST(Clock, DurationsForPeople) {
  using namespace std::chrono_literals;
  EXPECT_EQ(FormatDuration(250ms), "250ms");
  EXPECT_EQ(FormatDuration(1234ms), "1.23s");
  EXPECT_EQ(FormatDuration(192s), "3m12s");
  EXPECT_EQ(FormatDuration(3h + 5min), "3h05m");
  // The most negative duration has no positive twin (negating it is undefined).
  EXPECT_EQ(FormatDuration(Duration::min()), "-2562047h47m");
}

// Seconds from outside (a store, a flag) beyond nanoseconds' range are held at its ends, and
// NaN is no time: converting them is undefined behaviour otherwise.
TEST(Clock, SecondsBeyondNanosecondsRangeAreHeldAtItsEnds) {
  EXPECT_EQ(SecondsAsDuration(1.5), Duration(1'500'000'000));
  EXPECT_EQ(SecondsAsDuration(std::nan("")), Duration::zero());
  EXPECT_EQ(SecondsAsDuration(HUGE_VAL), SecondsAsDuration(9.2e9));
  EXPECT_EQ(SecondsAsDuration(-1e300), SecondsAsDuration(-9.2e9));
  EXPECT_GT(SecondsAsDuration(9.2e9), Duration::zero());
  EXPECT_LT(SecondsAsDuration(-9.2e9), Duration::zero());
}

TEST(RunRecord, NamesRoundTrip) {
  for (CheckStatus s : {CheckStatus::kPass, CheckStatus::kWarn, CheckStatus::kFail,
                        CheckStatus::kSkip, CheckStatus::kAttest}) {
    EXPECT_EQ(ParseStatus(StatusName(s)).value(), s);
  }
  for (RunState s : {RunState::kRunning, RunState::kOk, RunState::kChecksFailed,
                     RunState::kInterrupted, RunState::kError}) {
    EXPECT_EQ(ParseRunState(RunStateName(s)).value(), s);
  }
  EXPECT_EQ(ParseSeverity("critical").value(), Severity::kCritical);
  EXPECT_FALSE(ParseStatus("pass"));
  EXPECT_EQ(FindingCategory("gpu.driver.version"), "gpu");
  EXPECT_EQ(FindingCategory("plain"), "plain");
}

TEST(RunRecord, CountsStatuses) {
  std::vector<Finding> findings(5);
  findings[0].status = CheckStatus::kFail;
  findings[1].status = CheckStatus::kFail;
  findings[2].status = CheckStatus::kPass;
  const StatusCounts c = CountStatuses(findings);
  EXPECT_EQ(c.fail, 2);
  EXPECT_EQ(c.pass, 1);
  EXPECT_EQ(c.skip, 2);
  EXPECT_EQ(c.Total(), 5);
}

TEST(Log, QuietWhenPipedUnlessAsked) {
  EXPECT_EQ(log::LevelFor(0, false, false), log::Level::kWarn);
  EXPECT_EQ(log::LevelFor(0, false, true), log::Level::kInfo);
  EXPECT_EQ(log::LevelFor(1, false, false), log::Level::kInfo);
  EXPECT_EQ(log::LevelFor(9, false, true), log::Level::kTrace);
  EXPECT_EQ(log::LevelFor(3, true, true), log::Level::kError);
}

TEST(Log, SinkReceivesEnabledLevelsOnly) {
  std::vector<std::string> lines;
  log::SetSink([&](log::Level, std::string_view text) { lines.emplace_back(text); });
  log::SetLevel(log::Level::kWarn);
  log::Info("hidden {}", 1);
  log::Warn("shown {}", 2);
  log::SetSink({});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "shown 2");
}

TEST(Result, FailCarriesCodeAndFormattedMessage) {
  Result<int> r = Fail(ErrorCode::kNotFound, "no run {} in {}", 7, "x.db");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message, "no run 7 in x.db");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kBusy), "busy");
  Result<int> wrapped = Wrap(r.error(), "report");
  EXPECT_EQ(wrapped.error().message, "report: no run 7 in x.db");
}

TEST(Result, ASystemFailureIsNeverTheUsersInput) {
  for (const ErrorCode users : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound}) {
    Result<int> r = SystemFailure(Error{users, "deep inside"});
    EXPECT_EQ(r.error().code, ErrorCode::kIo);
    EXPECT_EQ(r.error().message, "deep inside");
  }
  Result<int> busy = SystemFailure(Error{ErrorCode::kBusy, "locked"});
  EXPECT_EQ(busy.error().code, ErrorCode::kBusy);
}

}  // namespace
}  // namespace cmax
