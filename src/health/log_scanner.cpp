#include "health/log_scanner.hpp"

#include <charconv>
#include <new>

namespace cmax::health {

namespace {
constexpr int64_t kMaxSinceSeconds = 3660LL * 86400;  // ten years and a bit
}  // namespace

Result<SinceFilter> ParseSince(std::string_view text, WallTime now, int64_t now_monotonic_us) {
  SinceFilter since;
  if (auto time = ParseIso8601(text)) {
    since.wall = *time;
  } else {
    int64_t amount = 0;
    const char* end = text.data() + text.size();
    auto [unit, ec] = std::from_chars(text.data(), end, amount);
    const std::string_view suffix(unit, static_cast<size_t>(end - unit));
    int64_t per_unit = 0;
    if (suffix == "s") per_unit = 1;
    if (suffix == "m") per_unit = 60;
    if (suffix == "h") per_unit = 3600;
    if (suffix == "d") per_unit = 86400;
    // Checked before multiplying, so no amount can overflow.
    const bool in_range = amount > 0 && per_unit > 0 && amount <= kMaxSinceSeconds / per_unit;
    const int64_t seconds = in_range ? amount * per_unit : 0;
    if (ec != std::errc() || !in_range) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--since takes a duration up to ten years (90s, 15m, 2h, 3d) or a UTC time "
                  "(2026-11-30T09:00:00Z), not '{}'",
                  text);
    }
    since.wall = now - std::chrono::seconds(seconds);
  }
  // A minute of leeway for clocks; past it, nothing would be read and the node would look clean.
  if (*since.wall - now > std::chrono::minutes(1)) {
    return Fail(ErrorCode::kInvalidArgument,
                "--since is in the future ('{}'): no record would be read", text);
  }
  if (now - *since.wall > std::chrono::seconds(kMaxSinceSeconds)) {
    return Fail(ErrorCode::kInvalidArgument, "--since reaches back more than ten years: '{}'",
                text);
  }
  const auto back = std::chrono::duration_cast<std::chrono::microseconds>(now - *since.wall);
  since.monotonic_us = now_monotonic_us - back.count();
  return since;
}

LogScanner::LogScanner(const XidCatalog& catalog, SinceFilter since,
                       std::optional<WallTime> boot_time)
    : since_(since), boot_time_(boot_time), tracker_(catalog) {}

bool LogScanner::BeforeSince(const KernelRecord& record) {
  if (!since_.wall && !since_.monotonic_us) return false;
  if (record.wall_time && since_.wall) return *record.wall_time < *since_.wall;
  if (record.monotonic_us && since_.monotonic_us)
    return *record.monotonic_us < *since_.monotonic_us;
  ++summary_.undated;
  return false;  // cannot place it: keep it rather than hide a fault
}

void LogScanner::Add(KernelRecord record) {
  ++summary_.records;
  if (!record.bare) ++summary_.framed;
  if (!record.wall_time && record.monotonic_us && boot_time_) {
    record.wall_time = *boot_time_ + std::chrono::milliseconds(*record.monotonic_us / 1000);
  }
  if (BeforeSince(record)) {
    ++summary_.skipped_by_since;
    return;
  }
  for (const KernelEvent& event : parser_.Feed(record)) {
    ++summary_.events;
    tracker_.Observe(event, record);
    if (event.kind == KernelEventKind::kXid || event.kind == KernelEventKind::kSxid) {
      summary_.recent_xids.push_back(event);
      if (summary_.recent_xids.size() > kRecentXids) summary_.recent_xids.pop_front();
    }
  }
}

Result<void> ScanKmsg(sys::KmsgReader& reader, LogScanner& scanner) {
  while (true) {
    auto raw = reader.Next();
    if (!raw) return tl::unexpected(raw.error());
    if (!*raw) break;
    auto record = ParseKmsgRecord(**raw);
    if (record) scanner.Add(std::move(*record));
  }
  scanner.Summary().lost = reader.Lost();
  scanner.Summary().overruns = reader.Overruns();
  return {};
}

Result<sys::LineReader> OpenSavedLog(const std::string& path,
                                     const std::function<bool()>& interrupted) {
  return sys::LineReader::Open(path,
                               {.max_line_bytes = size_t{64} << 10, .interrupted = interrupted});
}

Result<void> ScanLines(sys::LineReader& reader, LogScanner& scanner, int default_year) try {
  while (true) {
    auto line = reader.Next();
    scanner.Summary().cut_lines = reader.CutLines();
    if (!line) return tl::unexpected(line.error());
    if (!*line) return {};
    auto record = ParseLogLine(**line, default_year);
    if (!record) {
      ++scanner.Summary().not_kernel;
      continue;
    }
    scanner.Add(std::move(*record));
  }
} catch (const std::bad_alloc&) {
  // Lines are bounded, but conditions and events are kept: never let their growth end the check
  // as if the log had been read.
  return Fail(ErrorCode::kIo, "out of memory reading {} (at byte {})", reader.Name(),
              reader.Bytes());
}

}  // namespace cmax::health
