#include "net/nccl_analyze_run.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"

namespace cmax::net {
namespace {

std::string Gbs(double v) {
  return fmt::format("{:.2f} GB/s", v);
}

std::string Labelled(const NcclCurve& curve) {
  return curve.Name() + " (" + curve.origin + ")";
}

std::map<std::string, std::string> Labels(const NcclCurve& curve) {
  return {{"collective", curve.collective.empty() ? "unknown" : curve.collective},
          {"nodes", curve.nodes > 0 ? std::to_string(curve.nodes) : "unknown"},
          {"ranks", std::to_string(curve.ranks)},
          {"origin", curve.origin}};
}

}  // namespace

Result<NcclPlatforms> LoadNcclPlatforms(const std::string& path, const sys::FileSystem& fs) {
  if (path.empty()) return NcclPlatforms::Builtin();
  auto text = fs.ReadFile(path, size_t{4} << 20);
  if (!text) return Fail(ErrorCode::kInvalidArgument, "{}: {}", path, text.error().message);
  auto parsed = NcclPlatforms::Parse(*text);
  if (!parsed) return Fail(ErrorCode::kInvalidArgument, "{}: {}", path, parsed.error().message);
  return parsed;
}

std::vector<Finding> NcclFindings(const NcclAnalysis& analysis) {
  std::vector<Finding> out;
  const std::string tolerance = fmt::format("{:.0f}%", 100 * analysis.tolerance);
  for (size_t c = 0; c < analysis.curves.size(); ++c) {
    const NcclCurve& curve = analysis.curves[c];
    bool faulty = false;
    for (const NcclDip& d : analysis.dips) {
      if (d.curve != c) continue;
      Finding f{.check_id = "network.nccl-dip"};
      f.observed = fmt::format("{}: {} at {}, {:.0f}% below {} at {}", Labelled(curve),
                               Gbs(d.at_gbs), SizeText(d.at_size_bytes), d.depth_pct,
                               Gbs(d.best_gbs), SizeText(d.best_size_bytes));
      f.expected = "busbw that grows with the message size, never more than " + tolerance +
                   " below a smaller size's";
      if (!d.switch_from.empty()) {
        f.observed += fmt::format("; NCCL switched {} -> {}", d.switch_from, d.switch_to);
      }
      switch (d.kind) {
        case NcclDipKind::kKink:
          f.status = CheckStatus::kPass;
          f.severity = Severity::kInfo;
          f.message = "a kink where NCCL switches algorithm or protocol, back within two sizes";
          break;
        case NcclDipKind::kDip:
          faulty = true;
          f.status = CheckStatus::kWarn;
          f.severity = Severity::kMedium;
          f.message = fmt::format("a dip from {} to {}: software, NCCL's settings or routing",
                                  SizeText(d.first_size_bytes), SizeText(d.last_size_bytes));
          f.remediation =
              "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING to see NCCL's choices there; "
              "check /etc/nccl.conf for forced NCCL_ALGO, NCCL_PROTO or channel counts";
          break;
        case NcclDipKind::kCliff:
          faulty = true;
          f.status = CheckStatus::kFail;
          f.severity = Severity::kHigh;
          f.message =
              fmt::format("busbw falls at {} and does not come back", SizeText(d.first_size_bytes));
          f.remediation =
              "Find the node or link that drags the group down (run the sweep on halves of the "
              "nodes); check NIC errors and NCCL's WARN lines";
          break;
      }
      out.push_back(std::move(f));
    }
    if (curve.WrongResults()) {
      out.push_back(
          {.check_id = "network.nccl-results",
           .status = CheckStatus::kFail,
           .severity = Severity::kHigh,
           .observed = fmt::format("{}: {:g} wrong value(s) at {} size(s){}", Labelled(curve),
                                   curve.wrong_values, curve.wrong_sizes,
                                   curve.out_of_bounds_failed ? ", out of bounds FAILED" : ""),
           .expected = "#wrong 0 at every size",
           .message = "the collective computed wrong results: its bandwidth figures are worthless",
           .remediation = "Find the node that corrupts data (a GPU's memory, a NIC, a switch "
                          "port): run on halves of the nodes; check Xid and NIC error counters"});
    }
    if (!faulty) {
      Finding f{.check_id = "network.nccl-curve", .status = CheckStatus::kPass};
      f.observed = fmt::format("{}: peak {} at {}", Labelled(curve),
                               Gbs(curve.peak_gbs.value_or(0)), SizeText(curve.peak_size_bytes));
      f.expected = "no dip deeper than " + tolerance;
      f.message = "no dip";
      if (curve.points.size() < 3) {
        f.status = CheckStatus::kUnknown;
        f.severity = Severity::kLow;
        f.message = "too few sizes to judge its shape";
      } else if (!curve.concluded) {
        f.status = CheckStatus::kUnknown;
        f.severity = Severity::kMedium;
        f.message = fmt::format(
            "no dip up to {}, where the run was cut short: the larger sizes were not measured",
            SizeText(curve.largest_size_bytes));
      }
      out.push_back(std::move(f));
    }
  }
  for (const NcclScalingDrop& s : analysis.scaling) {
    out.push_back({.check_id = "network.nccl-scaling",
                   .status = CheckStatus::kFail,
                   .severity = Severity::kHigh,
                   .observed = fmt::format("{}: {} -> {} nodes at {}: {} -> {}",
                                           s.collective.empty() ? "unknown" : s.collective,
                                           s.from_nodes, s.to_nodes, SizeText(s.size_bytes),
                                           Gbs(s.from_gbs), Gbs(s.to_gbs)),
                   .expected = "busbw that holds as nodes are added",
                   .message = fmt::format("{:.0f}% lower with {} nodes than with {}", s.drop_pct,
                                          s.to_nodes, s.from_nodes),
                   .remediation = "Compare the added nodes' links (pairwise runs); check the "
                                  "topology the scheduler places jobs by"});
  }
  for (const NcclAgainstPlatform& p : analysis.platform) {
    const NcclCurve& curve = analysis.curves[p.curve];
    Finding f{.check_id = "network.nccl-platform"};
    f.observed = fmt::format("{}: {} at {} ({:.0f}%)", Labelled(curve), Gbs(p.measured_gbs),
                             SizeText(p.measured_size_bytes), 100 * p.ratio);
    f.expected = fmt::format("{} or more on {} ({})", Gbs(p.expected_gbs), p.platform, p.basis);
    if (p.short_of) {
      f.status = CheckStatus::kFail;
      f.severity = Severity::kHigh;
      f.message = fmt::format("{:.0f}% short of what a healthy {} reaches", 100 * (1 - p.ratio),
                              p.platform);
      f.remediation =
          "Check for a downed NVLink or NIC, a stale NCCL_P2P_DISABLE or "
          "NCCL_IB_HCA, and NCCL's WARN lines";
    } else {
      f.status = CheckStatus::kPass;
      f.message = "as a healthy " + p.platform + " reaches";
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Metric> NcclMetrics(const NcclAnalysis& analysis) {
  std::vector<Metric> out;
  // What the rating scores: the deepest fall (a dip or cliff below a smaller size, a drop as
  // nodes are added; a switch-point kink is none), once some curve had a shape to judge; and
  // the smallest share of the platform's figure reached.
  const bool judged =
      std::ranges::any_of(analysis.curves, [](const NcclCurve& c) { return c.points.size() >= 3; });
  if (judged) {
    // Wrong results make every figure worthless: the deepest fall there is.
    double worst =
        std::ranges::any_of(analysis.curves, [](const NcclCurve& c) { return c.WrongResults(); })
            ? 100
            : 0;
    for (const NcclDip& d : analysis.dips) {
      if (d.kind != NcclDipKind::kKink) worst = std::max(worst, d.depth_pct);
    }
    for (const NcclScalingDrop& s : analysis.scaling) worst = std::max(worst, s.drop_pct);
    out.push_back({"nccl.worst_fall_pct", {}, worst, "%"});
  }
  if (!analysis.platform.empty()) {
    double least = analysis.platform.front().ratio;
    for (const NcclAgainstPlatform& p : analysis.platform) least = std::min(least, p.ratio);
    out.push_back({"nccl.share_of_platform",
                   {{"platform", analysis.platform.front().platform}},
                   least,
                   "ratio"});
  }
  for (const NcclCurve& curve : analysis.curves) {
    if (curve.peak_gbs) {
      std::map<std::string, std::string> labels = Labels(curve);
      labels["size_bytes"] = std::to_string(curve.peak_size_bytes);
      out.push_back({"nccl.busbw_peak", labels, *curve.peak_gbs, "GB/s"});
    }
    if (curve.largest_gbs) {
      std::map<std::string, std::string> labels = Labels(curve);
      labels["size_bytes"] = std::to_string(curve.largest_size_bytes);
      out.push_back({"nccl.busbw_largest", labels, *curve.largest_gbs, "GB/s"});
    }
  }
  return out;
}

Result<NcclRecorded> RecordNcclRun(const NcclAnalyzeIo& io, const NcclRunParts& parts) {
  auto recorded =
      store::RecordWholeRun(io.db_path,
                            {.command = "nccl",
                             .target = parts.target,
                             .host = sys::Hostname(),
                             .started_at = parts.started_at,
                             .cmax_version = io.cmax_version,
                             .provider = io.provider},
                            parts.evidence, parts.findings, parts.metrics, io.clock->Now());
  if (!recorded) return tl::unexpected(recorded.error());
  return NcclRecorded{.record = std::move(recorded->record), .exit_code = recorded->exit_code};
}

Result<const NcclPlatform*> FindNcclPlatform(const NcclAnalyzeOptions& options,
                                             const NcclPlatforms& platforms) {
  if (options.platform.empty()) return nullptr;
  const NcclPlatform* platform = platforms.Find(options.platform);
  if (platform == nullptr) {
    return Fail(ErrorCode::kInvalidArgument, "no platform '{}' (known: {})",
                SanitizeUtf8(options.platform), platforms.Names());
  }
  return platform;
}

Result<NcclAnalyzeReport> AnalyzeNcclFiles(const NcclAnalyzeOptions& options,
                                           const NcclAnalyzeIo& io) {
  if (options.files.empty()) return Fail(ErrorCode::kInvalidArgument, "no file given");
  if (const std::string twice = sys::FirstRepeatedFile(options.files); !twice.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "{} is given twice: its curves would count twice",
                AsOneLine(twice));
  }
  const WallTime started = io.clock->Now();
  auto loaded = LoadNcclPlatforms(options.platforms_file, *io.fs);
  if (!loaded) return tl::unexpected(loaded.error());
  if (auto platform = FindNcclPlatform(options, *loaded); !platform) {
    return tl::unexpected(platform.error());
  }
  const auto interrupted = [&io] { return io.interrupted && io.interrupted(); };
  std::vector<NcclInput> inputs;
  for (const std::string& file : options.files) {
    if (interrupted()) return sys::StoppedNothingRecorded();
    if (file == "-") {
      inputs.push_back({.name = "stdin", .output = ParseNcclTestsOutput(io.stdin_text)});
      continue;
    }
    auto text = sys::ReadInputFile(*io.fs, file, kMaxNcclLogBytes, interrupted);
    if (!text) return tl::unexpected(text.error());
    inputs.push_back({.name = AsOneLine(file), .output = ParseNcclTestsOutput(*text)});
  }
  if (interrupted()) return sys::StoppedNothingRecorded();
  NcclRunExtras extras;
  extras.started_at = started;
  extras.evidence.push_back(
      {"nccl.files", nlohmann::json(options.files)
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  return AnalyzeNcclInputs(inputs, options, io, extras);
}

Result<NcclAnalyzeReport> AnalyzeNcclInputs(const std::vector<NcclInput>& inputs,
                                            const NcclAnalyzeOptions& options,
                                            const NcclAnalyzeIo& io, const NcclRunExtras& extras) {
  auto loaded = LoadNcclPlatforms(options.platforms_file, *io.fs);
  if (!loaded) return tl::unexpected(loaded.error());
  auto platform = FindNcclPlatform(options, *loaded);
  if (!platform) return tl::unexpected(platform.error());
  const NcclAnalysisOptions analysis_options{.tolerance = options.tolerance_pct / 100,
                                             .floor_share = options.floor_pct / 100,
                                             .platform = *platform};
  NcclAnalyzeReport report;
  report.analysis = AnalyzeNccl(inputs, analysis_options);
  // Everything the run keeps is made before it opens: file names and log text are any bytes,
  // and JSON that cannot be written must not leave a run unfinished.
  const auto text = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::vector<EvidenceItem> evidence = {{"nccl.analysis", text(NcclAnalysisJson(report.analysis))}};
  evidence.insert(evidence.end(), extras.evidence.begin(), extras.evidence.end());
  if (*platform != nullptr) {
    evidence.push_back({"nccl.platform", text(nlohmann::json((*platform)->name))});
  }
  std::vector<Finding> findings = NcclFindings(report.analysis);
  if (report.analysis.curves.empty()) {
    findings.push_back({.check_id = "network.nccl-curve",
                        .status = CheckStatus::kUnknown,
                        .severity = Severity::kMedium,
                        .message = "no nccl-tests table with a row in the files given"});
  }
  findings.insert(findings.end(), extras.findings.begin(), extras.findings.end());

  auto recorded = RecordNcclRun(io, {.target = extras.target,
                                     .started_at = extras.started_at.value_or(io.clock->Now()),
                                     .evidence = std::move(evidence),
                                     .findings = std::move(findings),
                                     .metrics = NcclMetrics(report.analysis)});
  if (!recorded) return tl::unexpected(recorded.error());
  report.record = std::move(recorded->record);
  // A dip is a WARN, so the run's own outcome says 0 for it: the command says 1 for any fault.
  report.exit_code = recorded->exit_code;
  if (report.exit_code == 0 && (report.analysis.Faulty() || extras.faulty)) report.exit_code = 1;
  if (options.exit_zero) report.exit_code = 0;  // errors come back as errors, not here
  return report;
}

}  // namespace cmax::net
