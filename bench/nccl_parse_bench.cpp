// The nccl-tests parser's speed (issue 17: at least 200 MB/s of nccl-tests text on one core):
// a whole all_reduce sweep, 8 B to 16 GB (32 sizes), as `srun -l` prints it with NCCL's INFO
// lines in between, repeated to about 64 MB and parsed at once.
#include <benchmark/benchmark.h>
#include <cstdint>
#include <fmt/format.h>
#include <string>

#include "net/nccl_tests_output.hpp"

namespace {

std::string Sweep() {
  std::string text =
      "0: # nccl-tests version 2.19.6 nccl-headers=22105 nccl-library=22105\n"
      "0: # Collective test starting: all_reduce_perf\n"
      "0: #  Rank  0 Group  0 Pid  41213 on  gpu-a-001 device  0 [0000:18:00] NVIDIA H100\n"
      "0: gpu-a-001:41213:41213 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong"
      "     time   algbw   busbw #wrong\n"
      "0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
      "     (us)  (GB/s)  (GB/s)\n";
  for (int i = 0; i < 32; ++i) {
    const uint64_t size = uint64_t{8} << i;
    const double time = 30 + static_cast<double>(size) / 2.5e5;
    const double algbw = static_cast<double>(size) / time / 1e3;
    text += fmt::format(
        "0: {:12}  {:12}  {:>8}  {:>6}  {:>6}  {:7.2f}  {:6.2f}  {:6.2f}  {:6}  "
        "{:7.2f}  {:6.2f}  {:6.2f}  {:6}\n",
        size, size / 4, "float", "sum", -1, time, algbw, algbw * 1.875, 0, time * 1.01,
        algbw / 1.01, algbw * 1.875 / 1.01, 0);
    if (i % 8 == 0) text += "0: gpu-a-001:41213:41290 [0] NCCL INFO Channel 00/32 : 0 1 2 3\n";
  }
  text +=
      "0: # Out of bounds values : 0 OK\n0: # Avg bus bandwidth    : 116.0367\n"
      "0: # Collective test concluded: all_reduce_perf\n";
  return text;
}

void ParseSweeps(benchmark::State& state) {
  const std::string one = Sweep();
  std::string text;
  while (text.size() < (size_t{64} << 20)) text += one;
  size_t tables = 0;
  for (auto _ : state) {
    const cmax::net::NcclTestsOutput out = cmax::net::ParseNcclTestsOutput(text);
    tables = out.tables.size();
    benchmark::DoNotOptimize(tables);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tables"] = static_cast<double>(tables);
}
BENCHMARK(ParseSweeps)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
