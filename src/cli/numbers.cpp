#include "cli/numbers.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <string>
#include <string_view>

#include "core/strings.hpp"

namespace cmax::cli {
namespace {

bool AllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "007" -> "7": CLI11 converts with base 0, which would read a leading zero as octal.
void DropLeadingZeros(std::string& text) {
  const size_t sign = !text.empty() && text[0] == '-' ? 1 : 0;
  size_t first = sign;
  while (first + 1 < text.size() && text[first] == '0') ++first;
  text.erase(sign, first - sign);
  if (text == "-0") text = "0";
}

// A short quote of what was given: the value may be anything, including a megabyte of it.
std::string Given(const std::string& text) {
  std::string shown = text.substr(0, 40);
  for (char& c : shown) {
    if (IsControlCharacter(c)) c = '?';  // the quote stays on one line
  }
  return shown.size() < text.size() ? shown + "..." : shown;
}

std::string Interval(double min, double max, bool open_min) {
  return fmt::format("{}{}, {}]", open_min ? "(" : "[", min, max);
}

CLI::Validator Named(CLI::Validator validator) {
  validator.name(kRangeValidator);
  return validator;
}

}  // namespace

CLI::Validator Whole(int64_t min, int64_t max) {
  const std::string range = fmt::format("[{}, {}]", min, max);
  return Named(CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const std::string_view digits =
            !text.empty() && text[0] == '-' ? std::string_view(text).substr(1) : text;
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!AllDigits(digits) || ec != std::errc() || end != text.data() + text.size() ||
            value < min || value > max) {
          return fmt::format("must be a whole number in {}, not '{}'", range, Given(text));
        }
        DropLeadingZeros(text);
        return {};
      },
      range));
}

CLI::Validator AnyUnsigned() {
  return Named(CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!AllDigits(text) || ec != std::errc() || end != text.data() + text.size()) {
          return fmt::format("must be a whole number in [0, {}], not '{}'", UINT64_MAX,
                             Given(text));
        }
        DropLeadingZeros(text);
        return {};
      },
      fmt::format("[0, {}]", UINT64_MAX)));
}

namespace {

CLI::Validator RealIn(double min, double max, bool open_min, std::string extra = {}) {
  const std::string range = Interval(min, max, open_min);
  return Named(CLI::Validator(
      [min, max, open_min, range, extra](std::string& text) -> std::string {
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        // from_chars takes "nan" and "inf" (and no hex without its own flag): refused here.
        const bool number = !text.empty() && ec == std::errc() &&
                            end == text.data() + text.size() && std::isfinite(value);
        if (!number || value < min || value > max || (open_min && value == min)) {
          return fmt::format("must be a number in {}{}, not '{}'", range, extra, Given(text));
        }
        return {};
      },
      range));
}

}  // namespace

CLI::Validator Real(double min, double max) {
  return RealIn(min, max, false);
}

CLI::Validator Positive(double max) {
  return RealIn(0, max, true);
}

CLI::Validator Share() {
  return RealIn(0, 1, false);
}

CLI::Validator SecondsIn(double max, bool zero_means_none) {
  if (zero_means_none) return RealIn(0, max, false, " seconds (0: none)");
  return RealIn(0, max, true, " seconds");
}

}  // namespace cmax::cli
