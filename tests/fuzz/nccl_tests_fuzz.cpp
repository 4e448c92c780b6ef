// libFuzzer target for nccl-tests' output, which comes from any version, launcher or crash:
// the parser may not crash or hang, its figures are finite where present and come from its
// rows, and its JSON can always be written; the curves' analysis likewise.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/nccl_analysis.hpp"
#include "net/nccl_platforms.hpp"
#include "net/nccl_tests_output.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const cmax::net::NcclTestsOutput out = cmax::net::ParseNcclTestsOutput(input);
  for (const auto& table : out.tables) {
    if (table.peak_busbw_gbs && table.rows.empty()) std::abort();
    if (table.largest_size_busbw_gbs && !table.peak_busbw_gbs) std::abort();
    if (table.peak_busbw_gbs && table.largest_size_busbw_gbs &&
        *table.largest_size_busbw_gbs > *table.peak_busbw_gbs) {
      std::abort();
    }
  }
  (void)cmax::net::NcclTestsOutputJson(out).dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
  // The analysis of what was read: its dips lie on its curves and are falls, its text and JSON
  // can always be written. The same bytes as a platforms file may be refused, never crash.
  const cmax::net::NcclAnalysis analysis = cmax::net::AnalyzeNccl(
      {{.name = "fuzz", .output = out}},
      {.platform = cmax::net::NcclPlatforms::Builtin().Find("ib-ndr-400g-8rail")});
  for (const auto& dip : analysis.dips) {
    if (dip.curve >= analysis.curves.size() || !(dip.at_gbs < dip.best_gbs) ||
        !(dip.depth_pct > 0 && dip.depth_pct <= 100)) {
      std::abort();
    }
  }
  (void)cmax::net::NcclAnalysisText(analysis, true);
  (void)cmax::net::NcclAnalysisJson(analysis).dump(-1, ' ', false,
                                                   nlohmann::json::error_handler_t::replace);
  (void)cmax::net::NcclPlatforms::Parse(input);
  return 0;
}
