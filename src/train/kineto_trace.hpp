// A PyTorch profiler (Kineto) trace read as a stream: the JSON is never held whole, only what
// the analysis needs is kept (the GPU's events as intervals, the collectives' arguments, the
// profiler's step marks, the kernel launches' times), so that a trace of a gigabyte reads in a
// few tens of megabytes. Pure: bytes in (core/byte_source.hpp), values out.
//
// What counts as a GPU event, and its kind, is HTA's (Holistic Trace Analysis) rule, so that
// the figures can be held against HTA's: an event of category kernel, gpu_memcpy or gpu_memset
// with a CUDA stream in its arguments (`args.stream`, not -1); communication when its name starts
// with nccl, hip or hccl or holds ncclKernel; memory when it starts with Memcpy, Memset (or hip's)
// or dma; compute when it is neither and not one of the names HTA sets aside (anything holding
// Memcpy, Memset, dma or Sync, "Stream Wait Event", launches); the rest "other", counted busy but
// in neither.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/byte_source.hpp"
#include "core/result.hpp"

namespace cmax::train {

enum class KernelKind : uint8_t { kCompute, kCommunication, kMemory, kOther };

enum class CollectiveKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSendRecv,  // point-to-point, and all-to-all run as NCCL's send/recv kernels
  kBarrier,
  kOther,
};
inline constexpr int kCollectiveKinds = 9;

struct GpuInterval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t correlation = -1;  // the launch's; -1 none
  KernelKind kind = KernelKind::kOther;
  CollectiveKind collective = CollectiveKind::kOther;  // for communication
};

// A communication kernel with the collective's arguments (c10d's record_param_comms, copied by
// Kineto onto the kernel): what it moved and among how many.
struct CollectiveCall {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  CollectiveKind kind = CollectiveKind::kOther;
  std::optional<double> bytes;  // the larger of in and out, nccl-tests' size; none: unknown
  std::optional<int> group_size;
  std::string group;  // the process group's name; "" where the trace has none
};

// The profiler's step mark (ProfilerStep#N), on the host's clock.
struct StepMark {
  int64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// A host call that launched GPU work (cuda_runtime, cuda_driver): its correlation and time.
struct Launch {
  int64_t correlation = 0;
  int64_t ts_ns = 0;
};

struct KinetoTrace {
  std::optional<int> rank;  // distributedInfo.rank
  std::optional<int> world_size;
  std::vector<GpuInterval> gpu;
  std::vector<CollectiveCall> collectives;
  std::vector<StepMark> steps;
  std::vector<Launch> launches;
  uint64_t bytes = 0;        // read (uncompressed)
  size_t events = 0;         // every event object in traceEvents
  size_t skipped = 0;        // events with a GPU stream but no usable time, left out
  size_t skipped_steps = 0;  // ProfilerStep#N marks with no usable time (1e308 us), left out
  bool ended_early = false;  // the input stopped before its JSON did: what came before is used
  std::string end_reason;    // why: "cut off inside traceEvents at byte 1234", zlib's words
};

struct KinetoReadLimits {
  size_t max_token_bytes = size_t{64} << 20;  // one string or number; longer: not a trace
  size_t buffer_bytes = size_t{1} << 18;      // what is read from the input at a time
};

// kCorrupt when the input is not a Kineto trace at all (not JSON, no traceEvents, a token past
// the limits); a trace that stops part way is read up to there (ended_early).
Result<KinetoTrace> ReadKinetoTrace(ByteSource& input, const KinetoReadLimits& limits = {});

// HTA's classification of a GPU event by its name (above).
KernelKind ClassifyKernel(std::string_view name);
// The collective from c10d's name ("allreduce", "_allgather_base", "all_to_allv") or, failing
// that, NCCL's kernel name ("ncclDevKernel_AllGather_RING_LL", "ncclKernel_SendRecv_...").
CollectiveKind CollectiveFromName(std::string_view c10d_name, std::string_view kernel_name);
std::string_view CollectiveKindName(CollectiveKind kind);  // "all_reduce", "all_to_all" ...
// c10d's dtype name ("Float", "BFloat16", "Long") in bytes; none: unknown.
std::optional<int> DtypeBytes(std::string_view dtype);

}  // namespace cmax::train
