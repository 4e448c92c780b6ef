// The audit's evidence from this host: files through sys::FileSystem (/proc, /sys, /etc, /boot,
// the loader cache), a few programs' version lines through sys::ProcessRunner (each with a
// deadline, and only when the program is on PATH), never anything that changes state. Keys are
// the catalogue's; a value null means looked and absent, a key left out means not collected
// (the check is then UNKNOWN). The parsers are pure and table-tested.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/grading.hpp"
#include "core/clock.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::audit {

struct LocalProbeOptions {
  std::string path;                            // the PATH programs are looked up in
  Duration timeout = std::chrono::seconds(5);  // per program
};

AuditEvidence CollectLocalEvidence(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                                   const LocalProbeOptions& options);

// "Cuda compilation tools, release 13.0, V13.0.48" -> "13.0"; empty when absent.
std::string ParseNvccRelease(std::string_view output);
// The first word of the first non-blank line that starts with a digit and holds a dot, after
// an optional 'v': "runc version 1.1.12", "NVIDIA Container Toolkit CLI version 1.17.8",
// "\ndcgmi  version: 4.7.0".
std::string FirstVersionWord(std::string_view output);
// KEY=VALUE lines (comments and blank lines skipped), as /etc/nccl.conf holds them.
std::map<std::string, std::string> ParseKeyValues(std::string_view text);
// /proc/self/limits: the soft limit of a row ("Max locked memory"), "unlimited" or a number.
std::optional<std::string> SoftLimit(std::string_view limits, std::string_view row);
// The paths in the loader cache (/etc/ld.so.cache) of the libraries whose file name starts
// with `stem` ("libnccl.so").
std::vector<std::string> CachedLibraries(std::string_view cache, std::string_view stem);

}  // namespace cmax::audit
