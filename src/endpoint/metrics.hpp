// What a load run measures, from per-request timings, with each formula stated here and in the
// README so results can be compared with other tools':
//   TTFT (three kinds, because tools disagree): to the first response byte; to the first data
//     chunk that carries choices (vLLM's definition: a role-only chunk counts); to the first chunk
//     with non-empty content.
//   E2E latency: request sent -> last choice-bearing chunk (a trailing usage chunk does not count).
//   TPOT (per request) = (E2E - TTFT to first chunk) / (output tokens - 1), only when > 1 token.
//   ITL: every gap between consecutive choice-bearing chunks of a request, pooled over requests.
//   Throughputs: completed requests, output tokens, input + output tokens, each / run duration.
//   Goodput: completed requests that meet every SLO given / run duration.
// Failed requests count in the error classes and in nothing else. Percentiles interpolate
// linearly between order statistics (numpy's default), so they match vLLM's. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "endpoint/outcome.hpp"

namespace cmax::endpoint {

struct RequestTiming {
  double sent_s = 0;  // seconds from the start of the run
  std::optional<double> first_byte_s;
  std::optional<double> first_chunk_s;  // first data chunk with choices
  std::optional<double> first_token_s;  // first chunk with non-empty content
  std::vector<double> chunk_s;          // every choice-bearing chunk, in order
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
  uint64_t cached_tokens = 0;
  bool ok = false;
  ErrorClass error = ErrorClass::kNone;  // its class when not ok
};

// Whether a request completed: answered, with at least one choice chunk (a 200 without one is
// an "empty-stream" failure). The one rule the metrics and the first-failure report share.
inline bool Completed(const RequestTiming& r) {
  return r.ok && r.first_chunk_s.has_value() && !r.chunk_s.empty();
}

struct Distribution {
  size_t count = 0;
  double mean = 0, stddev = 0, min = 0, max = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
};
// Linear interpolation between order statistics (numpy.percentile's default); q in [0, 100].
double Percentile(std::vector<double> values, double q);
Distribution Distribute(std::vector<double> values);

struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2e_ms;
};

struct RunMetrics {
  double duration_s = 0;
  size_t completed = 0;
  size_t failed = 0;
  std::map<std::string, size_t> errors;  // by class
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
  uint64_t cached_tokens = 0;
  Distribution ttft_byte_ms, ttft_chunk_ms, ttft_token_ms, tpot_ms, itl_ms, e2e_ms;
  double request_throughput = 0;      // per s
  double output_throughput = 0;       // tokens per s
  double total_token_throughput = 0;  // tokens per s
  double goodput = 0;                 // requests per s meeting every SLO
};

RunMetrics Summarize(const std::vector<RequestTiming>& requests, double duration_s,
                     const Slo& slo = {});

}  // namespace cmax::endpoint
