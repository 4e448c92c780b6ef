#include "core/hostlist.hpp"

#include <cstdint>
#include <fmt/format.h>
#include <optional>

#include "core/strings.hpp"

namespace cmax {
namespace {

// A bound on what one list may expand to: the largest clusters have tens of thousands of nodes.
constexpr size_t kMostNames = 200'000;

}  // namespace

Result<std::vector<std::string>> ExpandHostList(std::string_view text) {
  std::vector<std::string> out;
  // Split on commas outside brackets.
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (i > start) items.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '[') {
      ++depth;
    } else if (text[i] == ']') {
      --depth;
    }
    if (depth < 0 || depth > 1)
      return Fail(ErrorCode::kInvalidArgument, "bad brackets in '{}'", text);
  }
  if (depth != 0) return Fail(ErrorCode::kInvalidArgument, "unclosed '[' in '{}'", text);
  for (std::string_view item : items) {
    const size_t open = item.find('[');
    if (open == std::string_view::npos) {
      out.emplace_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    const std::string_view prefix = item.substr(0, open);
    const std::string_view suffix = item.substr(close + 1);
    if (suffix.find('[') != std::string_view::npos) {
      return Fail(ErrorCode::kInvalidArgument, "one range per name: '{}'", item);
    }
    for (std::string_view part : Split(item.substr(open + 1, close - open - 1), ',')) {
      const size_t dash = part.find('-');
      const std::string_view lo_text = part.substr(0, dash);
      const std::string_view hi_text =
          dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
      // Up to 18 digits: a node numbered past a billion is still a node.
      auto number = [](std::string_view t) -> std::optional<int64_t> {
        if (t.empty() || t.size() > 18) return std::nullopt;
        int64_t v = 0;
        for (const char c : t) {
          if (c < '0' || c > '9') return std::nullopt;
          v = v * 10 + (c - '0');
        }
        return v;
      };
      const auto lo = number(lo_text);
      const auto hi = number(hi_text);
      if (!lo || !hi || *hi < *lo || *hi - *lo > 100000) {
        return Fail(ErrorCode::kInvalidArgument, "bad range '{}' in '{}'", part, item);
      }
      if (out.size() + static_cast<size_t>(*hi - *lo) >= kMostNames) {
        return Fail(ErrorCode::kInvalidArgument, "more than {} names in '{}'", kMostNames, item);
      }
      for (int64_t v = *lo; v <= *hi; ++v) {
        out.push_back(fmt::format("{}{:0{}}{}", prefix, v, lo_text.size(), suffix));
      }
    }
  }
  return out;
}

}  // namespace cmax
