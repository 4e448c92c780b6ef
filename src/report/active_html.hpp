// The fleet's active checks as a table, one row a node, from the `active.fleet` evidence that
// `cmax health schedule` records (a phase's copy, `phase.NAME.active.fleet`, in an evaluation):
// the node's Slurm state, its latest check (when, how old, overdue or not, the run), what that
// check found, and what the schedule decided. Nodes whose latest check failed come first, then
// the overdue and never-checked ones; the rest fold away, as passed findings do. Read
// defensively: report/ needs nothing of active/, a row of the wrong shape is skipped.
#pragma once

#include <string>

#include "core/run_record.hpp"

namespace cmax::report {

// The HTML section (table#active-fleet-N, N counting the evidence items from 1), or "" when the
// run holds no fleet view.
std::string RenderActiveFleetHtml(const RunRecord& record);

// The same table in Markdown, or "".
std::string RenderActiveFleetMarkdown(const RunRecord& record);

}  // namespace cmax::report
