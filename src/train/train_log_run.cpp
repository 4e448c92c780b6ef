#include "train/train_log_run.hpp"

#include <cmath>
#include <fmt/format.h>

#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"

namespace cmax::train {

std::vector<Finding> TrainFindings(const std::string& name, const TrainFigures& f) {
  std::vector<Finding> out;
  const std::string label = SanitizeUtf8(name);
  Finding throughput{.check_id = "train.throughput", .observed = f.verdict};
  switch (f.state) {
    case TrainState::kSteady:
    case TrainState::kFailed:
      if (f.tokens_per_s_per_gpu) {
        throughput.status = CheckStatus::kPass;
        throughput.severity = Severity::kInfo;
        throughput.message = fmt::format("{}: steady-state throughput measured", label);
        break;
      }
      [[fallthrough]];
    case TrainState::kWarmUpOnly:
      throughput.status = CheckStatus::kWarn;
      throughput.severity = Severity::kMedium;
      throughput.expected = "steps past warm-up";
      throughput.message = fmt::format("{}: the run never reached steady state", label);
      throughput.remediation =
          "Give the run more steps or time (TorchTitan logs every metrics.log_freq steps; the "
          "first logged step carries compilation and NCCL's set-up)";
      break;
    case TrainState::kNoSteps:
      throughput.status = CheckStatus::kUnknown;
      throughput.severity = Severity::kMedium;
      throughput.expected = "TorchTitan's metric lines (step: N  loss: ...  tps: ...)";
      throughput.message = fmt::format("{}: no TorchTitan metric line", label);
      break;
  }
  out.push_back(std::move(throughput));

  if (f.steps_logged > 0) {
    Finding loss{.check_id = "train.loss",
                 .observed = fmt::format("{} ({})", LossTrendName(f.loss_trend), f.loss_detail),
                 .expected = "a loss that falls or holds"};
    switch (f.loss_trend) {
      case LossTrend::kNotANumber:
      case LossTrend::kDiverged:
        loss.status = CheckStatus::kFail;
        loss.severity = Severity::kHigh;
        loss.message = fmt::format(
            "{}: the loss {}", label,
            f.loss_trend == LossTrend::kNotANumber ? "became NaN or infinite" : "diverged");
        loss.remediation =
            "Check the learning rate and warm-up, the data, and silent data corruption on the "
            "GPUs (cmax health; a DCGM diagnostic on the nodes)";
        break;
      case LossTrend::kUnknown:
        loss.status = CheckStatus::kSkip;
        loss.message = fmt::format("{}: too few steps for a loss trend", label);
        break;
      default:
        loss.status = CheckStatus::kPass;
        loss.message = fmt::format("{}: loss {}", label, LossTrendName(f.loss_trend));
        break;
    }
    out.push_back(std::move(loss));
  }
  if (f.first_error) {
    const TrainFailure& e = *f.first_error;
    Finding failure{.check_id = "train.failure",
                    .status = CheckStatus::kFail,
                    .severity = Severity::kHigh,
                    .observed = f.verdict,
                    .expected = "a run that ends on its own"};
    failure.message = fmt::format("{}: {} on {}", label, FailureKindName(e.kind),
                                  e.rank ? fmt::format("rank {}", *e.rank) : "an unknown rank");
    switch (e.kind) {
      case FailureKind::kOutOfMemory:
        failure.remediation =
            "Lower the batch or sequence size, enable activation checkpointing, or shard more "
            "(FSDP); a rank alone out of memory can be a GPU whose memory is taken by another "
            "process (cmax health)";
        break;
      case FailureKind::kNcclTimeout:
      case FailureKind::kNccl:
        failure.remediation =
            "A collective hung or failed: find the node or link (cmax nccl find-bad-node on the "
            "job's nodes) and read NCCL's WARN lines (NCCL_DEBUG=WARN)";
        break;
      case FailureKind::kCuda:
        failure.remediation =
            "A CUDA error on a rank: read the node's Xids (cmax health --passive) and drain it "
            "if the catalogue says so";
        break;
      default:
        failure.remediation =
            "Read the rank's traceback in the log (line " + std::to_string(e.line) + ")";
        break;
    }
    out.push_back(std::move(failure));
  }
  return out;
}

std::vector<Metric> TrainMetrics(const std::string& name, const TrainFigures& f) {
  std::vector<Metric> out;
  const std::map<std::string, std::string> labels = {{"log", SanitizeUtf8(name)}};
  const auto add = [&](const char* metric, const std::optional<double>& v, const char* unit) {
    // Finite only: SQLite stores NaN as NULL, which the store refuses (the run was lost).
    if (v && std::isfinite(*v)) {
      out.push_back({.name = metric, .labels = labels, .value = *v, .unit = unit});
    }
  };
  add("train.tokens_per_s_per_gpu", f.tokens_per_s_per_gpu, "tokens/s");
  add("train.tflops_per_gpu", f.tflops_per_gpu, "TFLOPS");
  add("train.mfu_pct", f.mfu_pct, "%");
  add("train.peak_memory_gib", f.peak_memory_gib, "GiB");
  add("train.step_time_s", f.step_time_s, "s");
  add("train.jitter_pct", f.jitter_pct, "%");
  return out;
}

Result<const TrainReference*> FindReference(const std::string& id) {
  const TrainReference* found = TrainReferences::Builtin().Find(id);
  if (found == nullptr) {
    return Fail(ErrorCode::kInvalidArgument,
                "no reference \"{}\" (cmax train references lists them)", SanitizeUtf8(id));
  }
  return found;
}

Result<TrainLogReport> AnalyzeTrainLogFiles(const TrainLogOptions& options, const TrainLogIo& io) {
  if (options.files.empty()) return Fail(ErrorCode::kInvalidArgument, "no file given");
  if (const std::string twice = sys::FirstRepeatedFile(options.files); !twice.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "{} is given twice", AsOneLine(twice));
  }
  const TrainReference* reference = nullptr;
  if (!options.reference.empty()) {
    auto found = FindReference(options.reference);
    if (!found) return tl::unexpected(found.error());
    reference = *found;
  }
  const WallTime started = io.clock->Now();
  const auto interrupted = [&io] { return io.interrupted && io.interrupted(); };
  TrainLogReport report;
  for (const std::string& file : options.files) {
    if (interrupted()) return sys::StoppedNothingRecorded();
    TrainLogFile one{.name = file == "-" ? "stdin" : AsOneLine(file)};
    if (file == "-") {
      one.log = ParseTorchTitanLog(io.stdin_text);
    } else {
      auto text = sys::ReadInputFile(*io.fs, file, kMaxTrainLogBytes, interrupted);
      if (!text) return tl::unexpected(text.error());
      one.log = ParseTorchTitanLog(*text);
    }
    one.figures = AnalyzeTrainLog(one.log, options.figures);
    report.files.push_back(std::move(one));
  }
  if (interrupted()) return sys::StoppedNothingRecorded();
  return RecordTrainLogs(
      std::move(report.files), io,
      {.started_at = started, .reference = reference, .exit_zero = options.exit_zero});
}

