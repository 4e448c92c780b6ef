// What an active check's figure is held against, per GPU class, as data
// (data/active_thresholds.json, built into the binary): each limit with the published
// configuration or datasheet it comes from. A GPU the table does not know gets no threshold
// (the check's finding is UNKNOWN, never PASS).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::active {

// A figure that must reach `min`; between `min` and min x warn_margin it passes with a WARN
// (Azure's GPU bandwidth check warns within 5 % of its limit).
struct Limit {
  std::string metric;  // "nvbandwidth.host_to_device_gbs"
  double min = 0;
  double warn_margin = 1.0;
  std::string source;
};

// A figure held against a share of the part's published peak ("probe.gemm_bf16_tflops" at 80 %
// of "bf16_dense_tflops").
struct ShareOfPeak {
  std::string metric;
  std::string peak;
  double min_share = 0;
  std::string source;
};

struct GpuClass {
  std::string id;                       // "h100-sxm"
  std::vector<std::string> gpu_names;   // NVML's names, "NVIDIA " left off: "H100 80GB HBM3"
  std::map<std::string, double> peaks;  // "bf16_dense_tflops" -> 989
  std::string peaks_source;
  std::vector<Limit> limits;
};

// The threshold one figure is judged by, in one GPU class.
struct Threshold {
  double min = 0;
  double warn_below = 0;  // min where there is no margin
  std::string source;
  std::string words;  // "at least 48 GB/s", "at least 791.2 TFLOP/s (80 % of 989)"
};

class ActiveThresholds {
 public:
  // Strict: unknown keys (naming the key meant), a class id or a GPU name twice, a limit that
  // is not positive, a margin below 1, a share outside (0, 1], a share of a peak no class has,
  // a source that is empty.
  static Result<ActiveThresholds> Parse(std::string_view json);
  static const ActiveThresholds& Builtin();

  // The class of a GPU by NVML's name ("NVIDIA H100 80GB HBM3"), the vendor word left off and
  // the rest matched whole: "NVIDIA H200 NVL" is not an H200 SXM. nullptr: not known.
  const GpuClass* ClassOf(std::string_view gpu_name) const;
  const GpuClass* Find(std::string_view id) const;
  const std::vector<GpuClass>& Classes() const { return classes_; }
  // nullopt: the class has no threshold for that figure.
  std::optional<Threshold> For(const GpuClass& gpu_class, std::string_view metric) const;

 private:
  std::vector<GpuClass> classes_;
  std::vector<ShareOfPeak> shares_;
};

// A figure as people write it: one decimal, none when whole ("48", "791.2").
std::string FigureText(double value);

// One measured figure and what it is.
struct Figure {
  std::string check_id;  // "active.nvbandwidth"
  std::string label;     // "GPU 3 host to device"
  double observed = 0;
  std::string unit;  // "GB/s"
};

// A figure against its class's threshold: PASS, WARN (within the margin), FAIL below; UNKNOWN
// with the reason where there is none (no class: the GPU is not in the table; or the class has
// no threshold for it). The finding carries the observed value, the threshold and its source.
Finding JudgeFigure(const Figure& figure, const GpuClass* gpu_class,
                    const std::optional<Threshold>& threshold);

}  // namespace cmax::active
