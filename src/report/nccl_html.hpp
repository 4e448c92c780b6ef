// The NCCL curves of a run on its HTML page: per collective, bus bandwidth against message
// size (log scale), one line per node count, dips and cliffs marked red and NCCL's switch-point
// kinks grey. Read back from the run's `nccl.analysis` evidence (cmax.nccl-analysis/v1),
// defensively: report/ needs nothing of net/, and a value of the wrong shape is skipped.
#pragma once

#include <string>

#include "core/run_record.hpp"

namespace cmax::report {

// The section, or "" when the run holds no analysed curve. Charts: svg#chart-nccl-COLLECTIVE.
std::string RenderNcclHtml(const RunRecord& record);

}  // namespace cmax::report
