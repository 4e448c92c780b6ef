#include "train/trace_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fmt/format.h>
#include <optional>
#include <thread>
#include <utility>

#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "sys/file_system.hpp"
#include "sys/gzip_file.hpp"
#include "sys/host.hpp"

namespace cmax::train {

std::vector<Finding> TraceFindings(const TraceFigures& f,
                                   const std::vector<TraceFileProblem>& unreadable) {
  std::vector<Finding> out;
  Finding limit{.check_id = "train.trace.limit",
                .observed = f.verdict,
                .expected = "compute-bound: communication hidden behind compute, the GPU busy"};
  const bool compute_bound = f.verdict.starts_with("compute-bound");
  if (f.ranks.empty() || f.verdict.starts_with("no ")) {
    limit.status = CheckStatus::kUnknown;
    limit.severity = Severity::kMedium;
    limit.message = "no GPU events to analyse";
  } else if (compute_bound) {
    limit.status = CheckStatus::kPass;
    limit.message = fmt::format("{} rank{} analysed: compute-bound", f.ranks.size(),
                                f.ranks.size() == 1 ? "" : "s");
  } else {
    limit.status = CheckStatus::kWarn;
    limit.severity = Severity::kMedium;
    limit.message = f.verdict;
    limit.remediation =
        "Exposed communication: check the network (cmax nccl sweep on the nodes, the NCCL "
        "recipe), the parallelism (overlap of FSDP's all-gathers, expert-parallel all-to-all "
        "across nodes); idle GPUs: the input pipeline and host-side synchronisation; a "
        "straggler: that rank's node (cmax health, its GPU clocks and PCIe links)";
  }
  out.push_back(std::move(limit));
  for (const TraceFileProblem& p : unreadable) {
    out.push_back({.check_id = "train.trace.unreadable",
                   .status = CheckStatus::kWarn,
                   .severity = Severity::kLow,
                   .observed = p.reason,
                   .expected = "a PyTorch profiler trace (Kineto JSON, plain or gzip)",
                   .message = fmt::format("{}: left out", SanitizeUtf8(p.file))});
  }
  return out;
}

std::vector<Metric> TraceMetrics(const TraceFigures& f) {
  std::vector<Metric> out;
  if (f.ranks.empty() || f.verdict.starts_with("no ")) return out;
  out.push_back({.name = "train.compute_pct", .value = f.compute_pct, .unit = "%"});
  out.push_back(
      {.name = "train.exposed_comm_pct", .value = f.exposed_communication_pct, .unit = "%"});
  out.push_back({.name = "train.idle_pct", .value = f.idle_pct, .unit = "%"});
  if (f.overlap_pct) {
    out.push_back({.name = "train.comm_overlap_pct", .value = *f.overlap_pct, .unit = "%"});
  }
  for (const CollectiveFigures& c : f.collectives) {
    if (!c.busbw_gbs) continue;
    out.push_back({.name = "train.collective_busbw_gbs",
                   .labels = {{"collective", std::string(CollectiveKindName(c.kind))}},
                   .value = *c.busbw_gbs,
                   .unit = "GB/s"});
  }
  return out;
}

Result<TraceFigures> ReadAndAnalyzeTraces(const TraceRunOptions& options,
                                          std::vector<TraceFileProblem>* unreadable,
                                          const std::function<bool()>& interrupted) {
  const auto stop = [&interrupted] { return interrupted && interrupted(); };
  if (options.files.empty()) return Fail(ErrorCode::kInvalidArgument, "no trace given");
  // Each file is a rank: one given twice would be two ranks and double every collective.
  if (const std::string twice = sys::FirstRepeatedFile(options.files); !twice.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "{} is given twice: each trace is one rank's",
                AsOneLine(twice));
  }
  for (const std::string& file : options.files) {
    if (::access(file.c_str(), R_OK) != 0) {
      return Fail(ErrorCode::kNotFound, "{}: no such file (or not readable)", AsOneLine(file));
    }
  }
  const size_t n = options.files.size();
  std::vector<std::optional<RankAnalysis>> analysed(n);
  std::vector<std::string> problems(n);
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < n && !stop(); i = next++) {
      const std::string& file = options.files[i];
      auto source = sys::OpenMaybeGzipFile(file);
      if (!source) {
        problems[i] = source.error().message;
        continue;
      }
      StoppableByteSource stoppable(**source, stop);
      auto trace = ReadKinetoTrace(stoppable);
      if (!trace) {
        problems[i] = trace.error().message;
        continue;
      }
      analysed[i] = AnalyzeRank(AsOneLine(file), *trace, options.report.rank);
    }
  };
  const unsigned cores = sys::UsableCores();  // `taskset -c 0`: one worker
  const size_t workers = std::min<size_t>(
      n, options.jobs > 0 ? static_cast<size_t>(options.jobs) : static_cast<size_t>(cores));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (stop()) return sys::StoppedNothingRecorded();

  std::vector<RankAnalysis> ranks;
  for (size_t i = 0; i < n; ++i) {
    if (analysed[i]) {
      ranks.push_back(std::move(*analysed[i]));
    } else if (unreadable != nullptr) {
      unreadable->push_back({AsOneLine(options.files[i]), problems[i]});
    }
  }
  if (ranks.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "no readable trace: {}: {}",
                AsOneLine(options.files.front()), problems.front());
  }
  return CombineRanks(std::move(ranks), options.report);
}

