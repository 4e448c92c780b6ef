// nccl-tests' stdout (all_reduce_perf, all_gather_perf ...), in the versions and wrappings
// people have on disk: the `#wrong` column and the older `error` one, `N/A` where a check was
// not run, numbers in %.2f, %.1f, %.0f or %.1e, launcher prefixes (`mpirun --tag-output`'s
// `[1,0]<stdout>:`, with `--timestamp-output` a date before it, `srun -l`'s `0: `), NCCL's own
// INFO and WARN lines in between, one table per process when the binary was built without MPI,
// several runs in one file, and a run cut short. Pure: text in, tables out. Tables of several
// processes printed with no launcher prefix cannot be told apart and read as one.
//
// cmax's figures for a table are its peak bus bandwidth and the bus bandwidth at its largest
// size, never the footer's average, which every small size drags down.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::net {

// One placement (out-of-place or in-place) of one size.
struct NcclPlacement {
  std::optional<double> time_us;
  std::optional<double> algbw_gbs;  // GB/s, GB = 1e9 bytes
  std::optional<double> busbw_gbs;
  std::optional<double> wrong;  // #wrong (or the older `error`); none: N/A or not printed
};

struct NcclRow {
  uint64_t size_bytes = 0;
  uint64_t count = 0;  // elements
  std::string type;    // float, bfloat16 ... (empty in formats without it)
  std::string redop;   // sum ..., none for collectives without one
  std::string root;    // -1 for collectives without one; empty when not printed
  NcclPlacement out_of_place;
  std::optional<NcclPlacement> in_place;  // none in formats without it
  std::optional<double> BestBusbw() const;
};

struct NcclTable {
  std::string source;      // the launcher's prefix the table came through ("rank 3"), or ""
  std::string collective;  // "all_reduce_perf", from the start line, when there is one
  std::string tests_version;
  bool cpu_stand_in = false;       // cmax-mpi-perf's (its version line says so): MPI, not NCCL
  std::string nccl_version;        // "2.21.5+cuda12.4", from NCCL's own banner
  int ranks = 0;                   // "Rank N" lines
  std::vector<std::string> hosts;  // distinct, as listed
  std::vector<NcclRow> rows;
  // The rows' `wrong` counts wrong values (#wrong); false for the older `error` column, which
  // holds the largest deviation (its verdict is the footer's out-of-bounds count).
  bool wrong_is_count = true;
  std::optional<double> reported_avg_busbw;  // the footer's, for comparison only
  std::optional<bool> out_of_bounds_ok;
  // The footer's last line was seen (or, in versions with no start line, its average): the run
  // was not cut short.
  bool concluded = false;
  // cmax's figures: the best bus bandwidth of any size (and that size), and at the largest size.
  std::optional<double> peak_busbw_gbs;
  uint64_t peak_size_bytes = 0;
  std::optional<double> largest_size_busbw_gbs;
};

// What NCCL chose for one call, from its tuning debug line (NCCL_DEBUG=INFO
// NCCL_DEBUG_SUBSYS=TUNING): "AllReduce: 1048576 Bytes -> Algo RING proto LL128 ...". The bytes
// are the call's count times its type's size: per rank for AllGather and ReduceScatter, whose
// nccl-tests size is the total.
struct NcclTuning {
  std::string function;  // AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv ...
  uint64_t bytes = 0;
  std::string algo;   // RING, TREE, NVLS, NVLS_TREE, COLLNET_DIRECT, PAT ...
  std::string proto;  // LL, LL128, SIMPLE
  bool operator==(const NcclTuning&) const = default;
};

struct NcclTestsOutput {
  std::vector<NcclTable> tables;
  // Each (function, bytes) once, the first choice seen, at most kMaxNcclTunings.
  std::vector<NcclTuning> tuning;
  std::vector<std::string> warnings;  // NCCL WARN lines (the first 20, each at most 300 bytes)
  std::vector<std::string> problems;  // rows that could not be read, runs cut short
};

inline constexpr size_t kMaxNcclTunings = 4096;

NcclTestsOutput ParseNcclTestsOutput(std::string_view text);

nlohmann::json NcclTestsOutputJson(const NcclTestsOutput& output);

}  // namespace cmax::net
