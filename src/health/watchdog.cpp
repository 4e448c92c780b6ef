#include "health/watchdog.hpp"

#include <fmt/format.h>

namespace cmax::health {

WatchdogVerdict Watchdog::Check(const UsageSample& sample) {
  if (sample.rss_bytes > limits_.max_rss_bytes) return WatchdogVerdict::kMemory;
  if (last_ && sample.monotonic_seconds > last_->monotonic_seconds) {
    last_cpu_fraction_ = (sample.cpu_seconds - last_->cpu_seconds) /
                         (sample.monotonic_seconds - last_->monotonic_seconds);
    strikes_ = last_cpu_fraction_ > limits_.max_cpu_fraction ? strikes_ + 1 : 0;
  }
  last_ = sample;
  return strikes_ >= limits_.cpu_strikes ? WatchdogVerdict::kCpu : WatchdogVerdict::kOk;
}

std::string Watchdog::Explain(WatchdogVerdict verdict, const UsageSample& sample) const {
  switch (verdict) {
    case WatchdogVerdict::kOk: return "within limits";
    case WatchdogVerdict::kMemory:
      return fmt::format("resident memory {:.1f} MiB is over the limit of {:.1f} MiB",
                         static_cast<double>(sample.rss_bytes) / 1048576.0,
                         static_cast<double>(limits_.max_rss_bytes) / 1048576.0);
    case WatchdogVerdict::kCpu:
      return fmt::format(
          "CPU use {:.1f}% of a core for {} intervals in a row, over the limit of {:.1f}%",
          last_cpu_fraction_ * 100.0, strikes_, limits_.max_cpu_fraction * 100.0);
  }
  return "";
}

}  // namespace cmax::health
