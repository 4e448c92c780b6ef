// `cmax train log`: TorchTitan logs a user already has, read (torchtitan_log.hpp), their figures
// found (train_figures.hpp) and recorded as a run (command "train"): per log a throughput, loss
// and failure finding, the figures as metrics (train.tokens_per_s_per_gpu, train.mfu_pct ...),
// the whole analysis as evidence.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "train/train_figures.hpp"
#include "train/train_references.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::train {

// The most one log may hold: every rank's lines of a long job.
inline constexpr size_t kMaxTrainLogBytes = size_t{1} << 30;

struct TrainLogOptions {
  std::vector<std::string> files;  // "-": standard input, read by the caller into `stdin_text`
  TrainFiguresOptions figures;
  std::string reference;  // a published figure's id (train_references.hpp); "": none
  bool exit_zero = false;
};

struct TrainLogIo {
  std::string db_path;
  std::string cmax_version;
  std::string provider;  // recorded with the run; empty: CMAX_PROVIDER's
  const sys::FileSystem* fs = nullptr;
  const Clock* clock = nullptr;
  std::string stdin_text;  // what "-" reads
  // Ctrl-C or SIGTERM: looked at between files and before the run is recorded; when it says
  // so, nothing is recorded and the call fails with kInterrupted.
  std::function<bool()> interrupted;
};

struct TrainLogFile {
  std::string name;
  TrainLog log;
  TrainFigures figures;
  std::optional<ReferenceShare> reference;  // the steady throughput against the reference
};

struct TrainLogReport {
  std::vector<TrainLogFile> files;
  RunRecord record;
  int exit_code = 0;  // 0 steady, 1 a failure, NaN or diverged loss, 3 no figures at all
};

// The findings and metrics a run keeps of one log's figures, labelled with its name. Pure.
std::vector<Finding> TrainFindings(const std::string& name, const TrainFigures& figures);
std::vector<Metric> TrainMetrics(const std::string& name, const TrainFigures& figures);

// A missing or unreadable file is an error before any run is recorded; then the run.
Result<TrainLogReport> AnalyzeTrainLogFiles(const TrainLogOptions& options, const TrainLogIo& io);

// What a caller that ran the training itself adds to the run.
struct TrainRunExtras {
  std::string target = "TorchTitan logs";
  std::vector<Finding> findings;
  std::vector<EvidenceItem> evidence;
  std::optional<WallTime> started_at;         // none: now
  const TrainReference* reference = nullptr;  // each log's steady throughput held against it
  bool exit_zero = false;
};

// The built-in reference of that id; kInvalidArgument naming where to look when there is none.
Result<const TrainReference*> FindReference(const std::string& id);
// Logs already read, recorded as one run (command "train"): their findings and metrics, the
// extras', and the analysis as evidence.
Result<TrainLogReport> RecordTrainLogs(std::vector<TrainLogFile> files, const TrainLogIo& io,
                                       const TrainRunExtras& extras);

// cmax.train-logs/v1: every file's figures (TrainFiguresJson), and the run's id.
nlohmann::json TrainLogReportJson(const TrainLogReport& report);
std::string TrainLogReportText(const TrainLogReport& report);

}  // namespace cmax::train
