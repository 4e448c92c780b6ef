#include "endpoint/api.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

#include "core/json_read.hpp"
#include "core/strings.hpp"

namespace cmax::endpoint {
namespace {

using nlohmann::json;

std::string ErrorText(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  std::string message = TextOf(error, "message");
  if (message.empty()) message = error.dump();
  return message.substr(0, 500);
}

}  // namespace

Result<Api> ParseApi(std::string_view name) {
  if (name == "chat") return Api::kChat;
  if (name == "completions") return Api::kCompletions;
  if (name == "anthropic") return Api::kAnthropic;
  return Fail(ErrorCode::kInvalidArgument, "unknown API '{}' (chat, completions or anthropic)",
              name);
}

std::string_view ApiName(Api api) {
  switch (api) {
    case Api::kChat: return "chat";
    case Api::kCompletions: return "completions";
    case Api::kAnthropic: return "anthropic";
  }
  return "chat";
}

std::string_view DefaultPath(Api api) {
  switch (api) {
    case Api::kChat: return "/v1/chat/completions";
    case Api::kCompletions: return "/v1/completions";
    case Api::kAnthropic: return "/v1/messages";
  }
  return "/v1/chat/completions";
}

std::string JoinedText(const std::vector<Message>& messages) {
  std::string text;
  for (const Message& m : messages) {
    if (!text.empty()) text += '\n';
    text += m.content;
  }
  return text;
}

namespace {

// Appends `text` as a JSON string. Plain ASCII without quotes, backslashes or control
// characters (nearly every prompt) is copied as it is; anything else goes through the JSON
// library, which escapes it and replaces invalid UTF-8.
void AppendJsonString(std::string& out, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string RequestBody(Api api, const Prompt& prompt, const BodyOptions& options) {
  if (options.extra.is_object() && !options.extra.empty()) {
    // Merging another body in is the JSON library's job; this path is off the hot one.
    json body = json::parse(RequestBody(api, prompt,
                                        {options.model, options.stream, options.include_usage,
                                         options.ignore_eos, json::object()}));
    body.update(options.extra);
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  // Built by hand: a request body is made for every request, at thousands per second.
  std::string out;
  size_t size = 160;
  for (const Message& m : prompt.messages) size += m.content.size() + 32;
  out.reserve(size);
  out += "{\"model\":";
  AppendJsonString(out, options.model);
  out += options.stream ? ",\"stream\":true" : ",\"stream\":false";
  if (api == Api::kCompletions) {
    out += ",\"prompt\":";
    AppendJsonString(out, JoinedText(prompt.messages));
    out += ",\"max_tokens\":" + std::to_string(prompt.max_tokens);
  } else {
    std::string system;
    out += ",\"messages\":[";
    bool first = true;
    for (const Message& m : prompt.messages) {
      if (api == Api::kAnthropic && m.role == "system") {
        system += m.content;  // Anthropic takes the system prompt beside the messages
        continue;
      }
      out += first ? "{\"role\":" : ",{\"role\":";
      first = false;
      AppendJsonString(out, m.role);
      out += ",\"content\":";
      AppendJsonString(out, m.content);
      out += '}';
    }
    out += ']';
    if (!system.empty()) {
      out += ",\"system\":";
      AppendJsonString(out, system);
    }
    // Newer OpenAI models take only max_completion_tokens; vLLM reads both.
    out += api == Api::kChat ? ",\"max_completion_tokens\":" : ",\"max_tokens\":";
    out += std::to_string(prompt.max_tokens);
  }
  if (options.stream && options.include_usage && api != Api::kAnthropic) {
    out += ",\"stream_options\":{\"include_usage\":true}";
  }
  if (options.ignore_eos) out += ",\"ignore_eos\":true";
  out += '}';
  return out;
}

namespace {

// A string member's text; empty when it is missing, null or of another type.
std::string_view StringOf(const json* member) {
  return member != nullptr && member->is_string()
             ? std::string_view(member->get_ref<const std::string&>())
             : std::string_view();
}

// An object member's value (nullptr when it is missing or `object` is not an object).
const json* In(const json* object, std::string_view key) {
  return object == nullptr ? nullptr : Member(*object, key);
}

}  // namespace

void StreamReader::TakeUsage(const UsageCounts& counts) {
  if (api_ == Api::kAnthropic) {
    MergeCounts(anthropic_counts_, counts);
    if (auto u = UsageFromCounts(anthropic_counts_); u) usage_ = u;
  } else if (auto u = UsageFromCounts(counts); u) {
    usage_ = u;
  }
}

// Every chunk of every stream passes here. A token chunk in the frame of the stream's earlier
// ones costs two comparisons and a look at its text; nearly every other chunk, usage included,
// one pass of ReadPlainChunk; the rest (errors, odd shapes, invalid JSON) the JSON library.
StreamEffect StreamReader::Read(const SseEvent& event) {
  StreamEffect effect;
  if (api_ != Api::kAnthropic && event.data == "[DONE]") {
    effect.done = true;
    return effect;
  }
  if (event.data.empty() && event.event.empty()) return effect;  // keep-alive with no data
  const bool error_event = event.event == "error";
  if (!quick_ || error_event) return ReadWhole(event, error_event);
  std::optional<ChunkFields> quick = frame_.Read(event.data);
  if (!quick) {
    quick = ReadPlainChunk(api_, event.data);
    if (!quick) return ReadWhole(event, error_event);
    frame_.Learn(event.data, *quick);
  }
  effect.choice = quick->choice;
  effect.content = quick->content_event;
  effect.finish = quick->finish;
  effect.done = quick->done;
  if (!server_sent_ns_) server_sent_ns_ = quick->sent_ns;
  if (quick->usage) TakeUsage(*quick->usage);
  if (keep_text_) {
    if (quick->content_escaped) {
      AppendJsonText(text_, quick->content);
    } else {
      text_ += quick->content;
    }
  }
  if (effect.content) ++content_chunks_;
  return effect;
}

// The full parse: the JSON library reads the whole chunk. The reference ReadPlainChunk is held
// to, and the reader of what it declines.
StreamEffect StreamReader::ReadWhole(const SseEvent& event, bool error_event) {
  StreamEffect effect;
  const json chunk = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    if (error_event) {
      effect.error = event.data.substr(0, 500);
    } else {
      effect.malformed = true;
    }
    return effect;
  }
  if (const json* error = Member(chunk, "error"); error != nullptr && !error->is_null()) {
    if (const std::string_view message = StringOf(error); !message.empty()) {
      effect.error = std::string(message.substr(0, 500));
    } else if (error->is_object()) {
      effect.error = ErrorText(*error);
    } else {
      effect.error = "error event";
    }
    return effect;
  }
  if (error_event) {
    effect.error = event.data.substr(0, 500);
    return effect;
  }
  // An integer that fits in 64 signed bits, as serve-sim writes it.
  if (const json* ns = Member(chunk, "sim_sent_ns");
      !server_sent_ns_ && ns != nullptr && ns->is_number_integer() &&
      (!ns->is_number_unsigned() ||
       ns->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    server_sent_ns_ = ns->get<int64_t>();
  }
  std::string_view content;
  if (api_ == Api::kAnthropic) {
    const std::string_view type = StringOf(Member(chunk, "type"));
    const json* delta = Member(chunk, "delta");
    if (type == "content_block_delta") {
      effect.choice = true;
      content = StringOf(In(delta, "text"));
      if (content.empty()) content = StringOf(In(delta, "thinking"));
      effect.content = !content.empty();
    } else if (type == "message_start" || type == "message_delta") {
      const json* usage =
          type == "message_start" ? In(Member(chunk, "message"), "usage") : Member(chunk, "usage");
      if (usage != nullptr && usage->is_object()) TakeUsage(CountsOf(*usage));
      effect.finish = type == "message_delta" && !StringOf(In(delta, "stop_reason")).empty();
    } else if (type == "message_stop") {
      effect.done = true;
    }
  } else {
    if (const json* choices = Member(chunk, "choices");
        choices != nullptr && choices->is_array() && !choices->empty()) {
      effect.choice = true;
      const json& first = choices->front();
      if (api_ == Api::kCompletions) {
        content = StringOf(Member(first, "text"));
        effect.content = !content.empty();
      } else if (const json* delta = Member(first, "delta"); delta != nullptr) {
        content = StringOf(Member(*delta, "content"));
        // Reasoning models stream their thinking first; it is output too, not the answer.
        effect.content = !content.empty() || !StringOf(Member(*delta, "reasoning_content")).empty();
      }
      effect.finish = !StringOf(Member(first, "finish_reason")).empty();
    }
    if (const json* usage = Member(chunk, "usage"); usage != nullptr && usage->is_object()) {
      TakeUsage(CountsOf(*usage));
    }
  }
  if (keep_text_) text_ += content;
  if (effect.content) ++content_chunks_;
  return effect;
}

FullResponse ReadFullResponse(Api api, std::string_view body) {
  FullResponse out;
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.malformed = true;
    return out;
  }
  if (const json* error = Member(doc, "error"); error && !error->is_null()) {
    out.error = ErrorText(*error);
    return out;
  }
  if (api == Api::kAnthropic) {
    if (const json* content = Member(doc, "content"); content && content->is_array()) {
      for (const json& block : *content) out.text += TextOf(block, "text");
    }
  } else if (const json* choices = Member(doc, "choices");
             choices && choices->is_array() && !choices->empty()) {
    const json& first = (*choices)[0];
    out.text = api == Api::kCompletions
                   ? TextOf(first, "text")
                   : TextOf(Member(first, "message") ? *Member(first, "message") : json::object(),
                            "content");
  } else {
    out.malformed = true;
  }
  if (const json* u = Member(doc, "usage"); u) out.usage = ParseUsage(*u);
  return out;
}

std::string ErrorMessage(std::string_view body) {
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) {
    if (const json* error = Member(doc, "error"); error && !error->is_null())
      return ErrorText(*error);
    if (std::string m = TextOf(doc, "message"); !m.empty()) return m.substr(0, 500);
  }
  return SanitizeUtf8(body.substr(0, 200));
}

}  // namespace cmax::endpoint
