#include "core/strings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace cmax {

std::string_view Trim(std::string_view text) {
  constexpr const char* kSpace = " \t\r\n\f\v";
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(separator, start);
    if (pos == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string_view> SplitFields(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    while (i < text.size() && space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !space(text[i])) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    const size_t next = end == std::string_view::npos ? text.size() : end + 1;
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    at = next;
  }
  return lines;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string ToLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string SanitizeUtf8(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
        out += kReplacement;
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t code = 0;
    if ((c & 0xE0) == 0xC0) {
      length = 2;
      code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3;
      code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4;
      code = c & 0x07;
    }
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xC0) == 0x80;
      code = (code << 6) | (next & 0x3F);
    }
    // Reject overlong forms, surrogates and code points past U+10FFFF.
    if (valid) {
      valid = !(length == 2 && code < 0x80) && !(length == 3 && code < 0x800) &&
              !(length == 4 && code < 0x10000) && !(code >= 0xD800 && code <= 0xDFFF) &&
              code <= 0x10FFFF;
    }
    if (valid) {
      // Valid, but what no output should carry: C1 controls (a terminal may obey U+009B as an
      // escape), code points XML 1.0 does not allow (U+FFFE, U+FFFF and the other
      // noncharacters), line and paragraph separators (a line break to some readers), and the
      // bidirectional overrides and isolates (text shown in another order than it is read).
      const bool unsafe = (code >= 0x80 && code <= 0x9F) || (code >= 0xFDD0 && code <= 0xFDEF) ||
                          (code & 0xFFFE) == 0xFFFE || code == 0x2028 || code == 0x2029 ||
                          (code >= 0x202A && code <= 0x202E) || (code >= 0x2066 && code <= 0x2069);
      if (unsafe) {
        out += kReplacement;
      } else {
        out.append(text.substr(i, length));
      }
      i += length;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

std::optional<double> ParseNonNegative(std::string_view text) {
  if (text.empty() || !((text.front() >= '0' && text.front() <= '9') || text.front() == '.')) {
    return std::nullopt;
  }
  double v = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::fixed);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::string ReplaceAll(std::string text, std::string_view key, std::string_view value) {
  if (key.empty()) return text;
  for (size_t at = 0; (at = text.find(key, at)) != std::string::npos; at += value.size()) {
    text.replace(at, key.size(), value);
  }
  return text;
}

std::string ShellQuote(std::string_view text) {
  return "'" + ReplaceAll(std::string(text), "'", "'\\''") + "'";
}

std::string ShellWord(std::string_view text) {
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  };
  if (!text.empty() && std::ranges::all_of(text, plain)) return std::string(text);
  return ShellQuote(text);
}

std::optional<std::vector<std::string>> SplitShellWords(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has begun ('' is a word, empty)
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    if (c == '#' && !in_word) {  // a comment, as in sh: to the end of its line
      const size_t end = text.find('\n', i);
      if (end == std::string_view::npos) break;
      i = end - 1;
      continue;
    }
    if (c == '\\') {
      if (++i == text.size()) return std::nullopt;
      if (text[i] == '\n') continue;  // backslash-newline: the line goes on, as in sh
      word += text[i];
      in_word = true;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      word.append(text.substr(i + 1, close - i - 1));
      i = close;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i == text.size()) return std::nullopt;
        if (text[i] == '"') break;
        if (text[i] == '\\' && i + 1 < text.size() &&
            std::string_view("\\\"$`\n").find(text[i + 1]) != std::string_view::npos) {
          if (text[++i] == '\n') continue;
        }
        word += text[i];
      }
    } else if (std::string_view(";|&<>()`").find(c) != std::string_view::npos) {
      return std::nullopt;  // a shell's operator, with no shell to obey it
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int count = 0;
  bool padding = false;
  for (const char c : text) {
    int value = -1;
    if (c >= 'A' && c <= 'Z')
      value = c - 'A';
    else if (c >= 'a' && c <= 'z')
      value = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      value = c - '0' + 52;
    else if (c == '+')
      value = 62;
    else if (c == '/')
      value = 63;
    else if (c == '=') {
      padding = true;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return std::nullopt;
    }
    if (padding) return std::nullopt;  // data after '='
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count == 4) {
      out.push_back(static_cast<char>((bits >> 16) & 0xff));
      out.push_back(static_cast<char>((bits >> 8) & 0xff));
      out.push_back(static_cast<char>(bits & 0xff));
      bits = 0;
      count = 0;
    }
  }
  if (count == 1) return std::nullopt;
  if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xff));
  if (count == 3) {
    out.push_back(static_cast<char>((bits >> 10) & 0xff));
    out.push_back(static_cast<char>((bits >> 2) & 0xff));
  }
  return out;
}

