// `cmax audit`'s work, behind its thin command file: what it reads from this process (files,
// programs, the clock) and what it returns to print.
#pragma once

#include <string>

#include "audit/minimums.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::audit {

struct AuditIo {
  sys::FileSystem* fs = nullptr;
  Clock* clock = nullptr;
};

// The table to grade with: the built-in one when `path` is empty, else that file (at most 4 MiB;
// a broken file is an error naming it, exit 2).
Result<MinimumTable> LoadMinimums(const std::string& path, const AuditIo& io);

// `cmax audit --show-minimums [--minimums FILE]`: the table as MinimumTableText prints it.
Result<std::string> ShowMinimums(const std::string& path, const AuditIo& io);

}  // namespace cmax::audit
