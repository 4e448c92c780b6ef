// Runs kernel-log records through the event parser and the condition tracker, keeping the
// counts a report needs: records read, events, lost records, what the --since filter skipped.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "health/conditions.hpp"
#include "health/kernel_events.hpp"
#include "health/kernel_record.hpp"
#include "sys/kmsg_reader.hpp"
#include "sys/line_reader.hpp"

namespace cmax::health {

struct SinceFilter {
  std::optional<WallTime> wall;         // keep records at or after this time
  std::optional<int64_t> monotonic_us;  // the same instant on the boot clock
};

// "--since": a duration back from now ("90s", "15m", "2h", "3d") or a UTC time
// ("2026-11-30T09:00:00Z"), placed on both clocks so that dated and undated records compare.
Result<SinceFilter> ParseSince(std::string_view text, WallTime now, int64_t now_monotonic_us);

struct LogSummary {
  std::string source;    // "/dev/kmsg", or the file replayed
  bool saved = false;    // a saved log (a file, stdin), not /dev/kmsg
  uint64_t records = 0;  // records read
  uint64_t framed = 0;   // records with a kernel log's prefix, read or not (all of /dev/kmsg's)
  uint64_t events = 0;   // records that were health events
  uint64_t skipped_by_since = 0;
  uint64_t undated = 0;     // records --since could not place (no date, no boot clock)
  uint64_t not_kernel = 0;  // syslog lines of other programs
  uint64_t lost = 0;        // records the ring overwrote before they were read
  uint64_t overruns = 0;
  uint64_t cut_lines = 0;               // saved-log lines longer than the reader's limit, cut to it
  std::deque<KernelEvent> recent_xids;  // the last Xid and SXid events, newest last
};

class LogScanner {
 public:
  static constexpr size_t kRecentXids = 200;

  // boot_time: wall time of monotonic zero, to date /dev/kmsg records; nullopt for files.
  LogScanner(const XidCatalog& catalog, SinceFilter since, std::optional<WallTime> boot_time);

  void Add(KernelRecord record);
  const ConditionTracker& Tracker() const { return tracker_; }
  LogSummary& Summary() { return summary_; }
  const LogSummary& Summary() const { return summary_; }

 private:
  bool BeforeSince(const KernelRecord& record);
  SinceFilter since_;
  std::optional<WallTime> boot_time_;
  KernelEventParser parser_;
  ConditionTracker tracker_;
  LogSummary summary_;
};

// Reads every record waiting in /dev/kmsg (non-blocking) into the scanner.
Result<void> ScanKmsg(sys::KmsgReader& reader, LogScanner& scanner);
// A saved log, opened for ScanLines: lines over 64 KiB are cut (kernel records are at most
// about 1 KiB, the kernel's own line limit), so memory stays bounded on any file. A missing file
// is kNotFound, a directory kInvalidArgument.
Result<sys::LineReader> OpenSavedLog(const std::string& path,
                                     const std::function<bool()>& interrupted);
// Reads a saved log line by line (any shape ParseLogLine knows) in bounded memory: lines over
// the reader's limit are cut and counted. A read error, an interruption or running out of memory
// is returned; what was read before it stays in the scanner.
Result<void> ScanLines(sys::LineReader& reader, LogScanner& scanner, int default_year);

}  // namespace cmax::health
