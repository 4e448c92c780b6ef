#include "endpoint/plain_chunk.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "endpoint/api.hpp"

namespace cmax::endpoint {
namespace {

// Deeper chunks go to the full parse (whose own limit is far deeper).
constexpr int kMaxDepth = 32;
// Longer numbers go to the full parse: every number shorter than this without an exponent is
// one the full parse reads as a 64-bit integer (no overflow).
constexpr size_t kMaxNumberChars = 18;

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// The first byte of eight that ends a run of plain string bytes: '"', '\\', a control byte or a
// byte >= 0x80 (UTF-8 to check). The classic has-zero-byte tests: the lowest flagged byte is
// exact (a false flag can only come from the borrow of a true one below it).
int FirstSpecial(uint64_t w) {
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t slash = w ^ (kOnes * '\\');
  const uint64_t flags =
      ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) | ((w - kOnes * 0x20) & ~w) | w;
  const uint64_t mask = flags & kHighs;
  return mask == 0 ? 8 : std::countr_zero(mask) / 8;
}

// Strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). `p` is at a byte
// >= 0x80; returns the byte after the sequence, or nullptr.
const unsigned char* Utf8(const unsigned char* p, const unsigned char* end) {
  const unsigned c = p[0];
  size_t n = 0;
  unsigned lo = 0x80;
  unsigned hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return nullptr;
  }
  if (static_cast<size_t>(end - p) <= n) return nullptr;
  if (p[1] < lo || p[1] > hi) return nullptr;
  for (size_t i = 2; i <= n; ++i) {
    if ((p[i] & 0xC0U) != 0x80U) return nullptr;
  }
  return p + n + 1;
}

