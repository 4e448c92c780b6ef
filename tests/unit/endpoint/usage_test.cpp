// Usage in the three shapes servers report it in, the cache hit rate and the cost formula.
#include "endpoint/usage.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

namespace cmax::endpoint {
namespace {

using nlohmann::json;

TEST(Usage, OpenAiCachedTokensArePartOfThePrompt) {
  const auto u = ParseUsage(json::parse(R"({"prompt_tokens": 1200, "completion_tokens": 80,
    "prompt_tokens_details": {"cached_tokens": 1024}})"));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->input, 1200U);
  EXPECT_EQ(u->cache_read, 1024U);
  EXPECT_EQ(u->Uncached(), 176U);
  EXPECT_EQ(u->output, 80U);
  EXPECT_TRUE(u->cache_reported);
  // vLLM without --enable-prompt-tokens-details: null details, no cache reads, and no word on
  // the cache at all (a rating must not read that as "caches nothing").
  const auto silent = ParseUsage(json::parse(R"({"prompt_tokens": 5, "completion_tokens": 1,
    "prompt_tokens_details": null})"));
  EXPECT_EQ(silent->cache_read, 0U);
  EXPECT_FALSE(silent->cache_reported);
  TokenUsage sum = *silent;
  sum += *u;
  EXPECT_TRUE(sum.cache_reported);
  EXPECT_TRUE(ParseUsage(json::parse(R"({"prompt_tokens": 5, "completion_tokens": 1,
    "prompt_tokens_details": {"cached_tokens": 0}})"))
                  ->cache_reported);
}

TEST(Usage, AnthropicInputTokensAreOnlyTheUncachedPart) {
  const auto u = ParseUsage(json::parse(R"({"input_tokens": 1, "output_tokens": 300,
    "cache_read_input_tokens": 30433, "cache_creation_input_tokens": 12})"));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->input, 30446U);
  EXPECT_EQ(u->cache_read, 30433U);
  EXPECT_EQ(u->cache_write, 12U);
  EXPECT_EQ(u->Uncached(), 1U);
  EXPECT_NEAR(CacheHitRate(*u), 30433.0 / 30446.0, 1e-12);
  EXPECT_TRUE(u->cache_reported);
  EXPECT_FALSE(
      ParseUsage(json::parse(R"({"input_tokens": 1, "output_tokens": 3})"))->cache_reported);
}

TEST(Usage, DeepSeekHitsAndMisses) {
  const auto u = ParseUsage(json::parse(R"({"prompt_tokens": 900, "completion_tokens": 10,
    "prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 260})"));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->cache_read, 640U);
  EXPECT_EQ(u->Uncached(), 260U);
}

TEST(Usage, WhatIsNotUsageIsNot) {
  EXPECT_FALSE(ParseUsage(json::parse("{}")));
  EXPECT_FALSE(ParseUsage(json::parse("null")));
  EXPECT_FALSE(ParseUsage(json::parse(R"({"prompt_tokens": -3})")));
  // A server claiming more cached than prompt tokens is capped.
  EXPECT_EQ(ParseUsage(json::parse(R"({"prompt_tokens": 10, "prompt_tokens_details":
    {"cached_tokens": 99}})"))
                ->cache_read,
            10U);
  EXPECT_EQ(CacheHitRate({}), 0);
}

TEST(Usage, CostFromAPriceTable) {
  std::stringstream text;
  text << std::ifstream(std::string(CMAX_TEST_DATA) + "/../../data/prices.example.json").rdbuf();
  auto prices = ParsePrices(text.str());
  ASSERT_TRUE(prices) << prices.error().message;
  const Price& p = prices->at("example-model");
  TokenUsage u{.input = 1'000'000, .cache_read = 600'000, .cache_write = 100'000, .output = 50'000};
  // 300k uncached x 1.00 + 600k x 0.10 + 100k x 1.25 + 50k x 4.00, per million
  EXPECT_NEAR(Cost(u, p), 0.30 + 0.06 + 0.125 + 0.20, 1e-12);
  auto defaults =
      ParsePrices(R"({"schema": "cmax.prices/v1", "models": {"m": {"input": 2, "output": 8}}})");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->at("m").cached_input, 2);
  EXPECT_FALSE(
      ParsePrices(R"({"schema": "cmax.prices/v1", "models": {"m": {"input": -1, "output": 1}}})"));
  EXPECT_FALSE(ParsePrices(R"({"schema": "cmax.prices/v1", "models": {"m": {"output": 1}}})"));
  EXPECT_FALSE(ParsePrices("{}"));
}

}  // namespace
}  // namespace cmax::endpoint
