#include "endpoint/sim.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"

namespace cmax::endpoint {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<SimFault, std::string_view>, 13> kFaults = {{
    {SimFault::kNone, "none"},
    {SimFault::kTooMany, "429"},
    {SimFault::kServerError, "500"},
    {SimFault::kCut, "cut"},
    {SimFault::kErrorEvent, "error-event"},
    {SimFault::kSlowStart, "slow-start"},
    {SimFault::kMalformedJson, "malformed-json"},
    {SimFault::kHugeLine, "huge-line"},
    {SimFault::kNoDone, "no-done"},
    {SimFault::kHttp10, "http10"},
    {SimFault::kByteSplit, "byte-split"},
    {SimFault::kTrickle, "trickle"},
    {SimFault::kCloseEarly, "close-early"},
}};

constexpr uint64_t kMaxTokensCap = 1'000'000;

// Text of a message's "content": a string, or an array of parts whose "text" counts.
std::string ContentText(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const json& part : content) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        if (!text.empty()) text += '\n';
        text += part["text"].get<std::string>();
      }
    }
  }
  return text;
}

void AppendText(std::string& to, const std::string& text) {
  if (text.empty()) return;
  if (!to.empty()) to += '\n';
  to += text;
}

std::string OpenAiUsage(const SimUsage& u) {
  return fmt::format(R"({{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{},)"
                     R"("prompt_tokens_details":{{"cached_tokens":{}}}}})",
                     u.input, u.input + u.output, u.output, u.cached);
}

std::string Quoted(std::string_view text) {
  return json(std::string(text)).dump();
}

}  // namespace

std::optional<SimFault> ParseSimFault(std::string_view name) {
  for (const auto& [fault, fault_name] : kFaults) {
    if (fault_name == name) return fault;
  }
  return std::nullopt;
}

std::string_view SimFaultName(SimFault fault) {
  for (const auto& [f, name] : kFaults) {
    if (f == fault) return name;
  }
  return "none";
}

tl::expected<SimRequest, SimError> ParseSimRequest(const HttpRequest& request,
                                                   const SimConfig& config) {
  SimRequest out;
  const std::string path = request.Path();
  if (path == "/v1/chat/completions") {
    out.api = Api::kChat;
  } else if (path == "/v1/completions") {
    out.api = Api::kCompletions;
  } else if (path == "/v1/messages") {
    out.api = Api::kAnthropic;
  } else {
    return tl::unexpected(SimError{404, "no such path: " + path});
  }
  if (request.method != "POST") return tl::unexpected(SimError{405, "use POST"});
  if (const std::string fault = request.Header("x-cmax-sim-fault"); !fault.empty()) {
    out.fault = ParseSimFault(fault);
    if (!out.fault) return tl::unexpected(SimError{400, "unknown x-cmax-sim-fault: " + fault});
  }
  const json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return tl::unexpected(SimError{400, "the body is not a JSON object"});
  }
  out.stream = BoolOf(body, "stream", false);
  if (const json* options = Member(body, "stream_options"); options && out.api != Api::kAnthropic) {
    out.include_usage = BoolOf(*options, "include_usage", false);
  }
  if (out.api == Api::kCompletions) {
    const json& prompt = body.contains("prompt") ? body["prompt"] : json();
    if (prompt.is_string()) {
      out.prompt = prompt.get<std::string>();
    } else if (prompt.is_array()) {
      for (const json& p : prompt) {
        if (p.is_string()) AppendText(out.prompt, p.get<std::string>());
      }
    } else {
      return tl::unexpected(SimError{400, "\"prompt\" must be a string"});
    }
  } else {
    if (out.api == Api::kAnthropic && body.contains("system")) {
      AppendText(out.prompt, ContentText(body["system"]));
    }
    if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
      return tl::unexpected(SimError{400, "\"messages\" must be a non-empty array"});
    }
    for (const json& m : body["messages"]) {
      if (!m.is_object() || !m.contains("content")) {
        return tl::unexpected(SimError{400, "each message needs a \"content\""});
      }
      AppendText(out.prompt, ContentText(m["content"]));
    }
  }
  out.max_tokens = config.default_max_tokens;
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (!body.contains(key) || body[key].is_null()) continue;
    if (!body[key].is_number_integer() || body[key].get<int64_t>() < 1) {
      return tl::unexpected(SimError{400, fmt::format("\"{}\" must be a positive integer", key)});
    }
    out.max_tokens = std::min<uint64_t>(body[key].get<uint64_t>(), kMaxTokensCap);
    break;
  }
  return out;
}

