// `cmax train trace`: a job's profiler traces, one per rank (plain or gzip), read as streams in
// parallel (a worker per core; each trace reduced to its rank's figures as soon as it is read,
// so that memory holds one trace's intervals per worker, not the job's), combined into the
// job's figures (trace_analysis.hpp) and recorded as a run (command "train"): a finding for
// what limits the job, one per trace that could not be read, the figures as metrics
// (train.exposed_comm_pct ...), the analysis as evidence.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"
#include "train/trace_analysis.hpp"
#include "train/train_log_run.hpp"

namespace cmax::train {

struct TraceRunOptions {
  std::vector<std::string> files;
  int jobs = 0;  // workers; 0: one per core
  TraceReportOptions report;
  bool exit_zero = false;
};

struct TraceFileProblem {
  std::string file;
  std::string reason;
};

struct TraceRunReport {
  TraceFigures figures;
  std::vector<TraceFileProblem> unreadable;  // files that are not traces, left out
  RunRecord record;
  int exit_code = 0;  // 0 nothing limits the job, 1 something does or a trace was unreadable
};

// The findings and metrics a run keeps of the job's figures. Pure.
std::vector<Finding> TraceFindings(const TraceFigures& figures,
                                   const std::vector<TraceFileProblem>& unreadable);
std::vector<Metric> TraceMetrics(const TraceFigures& figures);

// Reads and analyses the traces. A missing file is an error before anything is read; a file
// that is not a trace is left out with its reason, unless none is left.
// `interrupted` (Ctrl-C) stops it with kInterrupted at the next buffer read, inside a file too.
Result<TraceFigures> ReadAndAnalyzeTraces(const TraceRunOptions& options,
                                          std::vector<TraceFileProblem>* unreadable,
                                          const std::function<bool()>& interrupted = {});

// ReadAndAnalyzeTraces, then recorded (io.fs and io.stdin_text unused).
Result<TraceRunReport> AnalyzeTraceFiles(const TraceRunOptions& options, const TrainLogIo& io);

// cmax.train-trace/v1 with the run's id and the unreadable files.
nlohmann::json TraceRunReportJson(const TraceRunReport& report);
std::string TraceRunReportText(const TraceRunReport& report);

}  // namespace cmax::train
