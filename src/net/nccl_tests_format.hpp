// nccl-tests' output written as nccl-tests writes it (src/util.cu's printf formats): the lines
// cmax's CPU stand-in for nccl-tests (cmax-mpi-perf, over OpenMPI) prints, so that the parser,
// the analysis and the report take its runs exactly as they take NCCL's. Bus bandwidth from
// algorithm bandwidth by nccl-tests' factors (doc/PERFORMANCE.md). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::net {

// The collectives the stand-in runs, by nccl-tests' binary names without "_perf".
inline constexpr std::string_view kCpuCollectives[] = {"all_reduce", "all_gather", "reduce_scatter",
                                                       "alltoall", "broadcast"};

// busbw / algbw for `collective` over `ranks`: 2(n-1)/n for all_reduce, (n-1)/n for
// all_gather, reduce_scatter and alltoall, 1 for broadcast, reduce and sendrecv; none for a
// collective it does not know.
std::optional<double> BusBandwidthFactor(std::string_view collective, int ranks);

// Whether nccl-tests' `size` of `collective` is the total over ranks (count x type size x
// ranks: all_gather, reduce_scatter, alltoall) rather than one rank's buffer.
bool SizeIsTotalOverRanks(std::string_view collective);

// A figure in at most `width` characters as nccl-tests' getFloatStr gives it: %.2f, else %.1f,
// else %.0f, else %.1e (then %.0e), right-aligned.
std::string NcclTestsNumber(double value, int width);

struct NcclTestsPlacement {
  double time_us = 0;
  double algbw_gbs = 0;
  double busbw_gbs = 0;
  int64_t wrong = 0;
};

struct NcclTestsRowValues {
  uint64_t size_bytes = 0;
  uint64_t count = 0;
  std::string type = "float";
  std::string redop = "sum";  // "none" for collectives without one
  int root = -1;
  NcclTestsPlacement out_of_place;
  NcclTestsPlacement in_place;
};

struct NcclTestsRank {
  int rank = 0;
  int pid = 0;
  std::string host;
  std::string device;  // what stands in the device's name ("CPU (cmax-mpi-perf)")
};

struct NcclTestsRunHeader {
  std::string collective;  // "all_reduce"
  std::string version;     // the writer's own
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  int step_factor = 2;
  int warmup_iters = 0;
  int iters = 0;
  std::vector<NcclTestsRank> ranks;
};

// The lines before the table: version, start, parameters, devices, the column header.
std::string NcclTestsHead(const NcclTestsRunHeader& header);
std::string NcclTestsRow(const NcclTestsRowValues& row);
// The footer: out-of-bounds count, the average busbw over every row and placement (nccl-tests'
// own figure, which cmax does not use), the end line.
std::string NcclTestsFoot(const std::string& collective, int64_t wrong_total, double avg_busbw);

}  // namespace cmax::net
