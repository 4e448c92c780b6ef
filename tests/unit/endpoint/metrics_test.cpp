// The load metrics' formulas on hand-made timings, and percentiles as numpy computes them.
#include "endpoint/metrics.hpp"

#include <gtest/gtest.h>

namespace cmax::endpoint {
namespace {

TEST(EndpointMetrics, PercentilesInterpolateLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], q) for q = 50, 90, 99: 2.5, 3.7, 3.97
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_NEAR(Percentile({1, 2, 3, 4}, 90), 3.7, 1e-12);
  EXPECT_NEAR(Percentile({1, 2, 3, 4}, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99.9), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
  const Distribution d = Distribute({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_NEAR(d.stddev, 1.118033988749895, 1e-12);  // numpy.std: population
  EXPECT_EQ(d.count, 4U);
}

TEST(EndpointMetrics, EachFormulaAsStated) {
  RequestTiming a;  // sent at 0; a role-only chunk at 0.1, content from 0.15, last at 0.5
  a.sent_s = 0;
  a.first_byte_s = 0.05;
  a.first_chunk_s = 0.1;
  a.first_token_s = 0.15;
  a.chunk_s = {0.1, 0.15, 0.3, 0.5};
  a.input_tokens = 100;
  a.output_tokens = 5;
  a.cached_tokens = 64;
  a.ok = true;
  RequestTiming b;  // one token only: no TPOT, TPOT 0 for goodput
  b.sent_s = 1.0;
  b.first_byte_s = 1.01;
  b.first_chunk_s = 1.02;
  b.first_token_s = 1.02;
  b.chunk_s = {1.02};
  b.input_tokens = 10;
  b.output_tokens = 1;
  b.ok = true;
  RequestTiming failed;
  failed.error = ErrorClass::kHttp429;
  RequestTiming empty;  // HTTP 200 and no choice chunk at all
  empty.ok = true;
  const RunMetrics m = Summarize({a, b, failed, empty}, 2.0, {.ttft_ms = 50});
  EXPECT_EQ(m.completed, 2U);
  EXPECT_EQ(m.failed, 2U);
  EXPECT_EQ(m.errors.at("http-429"), 1U);
  EXPECT_EQ(m.errors.at("empty-stream"), 1U);
  EXPECT_NEAR(m.ttft_byte_ms.max, 50, 1e-9);
  EXPECT_NEAR(m.ttft_chunk_ms.max, 100, 1e-9);  // vLLM's TTFT: the role-only chunk
  EXPECT_NEAR(m.ttft_token_ms.max, 150, 1e-9);
  EXPECT_EQ(m.tpot_ms.count, 1U);
  EXPECT_NEAR(m.tpot_ms.mean, (500.0 - 100.0) / 4, 1e-9);
  EXPECT_EQ(m.itl_ms.count, 3U);  // gaps of a only
  EXPECT_NEAR(m.itl_ms.max, 200, 1e-9);
  EXPECT_NEAR(m.e2e_ms.max, 500, 1e-9);
  EXPECT_EQ(m.output_tokens, 6U);
  EXPECT_EQ(m.cached_tokens, 64U);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 58.0);
  EXPECT_DOUBLE_EQ(m.goodput, 0.5);  // b meets TTFT <= 50 ms (20 ms); a does not (100 ms)
}

}  // namespace
}  // namespace cmax::endpoint
