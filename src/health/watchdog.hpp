// The agent's watchdog, as osquery's: it samples its own memory and CPU and says when the agent
// has broken its promise (memory over the limit at once, CPU over the limit for several
// samples in a row). Pure; the agent decides what to do (exit so systemd restarts it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cmax::health {

struct UsageSample {
  double monotonic_seconds = 0.0;
  uint64_t rss_bytes = 0;
  double cpu_seconds = 0.0;
};

struct WatchdogLimits {
  uint64_t max_rss_bytes = uint64_t{64} << 20;
  double max_cpu_fraction = 0.25;  // of one core, averaged over a sample interval
  int cpu_strikes = 3;             // consecutive intervals over the limit before it trips
};

enum class WatchdogVerdict { kOk, kMemory, kCpu };

class Watchdog {
 public:
  explicit Watchdog(WatchdogLimits limits) : limits_(limits) {}
  WatchdogVerdict Check(const UsageSample& sample);
  // What tripped, in words, for the log line.
  std::string Explain(WatchdogVerdict verdict, const UsageSample& sample) const;
  double LastCpuFraction() const { return last_cpu_fraction_; }

 private:
  WatchdogLimits limits_;
  std::optional<UsageSample> last_;
  int strikes_ = 0;
  double last_cpu_fraction_ = 0.0;
};

}  // namespace cmax::health
