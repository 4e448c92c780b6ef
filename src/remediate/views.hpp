// What `cmax remediate status` and `history` show, read from the controller's journal: a table
// for people or JSON for programs (schemas cmax.remediation/v1, cmax.remediation-history/v1).
// Everything from outside (reasons, notes, node names) is sanitised for a terminal.
#pragma once

#include <string>

#include "core/result.hpp"
#include "remediate/controller.hpp"
#include "remediate/journal.hpp"

namespace cmax::remediate {

// Every node's state, reason, since when and next step; the breaker; the rack holds.
Result<std::string> StatusView(Journal& journal, const std::string& store_path,
                               double probation_min, bool json);
// One node's timeline: transitions and the actions they planned, oldest first.
Result<std::string> HistoryView(Journal& journal, const std::string& node, int limit, bool json);
// One pass of the controller (`cmax remediate run --once`): its counts, and the breaker when
// the pass tripped it.
std::string PassView(const StepSummary& pass);
// Whether the pass went wrong: an action failed or was refused, or the breaker tripped.
bool PassWentWrong(const StepSummary& pass);
// What a person's word about a node came to: "gpu1: REPAIR -> REINTRODUCED; 1 action(s) planned
// for the controller", or, when it changes nothing in the node's state, "gpu1 is HEALTHY;
// nothing to do (why)". The node's name sanitised.
std::string OperatorOutcomeView(std::string_view node, const OperatorOutcome& outcome);
// What comes next for a node in this state.
std::string NextStep(const NodeEntry& entry, double probation_min);

}  // namespace cmax::remediate