Result<void> CheckSimConfig(const SimConfig& config) {
  const std::pair<const char*, double> shares[] = {
      {"the 429 share", config.rate_429},
      {"the 500 share", config.rate_500},
      {"the cut share", config.rate_cut},
      {"the error-event share", config.rate_error_event},
      {"the slow-start share", config.rate_slow_start}};
  double sum = 0;
  for (const auto& [name, value] : shares) {
    if (!std::isfinite(value) || value < 0 || value > 1) {
      return Fail(ErrorCode::kInvalidArgument, "{} must be in [0, 1], not {}", name, value);
    }
    sum += value;
  }
  if (sum > 1 + 1e-9) {
    return Fail(ErrorCode::kInvalidArgument, "the fault shares add up to {}, more than 1", sum);
  }
  struct Bounded {
    const char* name;
    double value;
    double max;
    bool zero_allowed;
  };
  const Bounded bounded[] = {
      {"the base delay (ms)", config.base_ms, kMaxSimDelayMs, true},
      {"the prefill time (us per token)", config.prefill_us_per_token, kMaxSimPrefillUs, true},
      {"the decode time (ms)", config.decode_ms, kMaxSimDelayMs, true},
      {"the slow-start delay (ms)", config.slow_start_ms, kMaxSimDelayMs, true},
      {"the trickle gap (ms)", config.trickle_ms, kMaxSimDelayMs, true},
      {"Retry-After (s)", config.retry_after_s, kMaxSimSeconds, true},
      {"the header timeout (s)", config.header_timeout_s, kMaxSimSeconds, false},
      {"the idle timeout (s)", config.idle_timeout_s, kMaxSimSeconds, false}};
  for (const Bounded& b : bounded) {
    if (!std::isfinite(b.value) || b.value < 0 || (b.value == 0 && !b.zero_allowed) ||
        b.value > b.max) {
      return Fail(ErrorCode::kInvalidArgument, "{} must be in {}0, {}], not {}", b.name,
                  b.zero_allowed ? "[" : "(", b.max, b.value);
    }
  }
  if (config.block_tokens == 0) {
    return Fail(ErrorCode::kInvalidArgument, "the cache block size must be at least 1 token");
  }
  if (config.max_connections == 0) {
    return Fail(ErrorCode::kInvalidArgument, "the connection limit must be at least 1");
  }
  return {};
}

SimFault DrawFault(const SimConfig& config, std::mt19937_64& rng) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  double edge = 0;
  for (const auto& [rate, fault] : {std::pair{config.rate_429, SimFault::kTooMany},
                                    std::pair{config.rate_500, SimFault::kServerError},
                                    std::pair{config.rate_cut, SimFault::kCut},
                                    std::pair{config.rate_error_event, SimFault::kErrorEvent},
                                    std::pair{config.rate_slow_start, SimFault::kSlowStart}}) {
    edge += rate;
    if (u < edge) return fault;
  }
  return SimFault::kNone;
}

int64_t FirstTokenDelayNs(const SimConfig& config, uint64_t uncached_tokens, SimFault fault) {
  double ns = config.base_ms * 1e6 +
              config.prefill_us_per_token * 1e3 * static_cast<double>(uncached_tokens);
  if (fault == SimFault::kSlowStart) ns += config.slow_start_ms * 1e6;
  // A day at most: a huge prompt times a large per-token cost must not overflow the cast.
  return static_cast<int64_t>(std::min(ns, 86400e9));
}

int64_t DecodeNs(const SimConfig& config) {
  return static_cast<int64_t>(config.decode_ms * 1e6);
}

std::string_view SimWord(uint64_t n) {
  static constexpr std::array<std::string_view, 16> kWords = {
      " the",    " cluster", " answers", " every", " request", " with", " tokens", " that",
      " arrive", " one",     " by",      " one",   " until",   " it",   " is",     " done"};
  return kWords[n % kWords.size()];
}

std::string StreamStart(Api api, std::string_view id, std::string_view model, const SimUsage& usage,
                        int64_t sent_ns) {
  switch (api) {
    case Api::kChat:
      return fmt::format(
          R"(data: {{"id":"{}","object":"chat.completion.chunk","created":0,"model":"{}",)"
          R"("choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},)"
          R"("finish_reason":null}}],"sim_sent_ns":{}}})"
          "\n\n",
          id, model, sent_ns);
    case Api::kCompletions: return {};
    case Api::kAnthropic:
      return fmt::format(
          "event: message_start\n"
          R"(data: {{"type":"message_start","message":{{"id":"{}","type":"message",)"
          R"("role":"assistant","model":"{}","content":[],"stop_reason":null,)"
          R"("usage":{{"input_tokens":{},"cache_read_input_tokens":{},)"
          R"("cache_creation_input_tokens":0,"output_tokens":0}}}}}})"
          "\n\n"
          "event: content_block_start\n"
          R"(data: {{"type":"content_block_start","index":0,)"
          R"("content_block":{{"type":"text","text":""}}}})"
          "\n\n",
          id, model, usage.input - usage.cached, usage.cached);
  }
  return {};
}

