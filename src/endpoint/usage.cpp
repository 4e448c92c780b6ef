#include "endpoint/usage.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/json_read.hpp"
#include "core/keys.hpp"
#include "core/strings.hpp"

namespace cmax::endpoint {
namespace {

using nlohmann::json;

std::optional<uint64_t> Count(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  const auto v = it->get<int64_t>();
  return v < 0 ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(v));
}

}  // namespace

TokenUsage& TokenUsage::operator+=(const TokenUsage& other) {
  input += other.input;
  cache_read += other.cache_read;
  cache_write += other.cache_write;
  output += other.output;
  cache_reported = cache_reported || other.cache_reported;
  return *this;
}

std::optional<TokenUsage> UsageFromCounts(const UsageCounts& c) {
  TokenUsage u;
  if (c.input_tokens) {
    // Anthropic: input_tokens excludes what was read from or written to the cache.
    u.cache_read = c.cache_read_input_tokens.value_or(0);
    u.cache_write = c.cache_creation_input_tokens.value_or(0);
    u.input = *c.input_tokens + u.cache_read + u.cache_write;
    u.output = c.output_tokens.value_or(0);
    u.cache_reported = c.cache_read_input_tokens.has_value();
    return u;
  }
  if (!c.prompt_tokens) return std::nullopt;
  u.input = *c.prompt_tokens;
  u.output = c.completion_tokens.value_or(0);
  // DeepSeek's count, else OpenAI's (and its followers')
  u.cache_read = c.prompt_cache_hit_tokens.value_or(c.cached_tokens.value_or(0));
  u.cache_read = std::min(u.cache_read, u.input);  // a server that says more is not believed
  u.cache_reported = c.prompt_cache_hit_tokens.has_value() || c.cached_tokens.has_value();
  return u;
}

UsageCounts CountsOf(const json& usage) {
  const json* details = Member(usage, "prompt_tokens_details");
  return {
      .input_tokens = Count(usage, "input_tokens"),
      .cache_read_input_tokens = Count(usage, "cache_read_input_tokens"),
      .cache_creation_input_tokens = Count(usage, "cache_creation_input_tokens"),
      .output_tokens = Count(usage, "output_tokens"),
      .prompt_tokens = Count(usage, "prompt_tokens"),
      .completion_tokens = Count(usage, "completion_tokens"),
      .cached_tokens = details ? Count(*details, "cached_tokens") : std::nullopt,
      .prompt_cache_hit_tokens = Count(usage, "prompt_cache_hit_tokens"),
  };
}

void MergeCounts(UsageCounts& into, const UsageCounts& later) {
  const auto take = [](std::optional<uint64_t>& to, const std::optional<uint64_t>& from) {
    if (from) to = from;
  };
  take(into.input_tokens, later.input_tokens);
  take(into.cache_read_input_tokens, later.cache_read_input_tokens);
  take(into.cache_creation_input_tokens, later.cache_creation_input_tokens);
  take(into.output_tokens, later.output_tokens);
  take(into.prompt_tokens, later.prompt_tokens);
  take(into.completion_tokens, later.completion_tokens);
  take(into.cached_tokens, later.cached_tokens);
  take(into.prompt_cache_hit_tokens, later.prompt_cache_hit_tokens);
}

std::optional<TokenUsage> ParseUsage(const json& usage) {
  if (!usage.is_object()) return std::nullopt;
  return UsageFromCounts(CountsOf(usage));
}

double CacheHitRate(const TokenUsage& usage) {
  return usage.input == 0
             ? 0
             : static_cast<double>(usage.cache_read) / static_cast<double>(usage.input);
}

Result<std::map<std::string, Price>> ParsePrices(std::string_view text) {
  auto object = ParseJsonObject(text);  // says where it stops being JSON, refuses a key twice
  if (!object) return Fail(ErrorCode::kInvalidArgument, "prices: {}", object.error().message);
  const json& root = *object;
  if (TextOf(root, "schema") != "cmax.prices/v1" || !root.contains("models") ||
      !root["models"].is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "prices: not a cmax.prices/v1 document with models");
  }
  static const std::vector<std::string_view> kRootKeys = {"schema", "note", "models"};
  static const std::vector<std::string_view> kPriceKeys = {"input", "cached_input", "cache_write",
                                                           "output", "note"};
  for (const auto& item : root.items()) {
    if (std::find(kRootKeys.begin(), kRootKeys.end(), item.key()) == kRootKeys.end()) {
      return tl::unexpected(
          UnknownKey("prices", item.key(), LineOfJsonKey(text, item.key()), kRootKeys));
    }
  }
  std::map<std::string, Price> prices;
  for (const auto& item : root["models"].items()) {
    // Named, not structured bindings: lambdas cannot capture those in C++20 (clang).
    const std::string model = item.key();
    const json& p = item.value();
    if (p.is_object()) {
      for (const auto& field : p.items()) {
        if (std::find(kPriceKeys.begin(), kPriceKeys.end(), field.key()) == kPriceKeys.end()) {
          return tl::unexpected(UnknownKey(fmt::format("prices ({})", SanitizeUtf8(model)),
                                           field.key(), LineOfJsonKey(text, field.key()),
                                           kPriceKeys));
        }
      }
    }
    const auto number = [&](const char* key, std::optional<double> fallback) -> Result<double> {
      if (!p.is_object())
        return Fail(ErrorCode::kInvalidArgument, "prices: {} is not an object", model);
      const auto it = p.find(key);
      if (it == p.end()) {
        if (fallback) return *fallback;
        return Fail(ErrorCode::kInvalidArgument, "prices: {} has no {}", model, key);
      }
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
        return Fail(ErrorCode::kInvalidArgument, "prices: {}.{} must be a number >= 0", model, key);
      }
      return it->get<double>();
    };
    auto input = number("input", std::nullopt);
    auto output = number("output", std::nullopt);
    if (!input) return tl::unexpected(input.error());
    if (!output) return tl::unexpected(output.error());
    auto cached = number("cached_input", *input);
    auto write = number("cache_write", *input);
    if (!cached) return tl::unexpected(cached.error());
    if (!write) return tl::unexpected(write.error());
    prices[model] = {*input, *cached, *write, *output};
  }
  return prices;
}

double Cost(const TokenUsage& u, const Price& p) {
  return (static_cast<double>(u.Uncached()) * p.input +
          static_cast<double>(u.cache_read) * p.cached_input +
          static_cast<double>(u.cache_write) * p.cache_write +
          static_cast<double>(u.output) * p.output) /
         1e6;
}

}  // namespace cmax::endpoint
