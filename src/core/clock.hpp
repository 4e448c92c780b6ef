// Clock: wall and monotonic time behind an interface, so that loops, timeouts and reports
// can be tested with a clock the test moves. Also the one place timestamps are formatted.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cmax {

using WallTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;
using Duration = std::chrono::nanoseconds;

// CLOCK_MONOTONIC in nanoseconds, a value every process on the host shares: serve-sim stamps
// its chunks with it and the load client compares its own arrival times against them; the
// kernel log's timestamps count on it too (time since boot, in microseconds there).
int64_t MonotonicNanos();
// When the host booted, on the wall clock `now` is read from: the kernel log's timestamps are
// time since then.
inline WallTime BootTime(WallTime now) {
  return now - std::chrono::milliseconds(MonotonicNanos() / 1'000'000);
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime Now() const = 0;
  virtual std::chrono::steady_clock::time_point Monotonic() const = 0;
  virtual void Sleep(Duration duration) = 0;
};

class SystemClock final : public Clock {
 public:
  WallTime Now() const override;
  std::chrono::steady_clock::time_point Monotonic() const override;
  void Sleep(Duration duration) override;
};

// A clock that moves only when told to (Sleep advances it); for tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(WallTime start) : now_(start) {}
  WallTime Now() const override { return now_; }
  std::chrono::steady_clock::time_point Monotonic() const override;
  void Sleep(Duration duration) override { Advance(duration); }
  void Advance(Duration duration);

 private:
  WallTime now_;
  Duration elapsed_{0};
};

// "2026-11-30T09:22:28.911Z": UTC, millisecond precision, sorts as text.
std::string FormatIso8601(WallTime time);
// Seconds (from a flag or a file) as a Duration.
Duration SecondsAsDuration(double seconds);
// The year of `time` in UTC (for log formats that print no year).
int UtcYear(WallTime time);
Result<WallTime> ParseIso8601(std::string_view text);
// Whether the Gregorian calendar has this day: month 1-12, day 1 to the month's last (29
// February only in a leap year).
bool IsCalendarDate(int year, int month, int day);

// Seconds as "1.234s", "250ms", "3m12s": for people, not for machines.
std::string FormatDuration(Duration duration);

}  // namespace cmax
