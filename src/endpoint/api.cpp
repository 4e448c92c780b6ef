#include "endpoint/api.hpp"

#include <simdjson.h>

#include <algorithm>
#include <fmt/format.h>

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

using Element = simdjson::dom::element;

// One parser per thread, reused: simdjson keeps its buffers between documents.
simdjson::dom::parser& ChunkParser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

// A rare part of a chunk (usage, an error) is read whole, with the full JSON library.
std::optional<json> Whole(Element element) {
  if (!element.is_object()) return std::nullopt;
  json parsed = json::parse(simdjson::minify(element), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

// The stream's usage chunk (OpenAI shapes) read where it lies, without a second JSON library.
std::optional<TokenUsage> UsageOf(Element usage) {
  const auto count = [&usage](const char* name) -> std::optional<uint64_t> {
    int64_t v = 0;
    if (usage[name].get_int64().get(v) != simdjson::SUCCESS || v < 0) return std::nullopt;
    return static_cast<uint64_t>(v);
  };
  int64_t cached = 0;
  const bool has_cached =
      usage.at_pointer("/prompt_tokens_details/cached_tokens").get_int64().get(cached) ==
          simdjson::SUCCESS &&
      cached >= 0;
  return UsageFromCounts({
      .input_tokens = count("input_tokens"),
      .cache_read_input_tokens = count("cache_read_input_tokens"),
      .cache_creation_input_tokens = count("cache_creation_input_tokens"),
      .output_tokens = count("output_tokens"),
      .prompt_tokens = count("prompt_tokens"),
      .completion_tokens = count("completion_tokens"),
      .cached_tokens = has_cached ? std::optional<uint64_t>(cached) : std::nullopt,
      .prompt_cache_hit_tokens = count("prompt_cache_hit_tokens"),
  });
}

// A string field's text; empty for null or any other type.
std::string_view StringOf(simdjson::simdjson_result<Element> element) {
  std::string_view text;
  if (element.get_string().get(text) != simdjson::SUCCESS) return {};
  return text;
}

}  // namespace

// Every chunk of every stream passes through here. A token chunk in the frame of the stream's
// earlier ones costs two comparisons and a look at its text; another common chunk one pass of
// ReadPlainChunk; the rest simdjson, which validates and indexes it in one pass (the
// whole-document library only for the usage and error objects, once per stream).
StreamEffect StreamReader::Read(const SseEvent& event) {
  StreamEffect effect;
  if (api_ != Api::kAnthropic && event.data == "[DONE]") {
    effect.done = true;
    return effect;
  }
  if (event.data.empty() && event.event.empty()) return effect;  // keep-alive with no data
  const bool error_event = event.event == "error";
  if (quick_ && !error_event) {
    std::optional<ChunkFields> quick = frame_.Read(event.data);
    if (!quick) {
      quick = ReadPlainChunk(api_, event.data);
      if (quick) frame_.Learn(event.data, *quick);
    }
    if (quick) {
      effect.choice = quick->choice;
      effect.content = quick->content_event;
      effect.finish = quick->finish;
      effect.done = quick->done;
      if (!server_sent_ns_) server_sent_ns_ = quick->sent_ns;
      if (keep_text_) text_ += quick->content;
      if (effect.content) ++content_chunks_;
      return effect;
    }
  }
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: the copy has room for them.
  scratch_.reserve(event.data.size() + simdjson::SIMDJSON_PADDING);
  scratch_.assign(event.data);
  Element doc;
  simdjson::dom::object chunk;
  if (ChunkParser().parse(scratch_.data(), scratch_.size(), false).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(chunk) != simdjson::SUCCESS) {
    if (error_event) {
      effect.error = event.data.substr(0, 500);
    } else {
      effect.malformed = true;
    }
    return effect;
  }
  if (Element error; chunk["error"].get(error) == simdjson::SUCCESS && !error.is_null()) {
    if (const std::string_view message = StringOf(Element(error)); !message.empty()) {
      effect.error = std::string(message.substr(0, 500));
    } else if (auto whole = Whole(error); whole) {
      effect.error = ErrorText(*whole);
    } else {
      effect.error = "error event";
    }
    return effect;
  }
  if (error_event) {
    effect.error = event.data.substr(0, 500);
    return effect;
  }
  if (int64_t ns = 0;
      !server_sent_ns_ && chunk["sim_sent_ns"].get_int64().get(ns) == simdjson::SUCCESS) {
    server_sent_ns_ = ns;
  }
  std::string_view content;
  if (api_ == Api::kAnthropic) {
    const std::string_view type = StringOf(chunk["type"]);
    if (type == "content_block_delta") {
      effect.choice = true;
      Element delta;
      if (chunk["delta"].get(delta) == simdjson::SUCCESS) {
        content = StringOf(delta["text"]);
        if (content.empty()) content = StringOf(delta["thinking"]);
      }
      effect.content = !content.empty();
    } else if (type == "message_start") {
      Element usage;
      if (chunk.at_pointer("/message/usage").get(usage) == simdjson::SUCCESS) {
        if (auto u = Whole(usage); u) anthropic_usage_.update(*u);
      }
    } else if (type == "message_delta") {
      Element usage;
      if (chunk["usage"].get(usage) == simdjson::SUCCESS) {
        if (auto u = Whole(usage); u) anthropic_usage_.update(*u);
      }
      effect.finish = !StringOf(chunk.at_pointer("/delta/stop_reason")).empty();
    } else if (type == "message_stop") {
      effect.done = true;
    }
    if (type == "message_start" || type == "message_delta") {
      if (auto u = ParseUsage(anthropic_usage_); u) usage_ = u;
    }
  } else {
    simdjson::dom::array choices;
    if (chunk["choices"].get_array().get(choices) == simdjson::SUCCESS && choices.size() > 0) {
      effect.choice = true;
      const Element first = choices.at(0).value_unsafe();
      if (api_ == Api::kCompletions) {
        content = StringOf(first["text"]);
        effect.content = !content.empty();
      } else {
        Element delta;
        if (first["delta"].get(delta) == simdjson::SUCCESS) {
          content = StringOf(delta["content"]);
          // Reasoning models stream their thinking first; it is output too, not the answer.
          effect.content = !content.empty() || !StringOf(delta["reasoning_content"]).empty();
        }
      }
      effect.finish = !StringOf(first["finish_reason"]).empty();
    }
    Element usage;
    if (chunk["usage"].get(usage) == simdjson::SUCCESS && usage.is_object()) {
      if (auto parsed = UsageOf(usage); parsed) usage_ = parsed;
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
