// What the agent counts and how Prometheus reads it: Xid and SXid counters by code and GPU
// (counters, not a last-value gauge), kernel events by kind, condition states, GPU readings and
// the agent's own footprint, rendered in the Prometheus text format. Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/run_record.hpp"

namespace cmax::health {

// The last N durations, for exact quantiles of a recent window.
class LatencyWindow {
 public:
  explicit LatencyWindow(size_t capacity = 1024) : capacity_(capacity) {}
  void Add(double seconds);
  // q in [0, 1]; 0 when empty.
  double Quantile(double q) const;
  uint64_t Count() const { return count_; }
  double Sum() const { return sum_; }

 private:
  size_t capacity_;
  std::deque<double> values_;
  uint64_t count_ = 0;
  double sum_ = 0.0;
};

struct AgentMetrics {
  std::string node;
  uint64_t kmsg_records = 0;
  uint64_t kmsg_lost = 0;
  uint64_t kmsg_overruns = 0;
  uint64_t events = 0;
  uint64_t events_suppressed = 0;  // event rows not written because of the per-minute limit
  uint64_t store_flushes = 0;
  uint64_t store_errors = 0;
  uint64_t source_restarts = 0;
  bool kmsg_up = false;
  bool nvml_up = false;
  double uptime_seconds = 0.0;
  uint64_t rss_bytes = 0;
  double cpu_seconds = 0.0;
  std::map<std::pair<int, std::string>, uint64_t> xid_total;                    // (code, pci)
  std::map<std::pair<int, std::string>, uint64_t> sxid_total;                   // (code, pci)
  std::map<std::pair<std::string, std::string>, uint64_t> kernel_events_total;  // (kind, device)
  std::vector<NodeCondition> conditions;
  std::vector<Metric> gpu;      // readings from the last NVML snapshot
  LatencyWindow store_latency;  // record read -> its condition committed to the store
};

std::string RenderPrometheus(const AgentMetrics& metrics);
// Label values escape backslash, double quote and newline.
std::string EscapeLabel(std::string_view value);

}  // namespace cmax::health