Result<TrainLogReport> RecordTrainLogs(std::vector<TrainLogFile> files, const TrainLogIo& io,
                                       const TrainRunExtras& extras) {
  // Read before the end, which is read below: arguments are evaluated in any order.
  const WallTime started = extras.started_at.value_or(io.clock->Now());
  TrainLogReport report;
  report.files = std::move(files);
  std::vector<Finding> findings;
  std::vector<Metric> metrics;
  std::vector<EvidenceItem> evidence = extras.evidence;
  for (TrainLogFile& one : report.files) {
    for (Finding& f : TrainFindings(one.name, one.figures)) findings.push_back(std::move(f));
    for (Metric& m : TrainMetrics(one.name, one.figures)) metrics.push_back(std::move(m));
    if (extras.reference == nullptr || !one.figures.tokens_per_s_per_gpu) continue;
    one.reference = ReferenceShare{
        .reference = extras.reference,
        .measured = *one.figures.tokens_per_s_per_gpu,
        .share = *one.figures.tokens_per_s_per_gpu / extras.reference->tokens_per_s_per_gpu};
    findings.push_back(ReferenceFinding(SanitizeUtf8(one.name), *one.reference));
    metrics.push_back(
        {.name = "train.share_of_reference",
         .labels = {{"log", SanitizeUtf8(one.name)}, {"reference", extras.reference->id}},
         .value = one.reference->share,
         .unit = "ratio"});
  }
  findings.insert(findings.end(), extras.findings.begin(), extras.findings.end());
  evidence.push_back(
      {"train.analysis",
       TrainLogReportJson(report).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  auto recorded = store::RecordWholeRun(io.db_path,
                                        {.command = "train",
                                         .target = extras.target,
                                         .host = sys::Hostname(),
                                         .started_at = started,
                                         .cmax_version = io.cmax_version,
                                         .provider = io.provider},
                                        evidence, findings, metrics, io.clock->Now());
  if (!recorded) return tl::unexpected(recorded.error());
  report.record = std::move(recorded->record);
  report.exit_code = recorded->exit_code;
  // A run that never got past warm-up is a WARN, which the run's outcome calls 0: the command
  // says 1, as it does for a failure.
  const bool warm_only = std::ranges::any_of(report.files, [](const TrainLogFile& one) {
    return one.figures.state == TrainState::kWarmUpOnly;
  });
  if (report.exit_code == 0 && warm_only) report.exit_code = 1;
  if (extras.exit_zero) report.exit_code = 0;
  return report;
}

nlohmann::json TrainLogReportJson(const TrainLogReport& report) {
  nlohmann::json files = nlohmann::json::array();
  for (const TrainLogFile& one : report.files) {
    nlohmann::json j = TrainFiguresJson(one.figures, one.log);
    j["file"] = one.name;
    j["reference"] = nullptr;
    if (one.reference) {
      const TrainReference& r = *one.reference->reference;
      j["reference"] = {{"id", r.id},
                        {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                        {"share", one.reference->share},
                        {"words", r.Words()},
                        {"source", r.source}};
    }
    files.push_back(std::move(j));
  }
  return {{"schema", "cmax.train-logs/v1"},
          {"run_id", report.record.run.id == 0 ? nlohmann::json(nullptr)
                                               : nlohmann::json(report.record.run.id)},
          {"files", files}};
}

std::string TrainLogReportText(const TrainLogReport& report) {
  std::string out;
  for (const TrainLogFile& one : report.files) {
    out += SanitizeUtf8(one.name) + "\n";
    out += TrainFiguresText(one.figures, one.log);
    if (one.reference) {
      out += fmt::format("  against the reference: {:.0f}% of {}\n    {}\n",
                         100 * one.reference->share, one.reference->reference->Words(),
                         one.reference->reference->source);
    }
  }
  return out;
}

}  // namespace cmax::train
