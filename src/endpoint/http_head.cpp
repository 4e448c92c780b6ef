#include "endpoint/http_head.hpp"

#include <string>

#include "core/strings.hpp"

namespace cmax::endpoint {

size_t HeadLength(std::string_view buffer, size_t searched) {
  // A blank line is an LF followed by LF or CR LF; one that ends in a new byte starts at most two
  // bytes before them.
  for (size_t i = searched < 2 ? 0 : searched - 2; i < buffer.size(); ++i) {
    if (buffer[i] != '\n') continue;
    if (i + 1 < buffer.size() && buffer[i + 1] == '\n') return i + 2;
    if (i + 2 < buffer.size() && buffer[i + 1] == '\r' && buffer[i + 2] == '\n') return i + 3;
  }
  return std::string::npos;
}

std::vector<std::string_view> HeadLines(std::string_view head) {
  std::vector<std::string_view> lines = Split(head, '\n');
  for (std::string_view& line : lines) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::optional<uint64_t> ContentLengthItem(std::string_view item) {
  item = Trim(item);
  if (item.empty() || item.size() > 18) return std::nullopt;
  uint64_t n = 0;
  for (const char c : item) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

bool IsFieldNameCharacter(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace cmax::endpoint
