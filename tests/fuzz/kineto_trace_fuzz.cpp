// libFuzzer target for profiler traces, which come cut short, corrupt or from any PyTorch
// release: the reader may not crash, hang or hold more than its limits, reading in pieces gives
// what reading whole gives, every interval it keeps runs forwards, and the analysis and its JSON
// can always be made.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "train/kineto_trace.hpp"
#include "train/trace_analysis.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const cmax::train::KinetoReadLimits limits{.max_token_bytes = 4096, .buffer_bytes = 4096};
  cmax::StringByteSource whole(input);
  auto trace = cmax::train::ReadKinetoTrace(whole, limits);
  cmax::StringByteSource pieces(input, 3);
  auto in_pieces = cmax::train::ReadKinetoTrace(pieces, limits);
  if (trace.has_value() != in_pieces.has_value()) std::abort();
  if (!trace) return 0;
  if (trace->gpu.size() != in_pieces->gpu.size() || trace->events != in_pieces->events ||
      trace->bytes > size) {
    std::abort();
  }
  for (const auto& g : trace->gpu) {
    if (g.end_ns < g.start_ns) std::abort();
  }
  const auto figures = cmax::train::AnalyzeTraces({{"fuzz.json", *trace}});
  if (figures.compute_pct < 0 || figures.idle_pct < 0 || figures.exposed_communication_pct < 0) {
    std::abort();
  }
  (void)cmax::train::TraceFiguresJson(figures).dump();
  (void)cmax::train::TraceFiguresText(figures);
  return 0;
}
