#include "sys/self_usage.hpp"

#include <unistd.h>

#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::sys {

Result<SelfUsage> ReadSelfUsage() {
  LocalFileSystem fs;
  SelfUsage usage;
  auto statm = fs.ReadFile("/proc/self/statm", 4096);
  if (!statm) return tl::unexpected(statm.error());
  const auto pages = SplitFields(*statm);
  const uint64_t resident = pages.size() >= 2 ? ParseWhole<uint64_t>(pages[1]).value_or(0) : 0;
  usage.rss_bytes = resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  auto stat = fs.ReadFile("/proc/self/stat", 4096);
  if (!stat) return tl::unexpected(stat.error());
  // Fields after the command name: utime and stime are fields 14 and 15 (indices 11, 12).
  const auto fields = SplitFields(std::string_view(*stat).substr(stat->rfind(')') + 1));
  uint64_t utime = 0;
  uint64_t stime = 0;
  if (fields.size() > 12) {
    utime = ParseWhole<uint64_t>(fields[11]).value_or(0);
    stime = ParseWhole<uint64_t>(fields[12]).value_or(0);
  }
  usage.cpu_seconds =
      static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return usage;
}

}  // namespace cmax::sys
