#include "endpoint/plain_chunk.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "endpoint/api.hpp"

namespace cmax::endpoint {
namespace {

// Deeper chunks go to the full parse (whose own limit is far deeper).
constexpr int kMaxDepth = 32;
// Longer numbers go to the full parse: every number shorter than this without an exponent is
// one simdjson reads (no overflow, no big-integer error).
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

  // A string: its bytes between the quotes and whether it had escapes. \u escapes (which the
  // full parse must decode and check for lone surrogates) are declined.
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
        if (end_ - p_ < 2 || p_[1] == 0 || std::strchr("\"\\/bfnrt", p_[1]) == nullptr) {
          return Stop();
        }
        escaped = true;
        p_ += 2;
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

  // The value's text when it is a string without escapes, empty when it is not a string (as the
  // full parse reads it); a string with escapes is declined.
  bool Text(std::string_view& text, int depth, bool* is_string = nullptr) {
    text = {};
    if (!Next('"')) return Value(depth);
    bool escaped = false;
    if (is_string != nullptr) *is_string = true;
    return String(text, escaped) && (!escaped || Stop());
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

// The first time a key is met; later members of the same name are passed over, as the full
// parse (which finds the first) ignores them.
bool First(bool& seen) {
  const bool first = !seen;
  seen = true;
  return first;
}

std::optional<ChunkFields> OpenAi(Scanner& s, bool chat) {
  ChunkFields f;
  bool seen_choices = false;
  bool seen_error = false;
  bool seen_usage = false;
  bool seen_stamp = false;
  const auto choice = [&](size_t) {
    bool seen_delta = false;
    bool seen_text = false;
    bool seen_finish = false;
    return s.Object(2, [&](std::string_view key) {
      if (key == "finish_reason" && First(seen_finish)) {
        std::string_view reason;
        if (!s.Text(reason, 2)) return false;
        f.finish = !reason.empty();
        return true;
      }
      if (!chat && key == "text" && First(seen_text)) {
        if (!s.Text(f.content, 2, &f.content_string)) return false;
        f.content_event = !f.content.empty();
        return true;
      }
      if (chat && key == "delta" && First(seen_delta)) {
        if (!s.Next('{')) return s.Value(2);
        bool seen_content = false;
        bool seen_reasoning = false;
        std::string_view reasoning;
        const bool ok = s.Object(3, [&](std::string_view name) {
          if (name == "content" && First(seen_content)) {
            return s.Text(f.content, 3, &f.content_string);
          }
          if (name == "reasoning_content" && First(seen_reasoning)) return s.Text(reasoning, 3);
          return s.Value(3);
        });
        f.content_event = !f.content.empty() || !reasoning.empty();
        return ok;
      }
      return s.Value(2);
    });
  };
  const bool ok = s.Object(0, [&](std::string_view key) {
    if (key == "choices" && First(seen_choices)) {
      if (!s.Next('[')) return s.Value(0);
      return s.Array(1, [&](size_t index) {
        f.choice = true;
        if (index > 0 || !s.Next('{')) return s.Value(1);
        return choice(index);
      });
    }
    if ((key == "error" && First(seen_error)) || (key == "usage" && First(seen_usage))) {
      return s.Null();  // an error or the usage: the full parse reads them
    }
    if (key == "sim_sent_ns" && First(seen_stamp)) return s.Integer(f.sent_ns, 0);
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
  bool text_string = false;
  bool thinking_string = false;
  bool seen_type = false;
  bool seen_delta = false;
  bool seen_error = false;
  bool seen_stamp = false;
  const bool ok = s.Object(0, [&](std::string_view key) {
    if (key == "type" && First(seen_type)) return s.Text(type, 0);
    if (key == "error" && First(seen_error)) return s.Null();
    if (key == "sim_sent_ns" && First(seen_stamp)) return s.Integer(f.sent_ns, 0);
    if (key == "delta" && First(seen_delta)) {
      if (!s.Next('{')) return s.Value(0);
      bool seen_text = false;
      bool seen_thinking = false;
      return s.Object(1, [&](std::string_view name) {
        if (name == "text" && First(seen_text)) return s.Text(text, 1, &text_string);
        if (name == "thinking" && First(seen_thinking)) {
          return s.Text(thinking, 1, &thinking_string);
        }
        return s.Value(1);
      });
    }
    return s.Value(0);
  });
  if (!ok || !s.AtEnd()) return std::nullopt;
  if (type == "message_start" || type == "message_delta") return std::nullopt;  // usage
  if (type == "content_block_delta") {
    f.choice = true;
    f.content = text.empty() ? thinking : text;
    f.content_string = text.empty() ? thinking_string : text_string;
    f.content_event = !f.content.empty();
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
  fields_ = fields;
  fields_.content = {};
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

}  // namespace cmax::endpoint
