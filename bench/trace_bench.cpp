// `cmax train trace`'s reading and analysis (train::ReadAndAnalyzeTraces, what the command runs
// before it records), timed over the given traces: wall time, bytes read (uncompressed), the
// rate, peak RSS, the gzip inflater used (ISA-L or zlib), and each rank's figures, as one JSON line
// for bench/trace_vs_hta.sh.
//   trace_bench [--jobs N] FILE...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/resource.h>
#include <vector>

#include "sys/gzip_file.hpp"
#include "train/trace_run.hpp"

int main(int argc, char** argv) {
  cmax::train::TraceRunOptions options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
      options.jobs = std::atoi(argv[++i]);
    } else {
      options.files.emplace_back(argv[i]);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto figures = cmax::train::ReadAndAnalyzeTraces(options, nullptr);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!figures) {
    std::fprintf(stderr, "trace_bench: %s\n", figures.error().message.c_str());
    return 1;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double bytes = 0;
  nlohmann::json ranks = nlohmann::json::object();
  for (const auto& r : figures->ranks) {
    bytes += static_cast<double>(r.bytes);
    const auto overlap = r.whole.OverlapPct();
    ranks[std::to_string(r.rank)] = {{"overlap_pct", overlap ? *overlap : 0.0},
                                     {"communication_s", r.whole.communication_s},
                                     {"exposed_communication_s", r.whole.exposed_communication_s}};
  }
  std::printf("%s\n", nlohmann::json({{"tool", "cmax"},
                                      {"wall_s", wall},
                                      {"inflater", cmax::sys::FastestInflaterName()},
                                      {"bytes", bytes},
                                      {"mb_per_s", bytes / 1e6 / wall},
                                      {"peak_rss_mb", static_cast<double>(usage.ru_maxrss) / 1024},
                                      {"verdict", figures->verdict},
                                      {"ranks", ranks}})
                          .dump()
                          .c_str());
  return 0;
}
