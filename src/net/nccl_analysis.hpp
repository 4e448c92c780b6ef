// What nccl-tests' tables say about a fabric: one bus-bandwidth curve per table (collective,
// node count), and where it is not what a healthy one is. A healthy curve grows with the message
// size toward the fabric's rate and stays there; a dip is a size whose busbw falls more than the
// tolerance below the best of the smaller sizes (only where that best is out of the
// latency-bound small sizes), a cliff one that never comes back. A dip that starts where NCCL's
// tuning lines show it switching algorithm or protocol, and that is over within two sizes, is a
// switch-point kink, not a fault. Across node counts (2 and more: one node is NVLink alone), the
// busbw at the largest size both ran should hold as the count grows. With a platform, the best
// busbw of each curve that ran its GPUs per node and reached 512 MiB is set against what a
// healthy one of that platform reaches. Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "net/nccl_platforms.hpp"
#include "net/nccl_tests_output.hpp"

namespace cmax::net {

struct NcclCurvePoint {
  uint64_t size_bytes = 0;
  double busbw_gbs = 0;  // the better of out-of-place and in-place
  std::string choice;    // "RING/LL128": what NCCL's tuning lines say it chose; "" unknown
};

struct NcclCurve {
  std::string origin;         // "FILE table 2 (from rank 3)"
  std::string collective;     // "all_reduce" (the binary's name without _perf and _mpi); "" unknown
  std::string variant;        // a sweep's: "network", "no-nvls"; "" the default (see NcclInput)
  bool cpu_stand_in = false;  // cmax-mpi-perf's: MPI on CPUs, no NCCL choices to speak of
  int nodes = 0;              // the hosts its ranks ran on; 0: not listed
  int ranks = 0;
  std::vector<NcclCurvePoint> points;  // by size, one per size
  std::optional<double> peak_gbs;
  uint64_t peak_size_bytes = 0;
  std::optional<double> largest_gbs;  // at the largest size
  uint64_t largest_size_bytes = 0;
  // What makes its figures worthless or partial: results the benchmark found wrong (#wrong, or
  // the footer's out-of-bounds count), and a run cut short (no footer: a crashed or hung rank).
  double wrong_values = 0;
  size_t wrong_sizes = 0;
  bool out_of_bounds_failed = false;
  bool concluded = true;
  bool WrongResults() const { return wrong_values > 0 || out_of_bounds_failed; }
  std::string Name() const;  // "all_reduce, 2 nodes, 16 ranks"
};

enum class NcclDipKind {
  kDip,    // falls, then comes back
  kCliff,  // falls and never comes back within the sweep
  kKink,   // at NCCL's algorithm or protocol switch, back within two sizes, at most 30 % deep
};

// A fall at a switch point deeper than this is a fault whatever NCCL chose: a protocol that
// loses more than a third of the bandwidth (LL128 on a bad link) shows exactly there.
inline constexpr double kMaxKinkDepthPct = 30;

struct NcclDip {
  size_t curve = 0;  // index into NcclAnalysis::curves
  NcclDipKind kind = NcclDipKind::kDip;
  uint64_t best_size_bytes = 0;  // the best smaller size it fell from
  double best_gbs = 0;
  uint64_t at_size_bytes = 0;  // its lowest point
  double at_gbs = 0;
  uint64_t first_size_bytes = 0;  // the first size below the tolerance
  uint64_t last_size_bytes = 0;   // the last size below it
  double depth_pct = 0;           // 100 * (1 - at / best)
  std::string switch_from;        // NCCL's choice before and at the dip's first size, when known
  std::string switch_to;
};

struct NcclScalingDrop {
  std::string collective;
  int from_nodes = 0;
  int to_nodes = 0;
  uint64_t size_bytes = 0;  // the largest size both ran
  double from_gbs = 0;
  double to_gbs = 0;
  double drop_pct = 0;
};

struct NcclAgainstPlatform {
  size_t curve = 0;
  std::string platform;
  double expected_gbs = 0;
  double measured_gbs = 0;  // the curve's best
  uint64_t measured_size_bytes = 0;
  double ratio = 0;       // measured / expected
  bool short_of = false;  // more than the tolerance below
  std::string basis;
};

struct NcclAnalysisOptions {
  double tolerance = 0.10;    // a fall of more than this share is a dip
  double floor_share = 0.05;  // sizes whose best-so-far is under this share of the peak are
                              // latency-bound: their wobbles are not dips
  const NcclPlatform* platform = nullptr;
};

struct NcclInput {
  std::string name;  // the file's
  NcclTestsOutput output;
  // The sweep's variant that made it ("network": NCCL_P2P_DISABLE and NCCL_SHM_DISABLE, every
  // byte through the NICs; "no-nvls": NCCL_NVLS_ENABLE=0); "" the default. Curves of different
  // variants are not compared with each other, and only the default's and "nvlink"'s are set
  // against a platform's figures (which are NCCL's defaults).
  std::string variant;
};

struct NcclAnalysis {
  std::vector<NcclCurve> curves;
  std::vector<NcclDip> dips;  // kinks too
  std::vector<NcclScalingDrop> scaling;
  std::vector<NcclAgainstPlatform> platform;
  std::vector<std::string> notes;     // what could not be judged, and why
  std::vector<std::string> problems;  // the parser's (cut-short runs, rows unread), by file
  std::vector<std::string> warnings;  // NCCL WARN lines, by file
  double tolerance = 0.10;
  // Wrong results, dips (not kinks), cliffs, drops with the node count, or a platform
  // shortfall.
  bool Faulty() const;
};

NcclAnalysis AnalyzeNccl(const std::vector<NcclInput>& inputs, const NcclAnalysisOptions& options);

// "8 B", "512 KiB", "16 GiB".
std::string SizeText(uint64_t bytes);

nlohmann::json NcclAnalysisJson(const NcclAnalysis& analysis);
// The analysis for people: each curve's figures and what is wrong with it; `per_size` adds each
// curve's table of sizes.
std::string NcclAnalysisText(const NcclAnalysis& analysis, bool per_size);

}  // namespace cmax::net
