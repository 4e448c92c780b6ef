#include "health/kernel_record.hpp"

#include <ctime>

#include "core/clock.hpp"
#include "core/strings.hpp"

namespace cmax::health {
namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

template <class Int>
bool ParseInt(std::string_view text, Int& out) {
  const std::optional<Int> value = ParseWhole<Int>(text);
  if (value) out = *value;
  return value.has_value();
}

// "HH:MM:SS" with an optional fraction; fills seconds of day and microseconds.
bool ParseClock(std::string_view text, int& seconds_of_day, int& micros) {
  if (text.size() < 8 || text[2] != ':' || text[5] != ':') return false;
  int h = 0, m = 0, s = 0;
  if (!ParseInt(text.substr(0, 2), h) || !ParseInt(text.substr(3, 2), m) ||
      !ParseInt(text.substr(6, 2), s) || h > 23 || m > 59 || s > 60) {
    return false;
  }
  micros = 0;
  if (text.size() > 8) {
    if (text[8] != '.' && text[8] != ',') return false;
    std::string_view fraction = text.substr(9, 6);
    if (!ParseInt(fraction, micros)) return false;
    for (size_t i = fraction.size(); i < 6; ++i) micros *= 10;
  }
  seconds_of_day = h * 3600 + m * 60 + s;
  return true;
}

std::optional<WallTime> MakeTime(int year, int month, int day, int seconds_of_day, int micros,
                                 int offset_seconds) {
  if (year < 1970 || !IsCalendarDate(year, month, day)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  const int64_t midnight = static_cast<int64_t>(timegm(&tm));
  const int64_t ms = (midnight + seconds_of_day - offset_seconds) * 1000 + micros / 1000;
  return WallTime(std::chrono::milliseconds(ms));
}

// "+00:00", "+0000", "Z", "-05:30": seconds east of UTC.
bool ParseOffset(std::string_view text, int& offset) {
  if (text == "Z") {
    offset = 0;
    return true;
  }
  if (text.size() < 5 || (text[0] != '+' && text[0] != '-')) return false;
  int h = 0, m = 0;
  const bool colon = text.size() == 6 && text[3] == ':';
  if (!ParseInt(text.substr(1, 2), h) || !ParseInt(text.substr(colon ? 4 : 3, 2), m)) return false;
  if (text.size() != (colon ? 6u : 5u)) return false;
  offset = (h * 3600 + m * 60) * (text[0] == '-' ? -1 : 1);
  return true;
}

// RFC 3339-like "2026-11-30T09:22:28[.ffffff|,ffffff](Z|+hh:mm|+hhmm)".
std::optional<WallTime> ParseIsoTime(std::string_view text) {
  if (text.size() < 19 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != ' ')) {
    return std::nullopt;
  }
  int year = 0, month = 0, day = 0;
  if (!ParseInt(text.substr(0, 4), year) || !ParseInt(text.substr(5, 2), month) ||
      !ParseInt(text.substr(8, 2), day)) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(11);
  size_t zone = rest.find_first_of("Z+-", 8);
  const std::string_view clock = rest.substr(0, zone);
  int seconds = 0, micros = 0, offset = 0;
  if (!ParseClock(clock, seconds, micros)) return std::nullopt;
  if (zone != std::string_view::npos && !ParseOffset(rest.substr(zone), offset)) {
    return std::nullopt;
  }
  return MakeTime(year, month, day, seconds, micros, offset);
}

// "[ 2909.744299] rest" -> monotonic microseconds and the rest.
bool TakeBracketedUptime(std::string_view& text, int64_t& micros) {
  if (text.empty() || text[0] != '[') return false;
  const size_t close = text.find(']');
  if (close == std::string_view::npos) return false;
  const std::string_view inside = Trim(text.substr(1, close - 1));
  const size_t dot = inside.find('.');
  if (dot == std::string_view::npos) return false;
  int64_t seconds = 0;
  int64_t fraction = 0;
  const std::string_view frac = inside.substr(dot + 1);
  // An uptime past ~300 years is not an uptime (and would overflow in microseconds).
  if (!ParseInt(inside.substr(0, dot), seconds) || seconds < 0 || seconds > 10'000'000'000 ||
      frac.empty() || frac.size() > 9 || !ParseInt(frac, fraction)) {
    return false;
  }
  for (size_t i = frac.size(); i < 6; ++i) fraction *= 10;
  for (size_t i = 6; i < frac.size(); ++i) fraction /= 10;
  micros = seconds * 1000000 + fraction;
  text.remove_prefix(close + 1);
  if (!text.empty() && text[0] == ' ') text.remove_prefix(1);
  return true;
}

// "[Mon Nov 30 09:22:28 2026] rest": day and month names in any locale; the month is
// matched against known names, the clock and year by shape.
bool TakeBracketedDate(std::string_view& text, std::optional<WallTime>& wall) {
  if (text.empty() || text[0] != '[') return false;
  const size_t close = text.find(']');
  if (close == std::string_view::npos) return false;
  const auto fields = SplitFields(text.substr(1, close - 1));
  int year = 0, day = 0, month = 0, seconds = -1, micros = 0;
  for (std::string_view f : fields) {
    int value = 0;
    if (f.size() >= 8 && f[2] == ':' && ParseClock(f, seconds, micros)) continue;
    if (f.size() == 4 && ParseInt(f, value)) {
      year = value;
    } else if (f.size() <= 2 && ParseInt(f, value)) {
      day = value;
    } else if (int m = MonthFromName(f); m != 0 && month == 0) {
      month = m;
    }
  }
  if (seconds < 0 || year == 0 || day == 0) return false;
  wall = MakeTime(year, month == 0 ? 1 : month, day, seconds, micros, 0);
  if (month == 0) wall.reset();  // shape is right, month unknown: strip, but no time
  text.remove_prefix(close + 1);
  if (!text.empty() && text[0] == ' ') text.remove_prefix(1);
  return true;
}

// After the date: "host kernel: message" (also "kernel[123]:"); false for other programs.
bool TakeHostAndKernel(std::string_view& text, KernelRecord& record) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view host = text.substr(0, space);
  std::string_view rest = text.substr(space + 1);
  if (rest.rfind("kernel:", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.rfind("kernel[", 0) == 0 && rest.find("]:") != std::string_view::npos) {
    rest.remove_prefix(rest.find("]:") + 2);
  } else {
    return false;
  }
  if (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
  record.host = std::string(host);
  int64_t micros = 0;
  if (TakeBracketedUptime(rest, micros)) record.monotonic_us = micros;
  text = rest;
  return true;
}

}  // namespace

int MonthFromName(std::string_view name) {
  std::string lower = ToLower(name);
  while (!lower.empty() && lower.back() == '.') lower.pop_back();
  if (lower.size() < 3) return 0;
  // Full names; an abbreviation matches a name it begins ("nov", "févr", "sept", "juil").
  static constexpr std::pair<std::string_view, int> kNames[] = {
      {"january", 1},   {"januar", 1},    {"janvier", 1},   {"enero", 1},      {"gennaio", 1},
      {"janeiro", 1},   {"januari", 1},   {"february", 2},  {"februar", 2},    {"février", 2},
      {"febrero", 2},   {"febbraio", 2},  {"fevereiro", 2}, {"februari", 2},   {"march", 3},
      {"märz", 3},      {"mars", 3},      {"marzo", 3},     {"março", 3},      {"maart", 3},
      {"april", 4},     {"avril", 4},     {"abril", 4},     {"aprile", 4},     {"may", 5},
      {"mai", 5},       {"mayo", 5},      {"maggio", 5},    {"maio", 5},       {"mei", 5},
      {"june", 6},      {"juni", 6},      {"juin", 6},      {"junio", 6},      {"giugno", 6},
      {"junho", 6},     {"july", 7},      {"juli", 7},      {"juillet", 7},    {"julio", 7},
      {"luglio", 7},    {"julho", 7},     {"august", 8},    {"août", 8},       {"agosto", 8},
      {"augustus", 8},  {"september", 9}, {"septembre", 9}, {"septiembre", 9}, {"settembre", 9},
      {"setembro", 9},  {"october", 10},  {"oktober", 10},  {"octobre", 10},   {"octubre", 10},
      {"ottobre", 10},  {"outubro", 10},  {"november", 11}, {"novembre", 11},  {"noviembre", 11},
      {"novembro", 11}, {"december", 12}, {"dezember", 12}, {"décembre", 12},  {"diciembre", 12},
      {"dicembre", 12}, {"dezembro", 12},
  };
  // Abbreviations that begin no full name above.
  static constexpr std::pair<std::string_view, int> kAbbreviations[] = {
      {"mrz", 3},
      {"mrt", 3},
  };
  for (const auto& [abbreviation, month] : kAbbreviations) {
    if (lower == abbreviation) return month;
  }
  for (const auto& [full, month] : kNames) {
    if (lower == full || (lower.size() <= 5 && full.rfind(lower, 0) == 0)) return month;
  }
  return 0;
}

Result<KernelRecord> ParseKmsgRecord(std::string_view raw) {
  const size_t semicolon = raw.find(';');
  if (semicolon == std::string_view::npos) {
    return Fail(ErrorCode::kInvalidArgument, "kmsg record without ';'");
  }
  const auto fields = Split(raw.substr(0, semicolon), ',');
  if (fields.size() < 4) return Fail(ErrorCode::kInvalidArgument, "kmsg record header too short");
  KernelRecord record;
  int prio_facility = 0;
  int64_t usec = 0;
  if (!ParseInt(fields[0], prio_facility) || !ParseInt(fields[1], record.sequence) ||
      !ParseInt(fields[2], usec) || prio_facility < 0 || usec < 0) {
    return Fail(ErrorCode::kInvalidArgument, "kmsg record header is not numeric");
  }
  record.priority = prio_facility & 7;
  record.facility = prio_facility >> 3;
  record.monotonic_us = usec;
  record.continuation = fields[3].find('c') != std::string_view::npos;
  std::string_view message = raw.substr(semicolon + 1);
  // The message ends at the first newline; " KEY=value" dictionary lines follow it.
  message = message.substr(0, message.find('\n'));
  record.message = std::string(message);
  return record;
}

std::optional<KernelRecord> ParseLogLine(std::string_view line, int default_year) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  KernelRecord record;

