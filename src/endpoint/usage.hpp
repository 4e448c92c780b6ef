// Token usage and its cost, the same whatever shape the server reports it in:
//   OpenAI-style (also vLLM, SGLang, TensorRT-LLM): prompt_tokens, completion_tokens, and
//     prompt_tokens_details.cached_tokens, a part of prompt_tokens; no write fee.
//   Anthropic: input_tokens is only the uncached part; cache_read_input_tokens and
//     cache_creation_input_tokens come on top (total input = the three).
//   DeepSeek: prompt_cache_hit_tokens + prompt_cache_miss_tokens = prompt_tokens.
// Cost per model from a price table that is data (USD per million tokens):
//   cost = (uncached input x input + cache reads x cached_input + cache writes x cache_write
//           + output x output) / 1e6.
// Pure.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cmax::endpoint {

struct TokenUsage {
  uint64_t input = 0;        // every input token, cached or not
  uint64_t cache_read = 0;   // of those, read from the prompt cache
  uint64_t cache_write = 0;  // of those, written to it (Anthropic bills these apart)
  uint64_t output = 0;
  bool cache_reported = false;  // the server gave a cache counter at all (0 then means none hit)
  uint64_t Uncached() const { return input - cache_read - cache_write; }
  TokenUsage& operator+=(const TokenUsage& other);
};

// The counters of a "usage" object by the names servers give them (each present when it is a
// non-negative integer), whichever JSON reader found them.
struct UsageCounts {
  std::optional<uint64_t> input_tokens;  // Anthropic
  std::optional<uint64_t> cache_read_input_tokens;
  std::optional<uint64_t> cache_creation_input_tokens;
  std::optional<uint64_t> output_tokens;
  std::optional<uint64_t> prompt_tokens;  // OpenAI and its followers
  std::optional<uint64_t> completion_tokens;
  std::optional<uint64_t> cached_tokens;            // in prompt_tokens_details
  std::optional<uint64_t> prompt_cache_hit_tokens;  // DeepSeek
};
// The usage the counters say, in any of the shapes above; nullopt when they hold no token
// counts.
std::optional<TokenUsage> UsageFromCounts(const UsageCounts& counts);
// The counters of a "usage" object (none when it is not an object).
UsageCounts CountsOf(const nlohmann::json& usage);
// An Anthropic stream reports usage twice (message_start, then message_delta): a counter the
// later report gives replaces the earlier one; one it leaves out keeps its value.
void MergeCounts(UsageCounts& into, const UsageCounts& later);
// The "usage" object of a response or of a stream's last chunk.
std::optional<TokenUsage> ParseUsage(const nlohmann::json& usage);

// Cache hit rate weighted by tokens: cache reads / all input (0 when there was no input).
double CacheHitRate(const TokenUsage& usage);

struct Price {  // USD per million tokens
  double input = 0;
  double cached_input = 0;
  double cache_write = 0;
  double output = 0;
};
// {"schema": "cmax.prices/v1", "models": {"NAME": {"input": 3.0, "cached_input": 0.3,
//  "cache_write": 3.75, "output": 15.0}}}; cached_input and cache_write default to input.
Result<std::map<std::string, Price>> ParsePrices(std::string_view text);
double Cost(const TokenUsage& usage, const Price& price);

}  // namespace cmax::endpoint