std::string StreamToken(Api api, std::string_view id, std::string_view model, uint64_t n,
                        bool first, int64_t sent_ns) {
  const std::string stamp =
      first && api != Api::kChat ? fmt::format(R"(,"sim_sent_ns":{})", sent_ns) : std::string();
  switch (api) {
    case Api::kChat:
      return fmt::format(
          R"(data: {{"id":"{}","object":"chat.completion.chunk","created":0,"model":"{}",)"
          R"("choices":[{{"index":0,"delta":{{"content":"{}"}},"finish_reason":null}}]}})"
          "\n\n",
          id, model, SimWord(n));
    case Api::kCompletions:
      return fmt::format(R"(data: {{"id":"{}","object":"text_completion","created":0,"model":"{}",)"
                         R"("choices":[{{"index":0,"text":"{}","finish_reason":null}}]{}}})"
                         "\n\n",
                         id, model, SimWord(n), stamp);
    case Api::kAnthropic:
      return fmt::format(
          "event: content_block_delta\n"
          R"(data: {{"type":"content_block_delta","index":0,)"
          R"("delta":{{"type":"text_delta","text":"{}"}}{}}})"
          "\n\n",
          SimWord(n), stamp);
  }
  return {};
}

std::string StreamEnd(Api api, std::string_view id, std::string_view model, const SimUsage& usage,
                      bool include_usage, bool done_marker) {
  std::string out;
  switch (api) {
    case Api::kChat:
    case Api::kCompletions: {
      const bool chat = api == Api::kChat;
      const std::string_view object = chat ? "chat.completion.chunk" : "text_completion";
      out = fmt::format(
          R"(data: {{"id":"{}","object":"{}","created":0,"model":"{}","choices":[{{"index":0,{},)"
          R"("finish_reason":"length"}}]}})"
          "\n\n",
          id, object, model, chat ? R"("delta":{})" : R"("text":"")");
      if (include_usage) {
        out += fmt::format(
            R"(data: {{"id":"{}","object":"{}","created":0,"model":"{}","choices":[],"usage":{}}})"
            "\n\n",
            id, object, model, OpenAiUsage(usage));
      }
      if (done_marker) out += "data: [DONE]\n\n";
      return out;
    }
    case Api::kAnthropic:
      out =
          "event: content_block_stop\n"
          R"(data: {"type":"content_block_stop","index":0})"
          "\n\n";
      out += fmt::format(
          "event: message_delta\n"
          R"(data: {{"type":"message_delta","delta":{{"stop_reason":"max_tokens",)"
          R"("stop_sequence":null}},"usage":{{"output_tokens":{}}}}})"
          "\n\n",
          usage.output);
      if (done_marker) {
        out +=
            "event: message_stop\n"
            R"(data: {"type":"message_stop"})"
            "\n\n";
      }
      return out;
  }
  return out;
}

std::string StreamErrorEvent(Api api, std::string_view message) {
  if (api == Api::kAnthropic) {
    return fmt::format(
        "event: error\n"
        R"(data: {{"type":"error","error":{{"type":"overloaded_error","message":{}}}}})"
        "\n\n",
        Quoted(message));
  }
  // vLLM's shape: an error object after HTTP 200, then the end marker.
  return fmt::format(
      R"(data: {{"error":{{"object":"error","message":{},"type":"InternalServerError",)"
      R"("param":null,"code":500}}}})"
      "\n\ndata: [DONE]\n\n",
      Quoted(message));
}

std::string FullResponseBody(Api api, std::string_view id, std::string_view model,
                             const SimUsage& usage) {
  std::string text;
  for (uint64_t n = 0; n < usage.output; ++n) text += SimWord(n);
  switch (api) {
    case Api::kChat:
      return fmt::format(
          R"({{"id":"{}","object":"chat.completion","created":0,"model":"{}","choices":[{{)"
          R"("index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"length"}}],)"
          R"("usage":{}}})",
          id, model, Quoted(text), OpenAiUsage(usage));
    case Api::kCompletions:
      return fmt::format(
          R"({{"id":"{}","object":"text_completion","created":0,"model":"{}","choices":[{{)"
          R"("index":0,"text":{},"finish_reason":"length"}}],"usage":{}}})",
          id, model, Quoted(text), OpenAiUsage(usage));
    case Api::kAnthropic:
      return fmt::format(R"({{"id":"{}","type":"message","role":"assistant","model":"{}",)"
                         R"("content":[{{"type":"text","text":{}}}],"stop_reason":"max_tokens",)"
                         R"("usage":{{"input_tokens":{},"cache_read_input_tokens":{},)"
                         R"("cache_creation_input_tokens":0,"output_tokens":{}}}}})",
                         id, model, Quoted(text), usage.input - usage.cached, usage.cached,
                         usage.output);
  }
  return {};
}

std::string ErrorBody(int status, std::string_view message) {
  return fmt::format(R"({{"error":{{"message":{},"type":"{}","code":{}}}}})", Quoted(message),
                     status == 429   ? "rate_limit_exceeded"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error",
                     status);
}

std::string_view StatusText(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

}  // namespace cmax::endpoint
