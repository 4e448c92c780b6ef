// The agent's own footprint, read from /proc/self: resident memory and CPU time used, for the
// watchdog that keeps the agent within the limits it promises.
#pragma once

#include <cstdint>

#include "core/result.hpp"

namespace cmax::sys {

struct SelfUsage {
  uint64_t rss_bytes = 0;
  double cpu_seconds = 0.0;  // user + system since the process started
};

Result<SelfUsage> ReadSelfUsage();

}  // namespace cmax::sys
