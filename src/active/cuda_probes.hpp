// cmax's own CUDA probes as an active check: cmax-probe (src/cuda_probes) run under cmax's
// deadline, what it printed read, and each figure judged against the GPU class's share of its
// published peak (GEMM against dense BF16, the copy against HBM) or the class's limit (host
// copies, the limits nvbandwidth's copy-engine tests are held to). The burn runs every GPU at
// once while NVML is watched: a GPU lost or an Xid stops it at once and is reported; wrong
// results, new ECC errors and clocks held down by hardware are said.
// A machine without CUDA (no toolkit at build time, no driver, no GPU) makes the probes a SKIP
// with the reason, never a failure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "active/thresholds.hpp"
#include "active/tool_checks.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "sys/nvml.hpp"

namespace cmax::active {

// One line of cmax-probe's: a probe's figure on one CUDA device, or why it failed.
struct ProbeLine {
  std::string probe;   // "gemm_bf16", "hbm_copy", "host_to_device", "device_to_host", "burn"
  int device = 0;      // CUDA's ordinal
  std::string bus_id;  // "0000:17:00.0", lowercase
  std::optional<double> value;
  double seconds = 0;
  std::optional<uint64_t> mismatches;  // the burn's
  std::string error;                   // the probe failed: CUDA's or cuBLAS's words
};

struct ProbeOutput {
  std::vector<std::string> devices;  // CUDA's, by PCI address
  std::vector<ProbeLine> lines;
  std::string unavailable;  // no CUDA here, and why ("" when there is)
  bool stopped = false;     // a burn told to stop before its time
};

// cmax-probe's lines (heartbeats passed over). kCorrupt naming the line for one that is not a
// JSON object of a known shape. Pure.
Result<ProbeOutput> ParseProbeOutput(std::string_view text);

// NVML's index of each GPU by PCI address, to name CUDA's devices as nvidia-smi does.
std::map<std::string, unsigned> IndexByBusId(const sys::NvmlSnapshot& snapshot);

struct ProbeVerdict {
  std::vector<Finding> findings;
  std::vector<Metric> metrics;  // one a GPU a probe: "active.probe.gemm_bf16_tflops" {gpu}
};

// One finding a probe: the slowest GPU against the threshold, every one below it named; a
// probe that failed on a GPU is a FAIL with CUDA's words. Pure.
ProbeVerdict JudgeProbes(const ProbeOutput& output, const std::map<std::string, unsigned>& gpus,
                         const GpuClass* gpu_class, const ActiveThresholds& thresholds);

// What NVML showed while the burn ran, per NVML index.
struct BurnWatch {
  struct Xid {
    unsigned gpu = 0;
    uint64_t xid = 0;
    double at_s = 0;  // seconds into the burn
  };
  std::vector<Xid> xids;
  std::map<unsigned, double> lost_at_s;  // GPUs that answered "lost"
  std::map<unsigned, unsigned> peak_temperature_c;
  std::map<unsigned, unsigned> lowest_sm_clock_mhz;
  std::map<unsigned, uint64_t> trouble_reasons;  // clock-event bits that mean trouble, ORed
  std::map<unsigned, uint64_t> new_dbe;          // volatile ECC counts gained during the burn
  std::map<unsigned, uint64_t> new_sbe;
  std::string stopped_because;  // "" when the burn ran its time
  int looks = 0;
};

// One look at the GPUs for the watch: every GPU's reading, and the Xid and ECC events since
// the last look (waiting up to `wait` for the first).
struct GpuLook {
  std::vector<sys::GpuReading> gpus;
  std::vector<sys::NvmlEvent> events;
};
using LookAtGpus = std::function<Result<GpuLook>(Duration wait)>;

// Adds a look to the watch; returns the reason to stop the burn now, or "". Pure.
std::string ObserveBurn(const GpuLook& first, const GpuLook& look, double at_s, BurnWatch& watch);

// The burn's findings: "active.burn" (Xid, a lost GPU, new double-bit ECC errors or wrong
// results: FAIL, critical; a CUDA error: FAIL) and "active.burn.clocks" (hardware slowdown, a
// GPU below 90 % of the node's median: WARN). Pure.
ProbeVerdict JudgeBurn(const ProbeOutput& output, const BurnWatch& watch,
                       const std::map<std::string, unsigned>& gpus, double seconds);

struct ProbeRunIo {
  ToolIo tools;
  std::string program;           // cmax-probe's path ("" or absent: SKIP, as for any tool)
  std::vector<std::string> env;  // added to cmax-probe's (CMAX_PROBES_LIB=...)
};

// `cmax-probe quick`, judged.
ProbeVerdict RunCudaProbes(const std::map<std::string, unsigned>& gpus, const GpuClass* gpu_class,
                           const ActiveThresholds& thresholds, Duration deadline,
                           const ProbeRunIo& io);

// `cmax-probe burn SECONDS` with NVML watched every `every` through `look`; the deadline is the
// burn's time and `grace` beyond it.
ProbeVerdict RunBurn(const std::map<std::string, unsigned>& gpus, double seconds, Duration grace,
                     Duration every, const LookAtGpus& look, const ProbeRunIo& io);

// cmax-probe's path beside cmax's own program (bin/cmax, bin/cmax-probe).
std::string ProbeProgramBeside(const std::string& cmax_binary);

// NVML loaded once and kept for the burn, Xid and ECC events registered: the real LookAtGpus.
// An error when NVML cannot be loaded.
Result<LookAtGpus> NvmlLook(const std::string& library_path = "");

}  // namespace cmax::active
