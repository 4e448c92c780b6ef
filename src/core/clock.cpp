#include "core/clock.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <thread>

#include "core/strings.hpp"

namespace cmax {

int64_t MonotonicNanos() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

WallTime SystemClock::Now() const {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
}

std::chrono::steady_clock::time_point SystemClock::Monotonic() const {
  return std::chrono::steady_clock::now();
}

void SystemClock::Sleep(Duration duration) {
  std::this_thread::sleep_for(duration);
}

std::chrono::steady_clock::time_point ManualClock::Monotonic() const {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(elapsed_));
}

void ManualClock::Advance(Duration duration) {
  elapsed_ += duration;
  now_ += std::chrono::duration_cast<std::chrono::milliseconds>(duration);
}

std::string FormatIso8601(WallTime time) {
  const auto ms = time.time_since_epoch().count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    seconds -= 1;
  }
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

Duration SecondsAsDuration(double seconds) {
  // Beyond nanoseconds' range (some 292 years either way) the conversion is undefined: held at
  // its ends; NaN is no time.
  constexpr double kMostSeconds = 9.2e9;
  if (std::isnan(seconds)) return Duration::zero();
  seconds = std::clamp(seconds, -kMostSeconds, kMostSeconds);
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

int UtcYear(WallTime time) {
  const std::chrono::year_month_day day{std::chrono::floor<std::chrono::days>(time)};
  return static_cast<int>(day.year());
}

namespace {

bool ReadInt(std::string_view text, size_t pos, size_t len, int& out) {
  if (pos + len > text.size()) return false;
  const std::optional<int> value = ParseWhole<int>(text.substr(pos, len));
  if (value) out = *value;
  return value.has_value();
}

}  // namespace

bool IsCalendarDate(int year, int month, int day) {
  return month >= 1 && month <= 12 && day >= 1 &&
         std::chrono::year_month_day(std::chrono::year(year),
                                     std::chrono::month(static_cast<unsigned>(month)),
                                     std::chrono::day(static_cast<unsigned>(day)))
             .ok();
}

Result<WallTime> ParseIso8601(std::string_view text) {
  // Accepts what FormatIso8601 writes, with or without milliseconds.
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, millis = 0;
  bool ok = ReadInt(text, 0, 4, year) && text.size() > 4 && text[4] == '-' &&
            ReadInt(text, 5, 2, month) && text.size() > 7 && text[7] == '-' &&
            ReadInt(text, 8, 2, day) && text.size() > 10 && text[10] == 'T' &&
            ReadInt(text, 11, 2, hour) && text.size() > 13 && text[13] == ':' &&
            ReadInt(text, 14, 2, minute) && text.size() > 16 && text[16] == ':' &&
            ReadInt(text, 17, 2, second);
  size_t pos = 19;
  if (ok && pos < text.size() && text[pos] == '.') {
    ok = ReadInt(text, pos + 1, 3, millis);
    pos += 4;
  }
  // A day the month does not have (02-30, 11-31) is refused, not carried into the next month.
  ok = ok && pos + 1 == text.size() && text[pos] == 'Z' && IsCalendarDate(year, month, day) &&
       hour < 24 && minute < 60 && second < 61;
  if (!ok) return Fail(ErrorCode::kInvalidArgument, "not an ISO 8601 UTC time: '{}'", text);
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t seconds = timegm(&tm);
  return WallTime(std::chrono::milliseconds(static_cast<int64_t>(seconds) * 1000 + millis));
}

std::string FormatDuration(Duration duration) {
  const double seconds = std::chrono::duration<double>(duration).count();
  // The most negative duration has no positive twin: shown as the most positive one.
  if (seconds < 0)
    return "-" + FormatDuration(duration == Duration::min() ? Duration::max() : -duration);
  if (seconds < 1.0) return fmt::format("{:.0f}ms", seconds * 1000.0);
  if (seconds < 60.0) return fmt::format("{:.2f}s", seconds);
  const auto total = static_cast<int64_t>(seconds);
  if (total < 3600) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
}

}  // namespace cmax