std::string PercentEncode(std::string_view text) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

bool IsControlCharacter(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

std::string AsOneLine(std::string_view text) {
  std::string line = SanitizeUtf8(text);
  std::ranges::replace_if(
      line, [](char c) { return c == '\n' || c == '\t'; }, '?');
  return line;
}

bool IsOneLine(std::string_view text, size_t max) {
  return !text.empty() && text.size() <= max && text.find_first_of("\t\n") == std::string::npos &&
         SanitizeUtf8(text) == text;
}

namespace {

// The length of the well-formed UTF-8 sequence at text[i] (Unicode's table 3-7: no overlong
// form, no surrogate, nothing past U+10FFFF), 0 when none starts there.
size_t Utf8SequenceAt(const std::string& text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char b = at(0);
  if (b < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) {
    length = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    length = 3;
    low = b == 0xE0 ? 0xA0 : 0x80;
    high = b == 0xED ? 0x9F : 0xBF;
  } else if (b >= 0xF0 && b <= 0xF4) {
    length = 4;
    low = b == 0xF0 ? 0x90 : 0x80;
    high = b == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (i + length > text.size() || at(1) < low || at(1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (at(k) < 0x80 || at(k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

void ShowControlCharacters(std::string& text) {
  size_t out = 0;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const size_t length = Utf8SequenceAt(text, i);
    // A C1 control in UTF-8 (U+0080-U+009F: 0xC2 then 0x80-0x9F): U+009B is an escape to xterm.
    if (length == 2 && static_cast<unsigned char>(c) == 0xC2 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      text[out++] = '?';
      i += 2;
    } else if (length > 1) {
      for (size_t k = 0; k < length; ++k) text[out++] = text[i + k];
      i += length;
    } else if (length == 0) {
      // A byte of no UTF-8 sequence: 0x80-0x9F is C1 to a terminal in an 8-bit locale.
      const auto b = static_cast<unsigned char>(c);
      text[out++] = b <= 0x9F ? '?' : c;
      ++i;
    } else {
      text[out++] = IsControlCharacter(c) && c != '\n' && c != '\t' ? '?' : c;
      ++i;
    }
  }
  text.resize(out);
}

bool IsEnvName(std::string_view name) {
  const auto letter = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  };
  return !name.empty() && name.size() <= 255 && letter(name.front()) &&
         std::ranges::all_of(name, [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

bool IsEnvSetting(std::string_view setting) {
  const size_t eq = setting.find('=');
  return eq != std::string_view::npos && IsEnvName(setting.substr(0, eq));
}

std::string EscapeC1InJson(std::string json) {
  if (json.find('\xC2') == std::string::npos) return json;
  std::string out;
  out.reserve(json.size() + 16);
  for (size_t i = 0; i < json.size(); ++i) {
    const auto next = i + 1 < json.size() ? static_cast<unsigned char>(json[i + 1]) : 0;
    if (static_cast<unsigned char>(json[i]) == 0xC2 && next >= 0x80 && next <= 0x9F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[next >> 4];
      out += kHex[next & 0xF];
      ++i;
    } else {
      out += json[i];
    }
  }
  return out;
}

std::string ShownUrl(std::string_view url) {
  // The login first, up to the last '@' before the path: a password may hold '#', '?' or '@'
  // (unencoded, as people write them), which must not decide where it ends.
  std::string shown(url);
  const size_t scheme = shown.find("://");
  if (scheme != std::string::npos) {
    const size_t host = scheme + 3;
    const size_t at = shown.substr(0, shown.find('/', host)).rfind('@');
    if (at != std::string::npos && at >= host) shown.erase(host, at + 1 - host);
  }
  return shown.substr(0, shown.find_first_of("?#"));
}

}  // namespace cmax
