// perftest's `ib_write_bw` output (the client's; the server prints the same table): the test's
// settings block, the result table in either unit (`BW peak[MB/sec]`, which perftest computes
// in 2^20 bytes, also written `MiB/sec`; or `[Gb/sec]` with --report_gbits, 10^9 bits), one row
// per message size (-a) or one, and the lines it says around them (CPU frequency warnings,
// CUDA's device choice for GPUDirect, errors). Every figure is kept in Gb/s, the unit the
// links are sold in. Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax::active {

struct IbBwRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0;
  double peak_gbits = 0;
  double average_gbits = 0;
  double msg_rate_mpps = 0;
};

struct IbWriteBwReport {
  std::string test;        // "RDMA_Write BW Test"
  std::string device;      // "mlx5_0"
  std::string link_type;   // "IB", "Ethernet"
  std::string transport;   // "IB"
  std::string connection;  // "RC"
  int qps = 0;
  int mtu = 0;                     // bytes
  std::string unit;                // as printed: "MB/sec", "MiB/sec", "Gb/sec"
  std::vector<IbBwRow> rows;       // in the order printed
  std::vector<std::string> notes;  // warnings perftest printed ("Conflicting CPU frequency ...")
  // The figure judged: the average at the largest message size.
  double AverageGbits() const;
};

// kCorrupt when no result table is found (with perftest's own error line where it printed one:
// "Couldn't connect to 10.0.0.2:18515").
Result<IbWriteBwReport> ParseIbWriteBw(std::string_view text);

nlohmann::json IbWriteBwJson(const IbWriteBwReport& report);

}  // namespace cmax::active
