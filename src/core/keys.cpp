#include "core/keys.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/strings.hpp"

namespace cmax {
namespace {

// Levenshtein distance with a cap: anything over `cap` is cap + 1.
size_t EditDistance(std::string_view a, std::string_view b, size_t cap) {
  if (a.size() > b.size() + cap || b.size() > a.size() + cap) return cap + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return std::min(row[b.size()], cap + 1);
}

}  // namespace

std::optional<std::string_view> NearestKey(std::string_view key,
                                           const std::vector<std::string_view>& known) {
  std::optional<std::string_view> best;
  size_t best_distance = 3;
  for (const std::string_view candidate : known) {
    const size_t d = EditDistance(key, candidate, 2);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

Error UnknownKey(std::string_view what, std::string_view key, int line,
                 const std::vector<std::string_view>& known) {
  // The key came from a file: shown short and without control characters.
  std::string shown = SanitizeUtf8(key.substr(0, 60));
  if (key.size() > 60) shown += "...";
  std::string message = line > 0 ? fmt::format("{} line {}: unknown key '{}'", what, line, shown)
                                 : fmt::format("{}: unknown key '{}'", what, shown);
  if (const auto nearest = NearestKey(key, known); nearest) {
    message += fmt::format(" (did you mean '{}'?)", *nearest);
  }
  std::vector<std::string> names(known.begin(), known.end());
  message += fmt::format("; known keys: {}", Join(names, ", "));
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}

int LineOfJsonKey(std::string_view text, std::string_view key) {
  const std::string quoted = fmt::format("\"{}\"", key);
  size_t at = 0;
  while ((at = text.find(quoted, at)) != std::string_view::npos) {
    size_t after = at + quoted.size();
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                   text[after] == '\r' || text[after] == '\n')) {
      ++after;
    }
    if (after < text.size() && text[after] == ':') {
      return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
    }
    at += quoted.size();
  }
  return 0;
}

}  // namespace cmax
