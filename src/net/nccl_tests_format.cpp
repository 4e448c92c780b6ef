#include "net/nccl_tests_format.hpp"

#include <cmath>
#include <fmt/format.h>

namespace cmax::net {

std::optional<double> BusBandwidthFactor(std::string_view collective, int ranks) {
  if (ranks < 1) return std::nullopt;
  const double n = ranks;
  if (collective == "all_reduce") return 2 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall" ||
      collective == "gather" || collective == "scatter") {
    return (n - 1) / n;
  }
  if (collective == "broadcast" || collective == "reduce" || collective == "sendrecv") return 1.0;
  return std::nullopt;
}

bool SizeIsTotalOverRanks(std::string_view collective) {
  return collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall" ||
         collective == "gather" || collective == "scatter";
}

std::string NcclTestsNumber(double value, int width) {
  const auto w = static_cast<size_t>(width);
  for (const int precision : {2, 1, 0}) {
    std::string text = fmt::format("{:.{}f}", value, precision);
    if (text.size() <= w) return fmt::format("{:>{}}", text, width);
  }
  for (const int precision : {1, 0}) {
    std::string text = fmt::format("{:.{}e}", value, precision);
    if (text.size() <= w) return fmt::format("{:>{}}", text, width);
  }
  return fmt::format("{:.0e}", value);
}

std::string NcclTestsHead(const NcclTestsRunHeader& h) {
  std::string out =
      fmt::format("# nccl-tests version {} (a CPU stand-in for nccl-tests over MPI)\n", h.version);
  out += fmt::format("# Collective test starting: {}_perf\n", h.collective);
  out += fmt::format(
      "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {}(factor) warmup iters: {} iters: {} "
      "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
      h.min_bytes, h.max_bytes, h.step_factor, h.warmup_iters, h.iters);
  for (const NcclTestsRank& r : h.ranks) {
    out += fmt::format("#  Rank {:2} Group  0 Pid {:6} on {:>10} device  0 [cpu] {}\n", r.rank,
                       r.pid, r.host, r.device);
  }
  out += "#\n";
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                 "
      "      in-place          \n",
      "", "", "", "", "");
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  "
      "{:>6}  {:>6}  {:>6}\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
      "busbw", "#wrong");
  out += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  "
      "{:>6}  {:>6}  {:>6}\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      "");
  return out;
}

std::string NcclTestsRow(const NcclTestsRowValues& row) {
  std::string out = fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.size_bytes, row.count,
                                row.type, row.redop, row.root);
  for (const NcclTestsPlacement* p : {&row.out_of_place, &row.in_place}) {
    out +=
        fmt::format("  {}  {}  {}  {:>6}", NcclTestsNumber(p->time_us, 7),
                    NcclTestsNumber(p->algbw_gbs, 6), NcclTestsNumber(p->busbw_gbs, 6), p->wrong);
  }
  return out + "\n";
}

std::string NcclTestsFoot(const std::string& collective, int64_t wrong_total, double avg_busbw) {
  return fmt::format(
      "# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:g} \n#\n"
      "# Collective test concluded: {}_perf\n",
      wrong_total, wrong_total == 0 ? "OK" : "FAILED", avg_busbw, collective);
}

}  // namespace cmax::net
