// The request bodies and stream shapes of the APIs cmax drives, as pure functions:
//   OpenAI chat completions (/v1/chat/completions): "messages"; chunks carry
//     choices[].delta.content; with stream_options.include_usage one last chunk has "usage" and
//     empty "choices"; the stream ends with "data: [DONE]".
//   OpenAI completions (/v1/completions): "prompt"; chunks carry choices[].text.
//   Anthropic messages (/v1/messages): typed events; text in content_block_delta, usage in
//     message_start (input, cache) and message_delta (output); message_stop ends it.
// An error after HTTP 200 is an event with an "error" object or "event: error" (vLLM sends one
// then [DONE]; the OpenAI SDK raises on either). Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "endpoint/plain_chunk.hpp"
#include "endpoint/sse.hpp"
#include "endpoint/usage.hpp"

namespace cmax::endpoint {

enum class Api { kChat, kCompletions, kAnthropic };
Result<Api> ParseApi(std::string_view name);  // "chat", "completions", "anthropic"
std::string_view ApiName(Api api);
std::string_view DefaultPath(Api api);  // appended to a --url that is only scheme://host[:port]

struct Message {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct Prompt {
  std::vector<Message> messages;  // chat and anthropic; completions join the contents
  uint64_t max_tokens = 128;
  uint64_t expected_input_tokens = 0;  // as the workload counted them (words)
};

struct BodyOptions {
  std::string model;
  bool stream = true;
  bool include_usage = true;  // stream_options.include_usage (OpenAI shapes)
  bool ignore_eos = false;    // vLLM/SGLang extension: generate exactly max_tokens
  nlohmann::json extra = nlohmann::json::object();  // merged into the body last (--extra-body)
};

std::string RequestBody(Api api, const Prompt& prompt, const BodyOptions& options);
// The completions API takes one string: the messages' contents joined by newlines.
std::string JoinedText(const std::vector<Message>& messages);

// What one stream event meant.
struct StreamEffect {
  bool choice = false;   // a choice-bearing chunk (vLLM's TTFT/ITL unit)
  bool content = false;  // it carried non-empty generated text
  bool done = false;     // the stream's own end marker ([DONE], message_stop)
  bool finish = false;   // a finish_reason / stop_reason: the answer is complete
  bool malformed = false;
  std::optional<std::string> error;  // an error event's message
};

// Reads a stream's events in order; keeps usage, finish reason and, if asked, the text.
class StreamReader {
 public:
  // `quick`: chunks of the usual shapes are read by ReadPlainChunk (and FramedTextReader), the
  // rest by the full parse with the JSON library; false: everything by the full parse (the
  // reference the quick path is checked against).
  StreamReader(Api api, bool keep_text, bool quick = true)
      : api_(api), keep_text_(keep_text), quick_(quick) {}
  StreamEffect Read(const SseEvent& event);
  const std::optional<TokenUsage>& Usage() const { return usage_; }
  const std::string& Text() const { return text_; }
  uint64_t ContentChunks() const { return content_chunks_; }
  // serve-sim puts its send time (CLOCK_MONOTONIC ns) in the first chunk, so that a run against
  // it can measure its own TTFT error; other servers never send it.
  const std::optional<int64_t>& ServerSentNs() const { return server_sent_ns_; }

 private:
  Api api_;
  bool keep_text_;
  bool quick_;
  FramedTextReader frame_;  // learned from the stream's first token chunk
  std::optional<TokenUsage> usage_;
  UsageCounts anthropic_counts_;  // message_start's and message_delta's, merged
  std::string text_;
  uint64_t content_chunks_ = 0;
  std::optional<int64_t> server_sent_ns_;

  StreamEffect ReadWhole(const SseEvent& event, bool error_event);
  void TakeUsage(const UsageCounts& counts);
};

// A whole (non-streamed) response body.
struct FullResponse {
  std::string text;
  std::optional<TokenUsage> usage;
  std::optional<std::string> error;
  bool malformed = false;
};
FullResponse ReadFullResponse(Api api, std::string_view body);

// The "message" of an error body ({"error": {"message": ...}} or {"message": ...}), cut short.
std::string ErrorMessage(std::string_view body);

}  // namespace cmax::endpoint
