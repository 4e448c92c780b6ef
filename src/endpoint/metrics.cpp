#include "endpoint/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cmax::endpoint {

namespace {

// The percentile of values already in order: Distribute sorts once for all five.
double PercentileOfSorted(const std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(below);
  return values[below] + (values[above] - values[below]) * frac;
}

}  // namespace

double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, q);
}

Distribution Distribute(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.min = values.front();
  d.max = values.back();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(d.count);
  double sq = 0;
  for (const double v : values) sq += (v - d.mean) * (v - d.mean);
  d.stddev = std::sqrt(sq / static_cast<double>(d.count));  // population, as numpy.std
  d.p50 = PercentileOfSorted(values, 50);
  d.p90 = PercentileOfSorted(values, 90);
  d.p95 = PercentileOfSorted(values, 95);
  d.p99 = PercentileOfSorted(values, 99);
  d.p999 = PercentileOfSorted(values, 99.9);
  return d;
}

RunMetrics Summarize(const std::vector<RequestTiming>& requests, double duration_s,
                     const Slo& slo) {
  RunMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttft_byte, ttft_chunk, ttft_token, tpot, itl, e2e;
  size_t good = 0;
  for (const RequestTiming& r : requests) {
    // A request without a single choice chunk did not complete, whatever its status said.
    if (!Completed(r)) {
      ++m.failed;
      const std::string_view name = ErrorClassName(r.error);
      ++m.errors[r.ok ? std::string("empty-stream") : std::string(name.empty() ? "unknown" : name)];
      continue;
    }
    ++m.completed;
    m.input_tokens += r.input_tokens;
    m.output_tokens += r.output_tokens;
    m.cached_tokens += r.cached_tokens;
    const double ms = 1000.0;
    if (r.first_byte_s) ttft_byte.push_back((*r.first_byte_s - r.sent_s) * ms);
    const double ttft = (*r.first_chunk_s - r.sent_s) * ms;
    ttft_chunk.push_back(ttft);
    if (r.first_token_s) ttft_token.push_back((*r.first_token_s - r.sent_s) * ms);
    const double latency = (r.chunk_s.back() - r.sent_s) * ms;
    e2e.push_back(latency);
    std::optional<double> request_tpot;
    if (r.output_tokens > 1) {
      request_tpot = (latency - ttft) / static_cast<double>(r.output_tokens - 1);
      tpot.push_back(*request_tpot);
    }
    for (size_t i = 1; i < r.chunk_s.size(); ++i)
      itl.push_back((r.chunk_s[i] - r.chunk_s[i - 1]) * ms);
    // Goodput: a request with at most one token has TPOT 0 (as vLLM counts it).
    const bool meets = (!slo.ttft_ms || ttft <= *slo.ttft_ms) &&
                       (!slo.tpot_ms || request_tpot.value_or(0) <= *slo.tpot_ms) &&
                       (!slo.e2e_ms || latency <= *slo.e2e_ms);
    good += meets ? 1 : 0;
  }
  m.ttft_byte_ms = Distribute(std::move(ttft_byte));
  m.ttft_chunk_ms = Distribute(std::move(ttft_chunk));
  m.ttft_token_ms = Distribute(std::move(ttft_token));
  m.tpot_ms = Distribute(std::move(tpot));
  m.itl_ms = Distribute(std::move(itl));
  m.e2e_ms = Distribute(std::move(e2e));
  if (duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / duration_s;
    m.output_throughput = static_cast<double>(m.output_tokens) / duration_s;
    m.total_token_throughput = static_cast<double>(m.input_tokens + m.output_tokens) / duration_s;
    m.goodput = static_cast<double>(good) / duration_s;
  }
  return m;
}

}  // namespace cmax::endpoint