// The value of four hex digits at `p`, when there are four before `end`.
std::optional<unsigned> Hex4(const unsigned char* p, const unsigned char* end) {
  if (end - p < 4) return std::nullopt;
  unsigned value = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned c = p[i];
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if ((c | 0x20U) >= 'a' && (c | 0x20U) <= 'f') {
      digit = (c | 0x20U) - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return value;
}

class Scanner {
 public:
  explicit Scanner(std::string_view s)
      : p_(reinterpret_cast<const unsigned char*>(s.data())), end_(p_ + s.size()) {}

  // Declines: the chunk is not one this pass reads (every caller returns at once).
  static bool Stop() { return false; }
  bool AtEnd() {
    Space();
    return p_ == end_;
  }
  bool Next(char c) {
    Space();
    return p_ < end_ && *p_ == static_cast<unsigned char>(c);
  }
  bool Eat(char c) {
    if (!Next(c)) return false;
    ++p_;
    return true;
  }

  // A string: its bytes between the quotes and whether it had escapes. A \u escape of a
  // surrogate (half of a pair, or a lone one the full parse rejects) is declined.
  bool String(std::string_view& text, bool& escaped) {
    if (!Eat('"')) return Stop();
    const unsigned char* start = p_;
    escaped = false;
    while (true) {
      while (end_ - p_ >= 8) {
        uint64_t w = 0;
        std::memcpy(&w, p_, 8);
        const int plain = FirstSpecial(w);
        p_ += plain;
        if (plain < 8) break;
      }
      if (p_ == end_) return Stop();
      const unsigned c = *p_;
      if (c == '"') break;
      if (c == '\\') {
        if (end_ - p_ < 2) return Stop();
        if (p_[1] == 'u') {
          const std::optional<unsigned> code = Hex4(p_ + 2, end_);
          if (!code || (*code >= 0xD800 && *code <= 0xDFFF)) return Stop();
          p_ += 6;
        } else if (p_[1] != 0 && std::strchr("\"\\/bfnrt", p_[1]) != nullptr) {
          p_ += 2;
        } else {
          return Stop();
        }
        escaped = true;
      } else if (c < 0x20) {
        return Stop();
      } else if (c >= 0x80) {
        p_ = Utf8(p_, end_);
        if (p_ == nullptr) return Stop();
      } else {
        ++p_;  // a plain byte in the last seven, before the eight-byte steps can run
      }
    }
    text = std::string_view(reinterpret_cast<const char*>(start), static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }

  // The value's text when it is a string, empty when it is not (as the full parse reads it).
  // Without `escaped`, a string with escapes is declined; with it, it says whether there were.
  bool Text(std::string_view& text, int depth, bool* is_string = nullptr, bool* escaped = nullptr) {
    text = {};
    if (!Next('"')) return Value(depth);
    bool had_escapes = false;
    if (is_string != nullptr) *is_string = true;
    if (!String(text, had_escapes)) return false;
    if (escaped != nullptr) {
      *escaped = had_escapes;
      return true;
    }
    return !had_escapes || Stop();
  }

  // An integer member's value (as the full parse's get_int64 reads it); other values are
  // checked and passed over.
  bool Integer(std::optional<int64_t>& integer, int depth) {
    if (Next('-') || (p_ < end_ && *p_ >= '0' && *p_ <= '9')) return Number(&integer);
    return Value(depth);
  }

  bool Null() { return Next('n') && Word("null"); }

  // Any value, checked and passed over.
  bool Value(int depth) {
    Space();
    if (p_ == end_) return Stop();
    switch (*p_) {
      case '{': return Object(depth + 1, [&](std::string_view) { return Value(depth + 1); });
      case '[': return Array(depth + 1, [&](size_t) { return Value(depth + 1); });
      case '"': {
        std::string_view text;
        bool escaped = false;
        return String(text, escaped);
      }
      case 't': return Word("true");
      case 'f': return Word("false");
      case 'n': return Word("null");
      default: return Number();
    }
  }

  // An object; `member(key)` reads each member's value. Keys with escapes are declined (one
  // could spell a key we look for).
  template <class Member>
  bool Object(int depth, Member&& member) {
    if (depth > kMaxDepth || !Eat('{')) return Stop();
    if (Eat('}')) return true;
    do {
      std::string_view key;
      bool escaped = false;
      if (!String(key, escaped) || escaped || !Eat(':') || !member(key)) return Stop();
    } while (Eat(','));
    return Eat('}') || Stop();
  }

  template <class Element>
  bool Array(int depth, Element&& element) {
    if (depth > kMaxDepth || !Eat('[')) return Stop();
    if (Eat(']')) return true;
    size_t index = 0;
    do {
      if (!element(index++)) return Stop();
    } while (Eat(','));
    return Eat(']') || Stop();
  }

 private:
  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool Word(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() ||
        std::memcmp(p_, word.data(), word.size()) != 0) {
      return Stop();
    }
    p_ += word.size();
    return true;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?, short; exponents are declined. `integer`: the value when it
  // has no fraction (it then fits in 64 bits: it is short).
  bool Number(std::optional<int64_t>* integer = nullptr) {
    const unsigned char* start = p_;
    const auto digit = [this] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
    const bool negative = p_ < end_ && *p_ == '-';
    if (negative) ++p_;
    if (!digit()) return Stop();
    int64_t value = 0;
    if (*p_ == '0') {
      ++p_;
    } else {
      for (; digit() && p_ - start < static_cast<ptrdiff_t>(kMaxNumberChars); ++p_) {
        value = value * 10 + (*p_ - '0');
      }
    }
    const bool fraction = p_ < end_ && *p_ == '.';
    if (fraction) {
      ++p_;
      if (!digit()) return Stop();
      while (digit()) ++p_;
    }
    if (digit() || (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) ||
        static_cast<size_t>(p_ - start) > kMaxNumberChars) {
      return Stop();
    }
    if (integer != nullptr && !fraction) *integer = negative ? -value : value;
    return true;
  }

  const unsigned char* p_;
  const unsigned char* end_;
};

// A name we read is read once: a chunk that gives it twice is declined (JSON leaves the meaning
// of repeated names to the reader; the full parse decides).
bool Once(bool& seen) {
  if (seen) return Scanner::Stop();
  seen = true;
  return true;
}

// An integer counter of a usage object: present when it is a non-negative integer.
bool Count(Scanner& s, int depth, std::optional<uint64_t>& count) {
  std::optional<int64_t> value;
  if (!s.Integer(value, depth)) return false;
  if (value && *value >= 0) count = static_cast<uint64_t>(*value);
  return true;
}

// A "usage" member: its counters when it is an object; any other value is passed over.
bool Usage(Scanner& s, int depth, std::optional<UsageCounts>& usage) {
  if (!s.Next('{')) return s.Value(depth);
  struct Counter {
    std::string_view name;
    std::optional<uint64_t> UsageCounts::*field;
  };
  static constexpr Counter kCounters[] = {
      {"input_tokens", &UsageCounts::input_tokens},
      {"cache_read_input_tokens", &UsageCounts::cache_read_input_tokens},
      {"cache_creation_input_tokens", &UsageCounts::cache_creation_input_tokens},
      {"output_tokens", &UsageCounts::output_tokens},
      {"prompt_tokens", &UsageCounts::prompt_tokens},
      {"completion_tokens", &UsageCounts::completion_tokens},
      {"prompt_cache_hit_tokens", &UsageCounts::prompt_cache_hit_tokens},
  };
  UsageCounts counts;
  bool seen[std::size(kCounters)] = {};
  bool seen_details = false;
  const int inner = depth + 1;
  const bool ok = s.Object(inner, [&](std::string_view key) {
    for (size_t i = 0; i < std::size(kCounters); ++i) {
      if (key == kCounters[i].name) {
        return Once(seen[i]) && Count(s, inner, counts.*kCounters[i].field);
      }
    }
    if (key == "prompt_tokens_details") {
      if (!Once(seen_details)) return false;
      if (!s.Next('{')) return s.Value(inner);
      bool seen_cached = false;
      return s.Object(inner + 1, [&](std::string_view name) {
        if (name == "cached_tokens") {
          return Once(seen_cached) && Count(s, inner + 1, counts.cached_tokens);
        }
        return s.Value(inner + 1);
      });
    }
    return s.Value(inner);
  });
  if (ok) usage = counts;
  return ok;
}

std::optional<ChunkFields> OpenAi(Scanner& s, bool chat) {
  ChunkFields f;
  bool seen_choices = false;
  bool seen_error = false;
  bool seen_usage = false;
  bool seen_stamp = false;
  const auto choice = [&] {
    bool seen_delta = false;
    bool seen_text = false;
    bool seen_finish = false;
    return s.Object(2, [&](std::string_view key) {
      if (key == "finish_reason") {
        std::string_view reason;
        bool escaped = false;
        if (!Once(seen_finish) || !s.Text(reason, 2, nullptr, &escaped)) return false;
        f.finish = !reason.empty();
        return true;
      }
      if (!chat && key == "text") {
        if (!Once(seen_text) || !s.Text(f.content, 2, &f.content_string, &f.content_escaped)) {
          return false;
        }
        f.content_event = !f.content.empty();
        return true;
      }
      if (chat && key == "delta") {
        if (!Once(seen_delta)) return false;
        if (!s.Next('{')) return s.Value(2);
        bool seen_content = false;
        bool seen_reasoning = false;
        std::string_view reasoning;
        bool reasoning_escaped = false;
        const bool ok = s.Object(3, [&](std::string_view name) {
          if (name == "content") {
            return Once(seen_content) &&
                   s.Text(f.content, 3, &f.content_string, &f.content_escaped);
          }
          if (name == "reasoning_content") {
            return Once(seen_reasoning) && s.Text(reasoning, 3, nullptr, &reasoning_escaped);
          }
          return s.Value(3);
        });
        f.content_event = !f.content.empty() || !reasoning.empty();
        return ok;
      }
      return s.Value(2);
    });
  };
  const bool ok = s.Object(0, [&](std::string_view key) {
    if (key == "choices") {
      if (!Once(seen_choices)) return false;
      if (!s.Next('[')) return s.Value(0);
      return s.Array(1, [&](size_t index) {
        f.choice = true;
        if (index > 0 || !s.Next('{')) return s.Value(1);
        return choice();
      });
    }
    if (key == "error") return Once(seen_error) && s.Null();  // an error: the full parse reads it
    if (key == "usage") return Once(seen_usage) && Usage(s, 0, f.usage);
    if (key == "sim_sent_ns") return Once(seen_stamp) && s.Integer(f.sent_ns, 0);
    return s.Value(0);
  });
  if (!ok || !s.AtEnd()) return std::nullopt;
  return f;
}

std::optional<ChunkFields> Anthropic(Scanner& s) {
  ChunkFields f;
  std::string_view type;
  std::string_view text;
  std::string_view thinking;
  std::string_view stop_reason;
  bool text_string = false;
  bool text_escaped = false;
  bool thinking_string = false;
  bool thinking_escaped = false;
  std::optional<UsageCounts> usage;          // message_delta's
  std::optional<UsageCounts> message_usage;  // message_start's
  bool seen_type = false;
  bool seen_delta = false;
  bool seen_error = false;
  bool seen_stamp = false;
  bool seen_usage = false;
  bool seen_message = false;
  const bool ok = s.Object(0, [&](std::string_view key) {
    if (key == "type") return Once(seen_type) && s.Text(type, 0);  // escapes: declined
    if (key == "error") return Once(seen_error) && s.Null();
    if (key == "sim_sent_ns") return Once(seen_stamp) && s.Integer(f.sent_ns, 0);
    if (key == "usage") return Once(seen_usage) && Usage(s, 0, usage);
    if (key == "message") {
      if (!Once(seen_message)) return false;
      if (!s.Next('{')) return s.Value(0);
      bool seen_message_usage = false;
      return s.Object(1, [&](std::string_view name) {
        if (name == "usage") return Once(seen_message_usage) && Usage(s, 1, message_usage);
        return s.Value(1);
      });
    }
    if (key == "delta") {
      if (!Once(seen_delta)) return false;
      if (!s.Next('{')) return s.Value(0);
      bool seen_text = false;
      bool seen_thinking = false;
      bool seen_stop = false;
      return s.Object(1, [&](std::string_view name) {
        if (name == "text") {
          return Once(seen_text) && s.Text(text, 1, &text_string, &text_escaped);
        }
        if (name == "thinking") {
          return Once(seen_thinking) && s.Text(thinking, 1, &thinking_string, &thinking_escaped);
        }
        if (name == "stop_reason") {
          bool escaped = false;
          return Once(seen_stop) && s.Text(stop_reason, 1, nullptr, &escaped);
        }
        return s.Value(1);
      });
    }
    return s.Value(0);
  });
  if (!ok || !s.AtEnd()) return std::nullopt;
  if (type == "content_block_delta") {
    f.choice = true;
    const bool use_text = !text.empty();
    f.content = use_text ? text : thinking;
    f.content_string = use_text ? text_string : thinking_string;
    f.content_escaped = use_text ? text_escaped : thinking_escaped;
    f.content_event = !f.content.empty();
  } else if (type == "message_start") {
    f.usage = message_usage;
  } else if (type == "message_delta") {
    f.usage = usage;
    f.finish = !stop_reason.empty();
  }
  f.done = type == "message_stop";
  return f;
}

// Text that is a JSON string as it stands: no quote, backslash or control byte, valid UTF-8.
bool PlainText(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* end = p + text.size();
  while (p < end) {
    if (end - p >= 8) {
      uint64_t w = 0;
      std::memcpy(&w, p, 8);
      const int plain = FirstSpecial(w);
      p += plain;
      if (plain == 8) continue;
    }
    if (*p >= 0x80) {
      p = Utf8(p, end);
      if (p == nullptr) return false;
    } else if (*p == '"' || *p == '\\' || *p < 0x20) {
      return false;
    } else {
      ++p;
    }
  }
  return true;
}

}  // namespace

void FramedTextReader::Learn(std::string_view chunk, const ChunkFields& fields) {
  if (!fields.content_string || fields.content.empty()) return;
  const auto at = static_cast<size_t>(fields.content.data() - chunk.data());
  head_.assign(chunk.substr(0, at));
  tail_.assign(chunk.substr(at + fields.content.size()));
  fields_ = fields;  // the rest of a chunk in this frame is these bytes: its fields are these
  fields_.content = {};
  fields_.content_escaped = false;  // a text Read accepts is plain
}

std::optional<ChunkFields> FramedTextReader::Read(std::string_view chunk) const {
  if (head_.empty() || chunk.size() <= head_.size() + tail_.size() ||
      chunk.compare(0, head_.size(), head_) != 0 ||
      chunk.compare(chunk.size() - tail_.size(), tail_.size(), tail_) != 0) {
    return std::nullopt;
  }
  const std::string_view text =
      chunk.substr(head_.size(), chunk.size() - head_.size() - tail_.size());
  if (!PlainText(text)) return std::nullopt;
  ChunkFields f = fields_;
  f.content = text;
  return f;
}

std::optional<ChunkFields> ReadPlainChunk(Api api, std::string_view chunk) {
  Scanner s(chunk);
  if (!s.Next('{')) return std::nullopt;
  return api == Api::kAnthropic ? Anthropic(s) : OpenAi(s, api == Api::kChat);
}

void AppendJsonText(std::string& out, std::string_view raw) {
  while (!raw.empty()) {
    const size_t slash = raw.find('\\');
    out.append(raw.substr(0, slash));
    if (slash == std::string_view::npos || slash + 1 >= raw.size()) return;
    const char kind = raw[slash + 1];
    raw.remove_prefix(slash + 2);
    switch (kind) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
        const std::optional<unsigned> code = Hex4(p, p + raw.size());
        if (!code) break;  // not from ReadPlainChunk, which checked every escape
        raw.remove_prefix(4);
        if (*code < 0x80) {
          out += static_cast<char>(*code);
        } else if (*code < 0x800) {
          out += static_cast<char>(0xC0 | (*code >> 6));
          out += static_cast<char>(0x80 | (*code & 0x3F));
        } else {  // no surrogates: ReadPlainChunk declines them
          out += static_cast<char>(0xE0 | (*code >> 12));
          out += static_cast<char>(0x80 | ((*code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (*code & 0x3F));
        }
        break;
      }
      default: out += kind;  // " \ /
    }
  }
}

}  // namespace cmax::endpoint
