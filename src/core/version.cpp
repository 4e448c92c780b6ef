#include "core/version.hpp"

#include <charconv>

#include "core/strings.hpp"

namespace cmax {
namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// dpkg's order(): end of string and digits 0, '~' -1, letters by value, others after letters.
int Order(char c) {
  if (IsDigit(c)) return 0;
  if (IsAlpha(c)) return static_cast<unsigned char>(c);
  if (c == '~') return -1;
  return static_cast<unsigned char>(c) + 256;
}

// Compares two digit runs by value without converting them, so any length is exact.
int CompareDigits(std::string_view a, std::string_view b) {
  while (!a.empty() && a.front() == '0') a.remove_prefix(1);
  while (!b.empty() && b.front() == '0') b.remove_prefix(1);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  int cmp = a.compare(b);
  return cmp < 0 ? -1 : (cmp > 0 ? 1 : 0);
}

bool ValidChar(char c) {
  return IsDigit(c) || IsAlpha(c) || c == '.' || c == '+' || c == '-' || c == '~' || c == ':' ||
         c == '_';
}

}  // namespace

int CompareVersionPart(std::string_view a, std::string_view b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() || j < b.size()) {
    while ((i < a.size() && !IsDigit(a[i])) || (j < b.size() && !IsDigit(b[j]))) {
      const int ac = i < a.size() ? Order(a[i]) : 0;
      const int bc = j < b.size() ? Order(b[j]) : 0;
      if (ac != bc) return ac < bc ? -1 : 1;
      ++i;
      ++j;
    }
    const size_t a_start = i;
    while (i < a.size() && IsDigit(a[i])) ++i;
    const size_t b_start = j;
    while (j < b.size() && IsDigit(b[j])) ++j;
    const int cmp = CompareDigits(a.substr(a_start, i - a_start), b.substr(b_start, j - b_start));
    if (cmp != 0) return cmp;
  }
  return 0;
}

Result<Version> ParseVersion(std::string_view text) {
  if (text.empty()) return Fail(ErrorCode::kInvalidArgument, "empty version");
  for (char c : text) {
    if (!ValidChar(c)) {
      return Fail(ErrorCode::kInvalidArgument, "version '{}' has an invalid character", text);
    }
  }
  Version version;
  std::string_view rest = text;
  if (const size_t colon = rest.find(':'); colon != std::string_view::npos) {
    const std::string_view epoch = rest.substr(0, colon);
    const auto number = ParseWhole<decltype(version.epoch)>(epoch);
    if (!number) return Fail(ErrorCode::kInvalidArgument, "version '{}' has a bad epoch", text);
    version.epoch = *number;
    rest.remove_prefix(colon + 1);
  }
  // A colon after the epoch would make the text read back differently, in any part.
  if (rest.find(':') != std::string_view::npos) {
    return Fail(ErrorCode::kInvalidArgument, "version '{}' has more than one epoch", text);
  }
  if (const size_t dash = rest.rfind('-'); dash != std::string_view::npos) {
    version.revision = std::string(rest.substr(dash + 1));
    rest = rest.substr(0, dash);
    if (version.revision.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "version '{}' has an empty revision", text);
    }
  }
  if (rest.size() > 1 && (rest[0] == 'v' || rest[0] == 'V') && IsDigit(rest[1])) {
    rest.remove_prefix(1);
  }
  if (rest.empty() || !IsDigit(rest[0])) {
    return Fail(ErrorCode::kInvalidArgument, "version '{}' does not start with a digit", text);
  }
  version.upstream = std::string(rest);
  return version;
}

int CompareVersions(const Version& a, const Version& b) {
  if (a.epoch != b.epoch) return a.epoch < b.epoch ? -1 : 1;
  if (int cmp = CompareVersionPart(a.upstream, b.upstream); cmp != 0) return cmp;
  return CompareVersionPart(a.revision, b.revision);
}

Result<int> CompareVersionText(std::string_view a, std::string_view b) {
  auto va = ParseVersion(a);
  if (!va) return tl::unexpected(va.error());
  auto vb = ParseVersion(b);
  if (!vb) return tl::unexpected(vb.error());
  return CompareVersions(*va, *vb);
}

Result<uint64_t> MajorVersion(std::string_view text) {
  auto version = ParseVersion(text);
  if (!version) return tl::unexpected(version.error());
  const std::string& up = version->upstream;
  uint64_t major = 0;
  auto [end, ec] = std::from_chars(up.data(), up.data() + up.size(), major);
  if (ec != std::errc()) {
    return Fail(ErrorCode::kInvalidArgument, "version '{}' has an overlong major number", text);
  }
  (void)end;
  return major;
}

std::string FormatVersion(const Version& version) {
  std::string out;
  if (version.epoch != 0) out = std::to_string(version.epoch) + ":";
  out += version.upstream;
  if (!version.revision.empty()) out += "-" + version.revision;
  return out;
}

}  // namespace cmax
