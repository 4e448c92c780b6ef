// A training run on its HTML page: the steady-state throughput chart (tokens/s per GPU by
// step, one line per log, the warm-up steps hollow and the steady median dashed) from the run's
// `train.analysis` evidence (cmax.train-logs/v1), and the compute/communication breakdown (per
// rank, the share of its span in compute, exposed communication and idle) from `train.trace`
// (cmax.train-trace/v1); a phase's copies (`phase.NAME.train...`) in an evaluation too. Read
// defensively: report/ needs nothing of train/, and a value of the wrong shape is skipped.
#pragma once

#include <string>

#include "core/run_record.hpp"

namespace cmax::report {

// The section, or "" when the run holds neither. Charts: svg#chart-train-throughput-N and
// svg#chart-train-breakdown-N, N counting the evidence items from 1.
std::string RenderTrainHtml(const RunRecord& record);

}  // namespace cmax::report
