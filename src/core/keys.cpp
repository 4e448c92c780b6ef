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

int LineOfJsonKey(std::string_view text, std::string_view key, int occurrence) {
  // String by string, so that a quote inside a value is never taken for a key's.
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    if (text[i] != '"') continue;
    const size_t start = i + 1;
    size_t end = start;
    while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
    if (end >= text.size()) return 0;
    const int at = line;
    line += static_cast<int>(std::count(text.begin() + static_cast<ptrdiff_t>(start),
                                        text.begin() + static_cast<ptrdiff_t>(end), '\n'));
    size_t after = end + 1;
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                   text[after] == '\r' || text[after] == '\n')) {
      ++after;
    }
    if (after < text.size() && text[after] == ':' && text.substr(start, end - start) == key &&
        --occurrence <= 0) {
      return at;
    }
    i = end;
  }
  return 0;
}

}  // namespace cmax
