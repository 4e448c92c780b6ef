// nvbandwidth's output (github.com/NVIDIA/nvbandwidth): each test's bandwidth matrix in GB/s
// (10^9 bytes), read from its JSON (`-j`, v0.5 on: cells as strings, "N/A" on a diagonal, a
// status per test) or its text ("Running host_to_device_memcpy_ce." then the matrix, "SUM name
// value"; v0.4 has no JSON), and judged per GPU and per GPU pair against the class's limits:
// host to device and device to host copies (the copy engines, PCIe or C2C) and device to device
// reads (NVLink), the three tests Azure's health check runs. Pure.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "active/thresholds.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::active {

struct BandwidthTest {
  std::string name;         // "host_to_device_memcpy_ce"
  std::string description;  // "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"
  bool waived = false;      // not run on this system (nvbandwidth's "Waived")
  // What it said instead of a matrix, "" when none: an error, a JSON status other than
  // "Passed" ("Running": it died during the test; "Error"; "ERROR": no such test).
  std::string error;
  // Rows as printed; nullopt for "N/A" (a GPU with itself).
  std::vector<std::vector<std::optional<double>>> matrix;
  std::optional<double> sum;
};

struct NvbandwidthReport {
  std::string version;               // "v0.4"
  std::string driver_version;        // "550.54.15"
  std::vector<std::string> devices;  // "NVIDIA H100 80GB HBM3 (00000000:18:00)", by index
  std::vector<BandwidthTest> tests;
};

// kCorrupt when the text holds no test at all.
Result<NvbandwidthReport> ParseNvbandwidthText(std::string_view text);
// kCorrupt when it is not nvbandwidth's document or holds no test; its "error" (a fatal
// assertion) is kept as the error of the test that was running, or said when none was.
Result<NvbandwidthReport> ParseNvbandwidthJson(std::string_view text);
// Either, by the first character.
Result<NvbandwidthReport> ParseNvbandwidth(std::string_view text);

nlohmann::json NvbandwidthJson(const NvbandwidthReport& report);

// The tests a health pass runs (`nvbandwidth -t ...`) and the figure each is judged as.
struct BandwidthTestUse {
  std::string_view test;    // nvbandwidth's test name
  std::string_view metric;  // the thresholds' metric
  std::string_view words;   // "host to device"
  bool pairs = false;       // a GPU x GPU matrix (else a row of GPUs)
};
const std::vector<BandwidthTestUse>& HealthBandwidthTests();

// One finding per test of HealthBandwidthTests() in the report: the worst GPU (or pair)
// against the class's limit, every GPU below it named; a test the report lacks, waived or
// failed, is UNKNOWN with the reason. `gpu_class` nullptr: the GPU is not in the table.
std::vector<Finding> JudgeBandwidth(const NvbandwidthReport& report, const GpuClass* gpu_class,
                                    const ActiveThresholds& thresholds);

}  // namespace cmax::active
