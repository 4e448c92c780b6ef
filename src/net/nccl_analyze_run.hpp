// `cmax nccl analyze`: nccl-tests logs a user already has, read, analysed (net/nccl_analysis)
// and recorded as a run (command "nccl"): one finding per curve, dip, drop with the node count
// and platform comparison, each curve's busbw as metrics, the whole analysis as evidence.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "net/nccl_analysis.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::net {

// The most one log may hold: nccl-tests with INFO lines of every rank of a large job.
inline constexpr size_t kMaxNcclLogBytes = size_t{1} << 30;

struct NcclAnalyzeOptions {
  std::vector<std::string> files;  // "-": standard input, read by the caller into `stdin_text`
  std::string platform;            // a platform's name; empty: none
  std::string platforms_file;      // the platforms' figures; empty: the built-in ones
  double tolerance_pct = 10;
  double floor_pct = 5;
  bool exit_zero = false;
};

struct NcclAnalyzeIo {
  std::string db_path;
  std::string cmax_version;
  std::string provider;  // recorded with the run; empty: CMAX_PROVIDER's
  const sys::FileSystem* fs = nullptr;
  const Clock* clock = nullptr;
  std::string stdin_text;  // what "-" reads
  // Ctrl-C or SIGTERM, for `analyze`: looked at between files and before the run is recorded;
  // when it says so, nothing is recorded and the call fails with kInterrupted.
  std::function<bool()> interrupted;
};

struct NcclAnalyzeReport {
  NcclAnalysis analysis;
  RunRecord record;
  int exit_code = 0;  // 0, 1 a dip, cliff, drop or shortfall, 3 nothing could be analysed
};

// The platforms' figures from `path` (cmax.nccl-platforms/v1), errors naming the file; an empty
// path: the built-in ones.
Result<NcclPlatforms> LoadNcclPlatforms(const std::string& path, const sys::FileSystem& fs);

// The findings and metrics a run keeps of an analysis. Pure.
std::vector<Finding> NcclFindings(const NcclAnalysis& analysis);
std::vector<Metric> NcclMetrics(const NcclAnalysis& analysis);

// Usage errors (a missing file, an unknown platform, a broken platforms file) before any run is
// recorded; then the run.
Result<NcclAnalyzeReport> AnalyzeNcclFiles(const NcclAnalyzeOptions& options,
                                           const NcclAnalyzeIo& io);

// What a caller that made the logs itself (the sweep) adds to the run.
struct NcclRunExtras {
  std::string target = "nccl-tests logs";
  std::vector<Finding> findings;
  std::vector<EvidenceItem> evidence;
  bool faulty = false;                 // the exit code says 1 whatever the analysis found
  std::optional<WallTime> started_at;  // when the work began (a sweep's first step); none: now
};

// A finished piece of network work recorded as one run (command "nccl"): what `analyze`,
// `sweep`, `find-bad-node` and `recipe` keep. The record as stored, and the run's own exit code.
struct NcclRunParts {
  std::string target;
  WallTime started_at{};
  std::vector<EvidenceItem> evidence;
  std::vector<Finding> findings;
  std::vector<Metric> metrics;
};
struct NcclRecorded {
  RunRecord record;
  int exit_code = 0;
};
Result<NcclRecorded> RecordNcclRun(const NcclAnalyzeIo& io, const NcclRunParts& parts);

// The platform `options` names, checked (an error naming the known ones); none when it names
// none. `platforms` must outlive the pointer.
Result<const NcclPlatform*> FindNcclPlatform(const NcclAnalyzeOptions& options,
                                             const NcclPlatforms& platforms);

// The analysis of logs already read (options.files is not read), recorded as a run.
Result<NcclAnalyzeReport> AnalyzeNcclInputs(const std::vector<NcclInput>& inputs,
                                            const NcclAnalyzeOptions& options,
                                            const NcclAnalyzeIo& io,
                                            const NcclRunExtras& extras = {});

}  // namespace cmax::net
