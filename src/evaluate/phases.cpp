#include "evaluate/phases.hpp"

#include <fmt/format.h>

#include "core/strings.hpp"

namespace cmax::evaluate {

std::string_view PhaseStateName(PhaseState state) {
  switch (state) {
    case PhaseState::kRan: return "ran";
    case PhaseState::kFailed: return "failed";
    case PhaseState::kUntested: return "untested";
  }
  return "untested";
}

PhaseOutcome OutcomeOfRun(std::string kind, std::string name, const RunInfo& run) {
  PhaseOutcome out{.kind = std::move(kind), .name = std::move(name), .run_id = run.id};
  switch (run.state) {
    case RunState::kOk: out.state = PhaseState::kRan; break;
    case RunState::kChecksFailed:
      out.state = PhaseState::kFailed;
      out.reason = "a check failed";
      break;
    case RunState::kError:
      out.state = PhaseState::kUntested;
      out.reason = "its run ended in error: a check could not read what it judges";
      break;
    default:
      out.state = PhaseState::kUntested;
      out.reason = fmt::format("its run ended {}", RunStateName(run.state));
      break;
  }
  return out;
}

Finding PhaseFinding(const PhaseOutcome& phase) {
  Finding f;
  f.check_id = "evaluation." + phase.kind;
  f.expected = "the phase runs";
  const std::string run = phase.run_id ? fmt::format(" (run {})", phase.run_id) : "";
  switch (phase.state) {
    case PhaseState::kRan:
      f.status = CheckStatus::kPass;
      f.observed = fmt::format("{}: ran{}", phase.name, run);
      break;
    case PhaseState::kFailed:
      f.status = CheckStatus::kFail;
      f.severity = Severity::kHigh;
      f.observed = fmt::format("{}: failed{}", phase.name, run);
      f.message = SanitizeUtf8(fmt::format("{}: {}", phase.name, phase.reason));
      if (phase.run_id) f.remediation = fmt::format("cmax report {}", phase.run_id);
      break;
    case PhaseState::kUntested:
      f.status = CheckStatus::kSkip;
      f.observed = fmt::format("{}: UNTESTED", phase.name);
      f.message = SanitizeUtf8(fmt::format("UNTESTED: {}: {}", phase.name, phase.reason));
      break;
  }
  return f;
}

Folded FoldPhaseRun(const RunRecord& phase_run, const std::string& phase_name) {
  Folded out;
  for (const EvidenceItem& item : phase_run.evidence) {
    out.evidence.push_back({fmt::format("phase.{}.{}", phase_name, item.key), item.value_json});
  }
  for (Finding f : phase_run.findings) {
    // A report shows the message where there is one, else the observed text: both are named.
    f.observed = f.observed.empty() ? phase_name : fmt::format("{}: {}", phase_name, f.observed);
    if (!f.message.empty()) f.message = fmt::format("{}: {}", phase_name, f.message);
    out.findings.push_back(std::move(f));
  }
  for (Metric m : phase_run.metrics) {
    m.labels["phase"] = phase_name;
    out.metrics.push_back(std::move(m));
  }
  return out;
}

nlohmann::json PhasesJson(const std::vector<PhaseOutcome>& phases) {
  nlohmann::json out = nlohmann::json::array();
  for (const PhaseOutcome& p : phases) {
    out.push_back({{"kind", p.kind},
                   {"name", p.name},
                   {"state", PhaseStateName(p.state)},
                   {"reason", p.reason.empty() ? nlohmann::json(nullptr)
                                               : nlohmann::json(SanitizeUtf8(p.reason))},
                   {"run", p.run_id ? nlohmann::json(p.run_id) : nlohmann::json(nullptr)}});
  }
  return out;
}

}  // namespace cmax::evaluate