Result<TraceRunReport> AnalyzeTraceFiles(const TraceRunOptions& options, const TrainLogIo& io) {
  const WallTime started = io.clock->Now();
  TraceRunReport report;
  auto figures = ReadAndAnalyzeTraces(options, &report.unreadable, io.interrupted);
  if (!figures) return tl::unexpected(figures.error());
  report.figures = std::move(*figures);
  const std::vector<Finding> findings = TraceFindings(report.figures, report.unreadable);
  const std::vector<Metric> metrics = TraceMetrics(report.figures);
  const std::vector<EvidenceItem> evidence = {
      {"train.trace", TraceFiguresJson(report.figures)
                          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)}};
  auto recorded = store::RecordWholeRun(io.db_path,
                                        {.command = "train",
                                         .target = "profiler traces",
                                         .host = sys::Hostname(),
                                         .started_at = started,
                                         .cmax_version = io.cmax_version,
                                         .provider = io.provider},
                                        evidence, findings, metrics, io.clock->Now());
  if (!recorded) return tl::unexpected(recorded.error());
  report.record = std::move(recorded->record);
  // A limit is a WARN, which a run's outcome calls 0: the command says 1, so that a script
  // running it on every job can tell.
  const bool limited = std::ranges::any_of(
      findings, [](const Finding& f) { return f.status == CheckStatus::kWarn; });
  report.exit_code = recorded->exit_code != 0 ? recorded->exit_code : (limited ? 1 : 0);
  if (options.exit_zero) report.exit_code = 0;
  return report;
}

nlohmann::json TraceRunReportJson(const TraceRunReport& report) {
  nlohmann::json j = TraceFiguresJson(report.figures);
  j["run_id"] =
      report.record.run.id == 0 ? nlohmann::json(nullptr) : nlohmann::json(report.record.run.id);
  nlohmann::json unreadable = nlohmann::json::array();
  for (const TraceFileProblem& p : report.unreadable) {
    unreadable.push_back({{"file", SanitizeUtf8(p.file)}, {"reason", p.reason}});
  }
  j["unreadable"] = unreadable;
  return j;
}

std::string TraceRunReportText(const TraceRunReport& report) {
  std::string out = TraceFiguresText(report.figures);
  for (const TraceFileProblem& p : report.unreadable) {
    out += fmt::format("left out: {}: {}\n", SanitizeUtf8(p.file), p.reason);
  }
  return out;
}

}  // namespace cmax::train
