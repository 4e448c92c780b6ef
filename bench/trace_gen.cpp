// Writes a synthetic PyTorch profiler trace of a chosen size for the trace benchmarks
// (bench/trace_vs_hta.sh): one rank's training steps in the shape of a real trace (host
// operators with their argument lists, kernel launches and flows, GEMMs and elementwise kernels
// on the compute stream, FSDP-like all-gathers and reduce-scatters on the communication
// stream, partly hidden behind compute), written as it goes, plain or gzip.
//   trace_gen OUT SIZE_MB [RANK] [WORLD] [--gzip]
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/kineto_writer.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: trace_gen OUT SIZE_MB [RANK] [WORLD] [--gzip]\n");
    return 2;
  }
  const std::string out = argv[1];
  const double size_mb = std::atof(argv[2]);
  const int rank = argc > 3 ? std::atoi(argv[3]) : 0;
  const int world = argc > 4 ? std::atoi(argv[4]) : 8;
  const bool gzip = argc > 5 && std::strcmp(argv[5], "--gzip") == 0;
  const auto target = static_cast<uint64_t>(size_mb * 1e6);
  gzFile zfile = gzip ? gzopen(out.c_str(), "wb6") : nullptr;
  FILE* file = gzip ? nullptr : std::fopen(out.c_str(), "wb");
  if (zfile == nullptr && file == nullptr) {
    std::perror(out.c_str());
    return 1;
  }
  uint64_t written = 0;
  cmax::testing::KinetoWriter w;
  const auto flush = [&] {
    if (gzip) {
      gzwrite(zfile, w.text.data(), static_cast<unsigned>(w.text.size()));
    } else {
      std::fwrite(w.text.data(), 1, w.text.size(), file);
    }
    written += w.text.size();
    w.text.clear();
  };
  constexpr int64_t kUs = 1000;
  constexpr int64_t kStep = 100'000 * kUs;
  w.Begin(rank, world);
  // Each step (100 ms): 50 layers of a GEMM (1.2 ms) and an elementwise kernel (0.1 ms) on the
  // compute stream, 8 host operators per layer; an all-gather ahead of every 5th layer and a
  // reduce-scatter after it on the communication stream (2.5 ms each, half under compute).
  for (int64_t step = 1; written + w.text.size() < target; ++step) {
    const int64_t t0 = step * kStep;
    w.Step(step, t0, kStep - 10 * kUs);
    int64_t gpu = t0 + 300 * kUs;
    for (int layer = 0; layer < 50; ++layer) {
      const int64_t host = t0 + layer * 1500 * kUs;
      for (int op = 0; op < 8; ++op) w.CpuOp("aten::linear", host + op * 20 * kUs, 15 * kUs);
      if (layer % 5 == 0) {
        w.Collective("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                     "_allgather_base", host + 5 * kUs, gpu - 1200 * kUs, 2500 * kUs, 4194304,
                     4194304.0 * world, "BFloat16", world);
      }
      w.Gemm(host + 10 * kUs, gpu, 1200 * kUs);
      gpu += 1250 * kUs;
      w.Kernel("triton_poi_fused_add_mul_silu_0", host + 12 * kUs, gpu, 100 * kUs);
      gpu += 150 * kUs;
      if (layer % 5 == 4) {
        w.Collective(
            "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "_reduce_scatter_base", host + 14 * kUs, gpu - 1200 * kUs, 2500 * kUs,
            4194304.0 * world, 4194304, "BFloat16", world);
      }
    }
    if (w.text.size() > (1U << 20)) flush();
  }
  w.End();
  flush();
  if (gzip) return gzclose(zfile) == Z_OK ? 0 : 1;
  return std::fclose(file) == 0 ? 0 : 1;
}