  // Raw /dev/kmsg: digits, comma, digits, comma ...
  if (!line.empty() && IsDigit(line[0])) {
    const size_t semicolon = line.find(';');
    const size_t comma = line.find(',');
    if (semicolon != std::string_view::npos && comma != std::string_view::npos &&
        comma < semicolon) {
      if (auto parsed = ParseKmsgRecord(line)) return *parsed;
    }
  }
  // dmesg: "[ 1234.567890] message"; dmesg -T: "[Mon Nov 30 09:22:28 2026] message".
  std::string_view rest = line;
  int64_t micros = 0;
  if (TakeBracketedUptime(rest, micros)) {
    record.monotonic_us = micros;
    record.message = std::string(rest);
    return record;
  }
  if (TakeBracketedDate(rest, record.wall_time)) {
    record.message = std::string(rest);
    return record;
  }
  // ISO dates: dmesg --time-format iso ("... message") or short-iso/rsyslog ("... host kernel:").
  const size_t first_space = line.find(' ');
  if (first_space != std::string_view::npos && line.size() > 19 && IsDigit(line[0]) &&
      line[4] == '-') {
    if (auto time = ParseIsoTime(line.substr(0, first_space))) {
      record.wall_time = time;
      rest = line.substr(first_space + 1);
      std::string_view after_host = rest;
      if (TakeHostAndKernel(after_host, record)) {
        record.message = std::string(after_host);
        return record;
      }
      // A syslog line of another program has "host program:" where dmesg has the message.
      const size_t space = rest.find(' ');
      const std::string_view second = space == std::string_view::npos ? "" : rest.substr(space + 1);
      const size_t colon = second.find(':');
      const bool other_program = colon != std::string_view::npos &&
                                 second.substr(0, colon).find(' ') == std::string_view::npos &&
                                 second.substr(0, colon).find('[') != std::string_view::npos;
      if (other_program) return std::nullopt;
      record.message = std::string(rest);
      return record;
    }
  }
  // Short syslog / journalctl: "<month> <day> HH:MM:SS[.ffffff] host kernel: message", where
  // the month may be in any locale (matched by name when known, by shape otherwise).
  const auto fields = SplitFields(line.substr(0, std::min<size_t>(line.size(), 64)));
  if (fields.size() >= 4) {
    int day = 0;
    int seconds = 0;
    int fraction = 0;
    if (fields[0].size() >= 3 && !IsDigit(fields[0][0]) && fields[1].size() <= 2 &&
        ParseInt(fields[1], day) && ParseClock(fields[2], seconds, fraction)) {
      const size_t clock_end = fields[2].data() + fields[2].size() - line.data();
      rest = line.substr(clock_end + 1);
      while (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
      if (!TakeHostAndKernel(rest, record)) return std::nullopt;
      const int month = MonthFromName(fields[0]);
      if (month != 0) record.wall_time = MakeTime(default_year, month, day, seconds, fraction, 0);
      record.message = std::string(rest);
      return record;
    }
  }
  record.bare = true;
  record.message = std::string(line);
  return record;
}

}  // namespace cmax::health
