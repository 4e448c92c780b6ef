// The chunk reader's two fast paths, named for what they read.
// ReadPlainChunk: one pass over a stream chunk, without building a document: the fields a
// stream reader wants from the shapes servers send (OpenAI chat or completions: the first
// choice's text and finish reason, the usage counts; Anthropic: the event type, the delta's text
// or thinking and stop reason, the usage counts of message_start and message_delta). Every
// chunk of every stream passes here, so this is most of the client's work per token.
// Anything unusual is declined and goes to the full parse (the JSON library, in StreamReader):
// errors, \u escapes of surrogates, escapes in a key or in the Anthropic event type, a name we
// read given twice, exponents, long numbers, deep nesting, and anything that is not valid JSON
// (the full parse decides what it is). When it answers, the chunk is valid JSON (RFC 8259,
// UTF-8 checked) and the answer is the full parse's; the unit tests and the chunk fuzz target
// check both. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "endpoint/usage.hpp"

namespace cmax::endpoint {

enum class Api;  // endpoint/api.hpp, which holds a FramedTextReader in its StreamReader

struct ChunkFields {
  bool choice = false;             // a non-empty "choices" array; Anthropic: content_block_delta
  std::string_view content;        // the text it carries, as it lies in the chunk
  bool content_escaped = false;    // `content` has JSON escapes (AppendJsonText decodes them)
  bool content_string = false;     // `content` is a string in the chunk (not absent or null)
  bool content_event = false;      // carries generated text: content, reasoning or thinking
  bool finish = false;             // a non-empty finish_reason
  bool done = false;               // Anthropic message_stop
  std::optional<int64_t> sent_ns;  // serve-sim's send stamp, "sim_sent_ns"
  // The usage object's counters: OpenAI's "usage"; Anthropic's message.usage in message_start
  // and usage in message_delta (absent in any other event).
  std::optional<UsageCounts> usage;
};

std::optional<ChunkFields> ReadPlainChunk(Api api, std::string_view chunk);

// Appends the text of a string's content as ReadPlainChunk found it (between the quotes, its
// escapes checked): the escapes decoded, as the JSON library decodes them.
void AppendJsonText(std::string& out, std::string_view raw);

// FramedTextReader reads only the text of a token chunk whose frame it has learned: a server sends
// every token of an answer in the same JSON around a different text (same id, model, index,
// finish_reason null). Once ReadPlainChunk has read one token chunk, a later chunk that is byte for
// byte the same before and after its text, with a text that is plain (not empty, no quote,
// backslash or control byte, valid UTF-8), is the same JSON with that text: its fields are known
// without reading the rest again.
class FramedTextReader {
 public:
  // Learns the frame from `chunk`, which ReadPlainChunk read as `fields`, when it carried text.
  void Learn(std::string_view chunk, const ChunkFields& fields);
  std::optional<ChunkFields> Read(std::string_view chunk) const;

 private:
  std::string head_;  // the bytes up to and with the text's opening quote
  std::string tail_;  // from its closing quote to the end
  ChunkFields fields_;
};

}  // namespace cmax::endpoint
