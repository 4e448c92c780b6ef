// The phases of an evaluation as values (pure): what each one came to, the finding it leaves in
// the evaluation's run, and how a phase's own run is folded into that run. Every phase an
// evaluation knows is accounted for: one that could not run is UNTESTED with its reason (a SKIP
// finding whose observed text starts "UNTESTED"), never a pass and never silently missing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/run_record.hpp"

namespace cmax::evaluate {

enum class PhaseState {
  kRan,       // it ran and its findings hold no FAIL
  kFailed,    // it ran and something failed (a FAIL finding, an error part-way)
  kUntested,  // it could not run here, or was not asked for: the reason says which
};
std::string_view PhaseStateName(PhaseState state);  // "ran", "failed", "untested"

struct PhaseOutcome {
  std::string kind;  // host, health, endpoint, reliability, network, training
  std::string name;  // the plan's name for it; the kind for the phases that are one per run
  PhaseState state = PhaseState::kUntested;
  std::string reason;  // why it is untested or failed; empty when it ran
  int64_t run_id = 0;  // the run it recorded on its own (its full detail); 0: none
};

// How a phase's own run ended, as a phase: ok -> ran; checks failed -> failed; anything else
// (a check that could not read its input, interrupted, abandoned) -> untested, and why: no
// answer is never a pass.
PhaseOutcome OutcomeOfRun(std::string kind, std::string name, const RunInfo& run);

// `evaluation.<kind>`: PASS (ran), FAIL (failed), SKIP with "UNTESTED: <name>: <reason>"
// (untested).
Finding PhaseFinding(const PhaseOutcome& phase);

// What the evaluation's run takes from a phase's run: its findings (observed text and message
// prefixed with the phase's name, as several endpoints share check ids), its metrics (labelled
// phase=<name>) and its evidence (under `phase.<name>.<key>`, so that two phases' keys cannot
// collide).
struct Folded {
  std::vector<EvidenceItem> evidence;
  std::vector<Finding> findings;
  std::vector<Metric> metrics;
};
Folded FoldPhaseRun(const RunRecord& phase_run, const std::string& phase_name);

// The `evaluation.phases` evidence: every phase in order, its state, reason and run.
nlohmann::json PhasesJson(const std::vector<PhaseOutcome>& phases);

}  // namespace cmax::evaluate
