// One record of the kernel log, whatever it came from: a /dev/kmsg record, or a line of a
// saved log (dmesg with or without -T, journalctl -k, syslog) with its prefixes taken apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::health {

struct KernelRecord {
  int priority = -1;      // 0 (emerg) .. 7 (debug); -1 when the source does not say
  int facility = -1;      // 0 kernel, 1 user (what a userspace write to /dev/kmsg gets), ...
  uint64_t sequence = 0;  // /dev/kmsg sequence number, 0 when unknown
  std::optional<int64_t> monotonic_us;  // microseconds since boot
  std::optional<WallTime> wall_time;    // when the prefix carried a date
  std::string host;                     // journal and syslog prefixes name the host
  bool continuation = false;            // /dev/kmsg flag 'c': continues the previous record
  // A saved line with none of a kernel log's prefixes (ParseLogLine's last case): its whole text
  // is the message. Any text reads so, so a file of nothing else cannot be told from one that is
  // no kernel log.
  bool bare = false;
  std::string message;
};

// A /dev/kmsg record: "prio,seq,usec,flags[,...];message\n" followed by optional
// " KEY=value" dictionary lines (dropped). Fails on anything else.
Result<KernelRecord> ParseKmsgRecord(std::string_view raw);

// A line of a saved kernel log in any of these shapes (detected per line):
//   raw /dev/kmsg records                      6,342,2909744299,-;message
//   dmesg                                      [ 2909.744299] message
//   dmesg -T (any locale's day and month)      [Mon Nov 30 09:22:28 2026] message
//   dmesg --time-format iso                    2026-11-30T09:22:28,123456+00:00 message
//   journalctl -k / syslog (short, -precise)   Nov 30 09:22:28 host kernel: message
//   journalctl -o short-iso / rsyslog RFC 3339 2026-11-30T09:22:28+0000 host kernel: message
//   either of the last two with the kernel's   ... host kernel: [ 2909.744299] message
// Syslog lines from other programs than the kernel give nullopt; a line with no prefix is a
// bare message. default_year fills in the year that short syslog dates leave out.
std::optional<KernelRecord> ParseLogLine(std::string_view line, int default_year);

// Month number (1-12) for a month name or abbreviation in English, German, French, Spanish,
// Italian, Portuguese or Dutch (case and a trailing '.' ignored); 0 when unknown.
int MonthFromName(std::string_view name);

}  // namespace cmax::health
