// libFuzzer target for the active checks' tool outputs, which come from any version of dcgmi
// (its JSON and its table), nvbandwidth and perftest, or from a tool that crashed mid-line: the
// same bytes go to each reader (nvbandwidth's as text or JSON, by the first character). None may
// crash or hang; what each reads is finite and consistent (a worst status at least as bad as
// every test's, figures >= 0, rows only under a known unit); the judgement of what nvbandwidth
// printed, against every class and none, always gives one finding a test; cmax-probe's lines
// likewise.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "active/cuda_probes.hpp"
#include "active/dcgm_diag.hpp"
#include "active/ib_pair.hpp"
#include "active/ib_write_bw.hpp"
#include "active/nvbandwidth.hpp"
#include "active/thresholds.hpp"

namespace {

void Dump(const nlohmann::json& j) {
  (void)j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cmax::active;  // NOLINT(google-build-using-namespace): a fuzz target's body
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  for (const auto& diag : {ParseDcgmDiagJson(input), ParseDcgmDiagText(input)}) {
    if (!diag) continue;
    if (diag->tests.empty()) std::abort();
    for (const DiagTest& t : diag->tests) {
      if (t.status > diag->worst) std::abort();
    }
    Dump(DiagReportJson(*diag));
  }

  if (const auto bw = ParseIbWriteBw(input)) {
    if (bw->rows.empty() || bw->unit.empty()) std::abort();
    for (const IbBwRow& r : bw->rows) {
      if (!(r.average_gbits >= 0) || !std::isfinite(r.peak_gbits)) std::abort();
    }
    Dump(IbWriteBwJson(*bw));
    // Judged against the port's rate, as sysfs would say it in the same bytes.
    const std::optional<double> port = ParsePortRate(input);
    if (port && !(*port > 0 && std::isfinite(*port))) std::abort();
    const cmax::Finding f = JudgeIbPairs(
        {{.rail = "mlx5_0", .average_gbits = bw->AverageGbits(), .port_gbits = port}}, "peer");
    if (f.check_id != "active.ib-write-bw" || f.message.empty()) std::abort();
  }

  if (const auto nv = ParseNvbandwidth(input)) {
    if (nv->tests.empty()) std::abort();
    for (const BandwidthTest& t : nv->tests) {
      for (const auto& row : t.matrix) {
        for (const auto& cell : row) {
          if (cell && !(*cell >= 0 && std::isfinite(*cell))) std::abort();
        }
      }
    }
    Dump(NvbandwidthJson(*nv));
    const ActiveThresholds& thresholds = ActiveThresholds::Builtin();
    if (JudgeBandwidth(*nv, nullptr, thresholds).size() != HealthBandwidthTests().size()) {
      std::abort();
    }
    for (const GpuClass& c : thresholds.Classes()) {
      if (JudgeBandwidth(*nv, &c, thresholds).size() > HealthBandwidthTests().size()) {
        std::abort();
      }
    }
  }

  // cmax-probe's lines, from a process that may have died mid-line: whatever is read is judged
  // into exactly one finding a quick probe and two for the burn.
  if (const auto probes = ParseProbeOutput(input)) {
    const std::map<std::string, unsigned> gpus = {{"0000:17:00.0", 0}};
    const ActiveThresholds& thresholds = ActiveThresholds::Builtin();
    if (JudgeProbes(*probes, gpus, thresholds.Find("h200"), thresholds).findings.size() != 4) {
      std::abort();
    }
    if (JudgeBurn(*probes, BurnWatch{}, gpus, 60).findings.size() != 2) std::abort();
  }
  return 0;
}
