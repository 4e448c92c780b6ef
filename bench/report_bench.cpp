// The report of one provider, as `cmax run` and `cmax report` write it. The bars: under
// 300 ms to render and under 2 MB. The provider: a 128-node audit (every check of the built-in
// catalogue's profiles on every node: 10,000 findings), a reliability timeline of 8 steps, an
// endpoint sweep of 8 levels, rated with the built-in rubric. Run:
// build/release/bin/report_bench (make bench); the `bytes` counter is the page's size.
#include <benchmark/benchmark.h>
#include <string>

#include "rate/rating.hpp"
#include "report/render.hpp"

namespace {

using cmax::CheckStatus;
using cmax::Finding;
using cmax::Metric;
using cmax::RunRecord;

RunRecord Provider() {
  RunRecord r;
  r.run.id = 1;
  r.run.command = "run";
  r.run.host = "login-01";
  r.run.target = "bare-metal/slurm-client";
  // Check ids of the built-in rubric, so the rating scores real items.
  std::vector<std::string> checks;
  for (const auto& item : cmax::rate::Rubric::Builtin().Items()) {
    for (const std::string& check : item.source.audit_checks) checks.push_back(check);
  }
  for (int i = 0; i < 10000; ++i) {
    Finding f;
    f.check_id = checks[static_cast<size_t>(i) % checks.size()];
    f.status = i % 17 == 0  ? CheckStatus::kFail
               : i % 5 == 0 ? CheckStatus::kWarn
                            : CheckStatus::kPass;
    const std::string node = "gpu-" + std::to_string(i / static_cast<int>(checks.size()));
    f.observed = "observed value " + std::to_string(i);
    f.expected = ">= 12.8";
    f.message = "the value read on node " + node + " against the minimum";
    f.remediation = "upgrade to the fixed release; see the advisory";
    if (i % 4 == 0) f.links = {"https://nvidia.custhelp.com/app/answers/detail/a_id/5614"};
    r.findings.push_back(std::move(f));
  }
  for (int s = 0; s < 8; ++s) {
    const std::map<std::string, std::string> labels = {{"step", "xid" + std::to_string(s)},
                                                       {"node", "gpu-" + std::to_string(s)}};
    r.metrics.push_back({"reliability.detect", labels, 3.0 + s, "s"});
    r.metrics.push_back({"reliability.out_of_service", labels, 5.0 + s, "s"});
    r.metrics.push_back({"reliability.back_in_service", labels, 40.0 + s, "s"});
    r.metrics.push_back({"reliability.watched", labels, 60.0, "s"});
  }
  for (int c = 1; c <= 128; c *= 2) {
    const std::map<std::string, std::string> labels = {{"concurrency", std::to_string(c)}};
    r.metrics.push_back({"endpoint.output_throughput", labels, 90.0 * c / (1 + c / 32.0), "tok/s"});
    r.metrics.push_back({"endpoint.ttft_p50", labels, 20.0 + c * 1.5, "ms"});
    r.metrics.push_back({"endpoint.tpot_p50", labels, 10.0 + c * 0.05, "ms"});
  }
  const cmax::rate::Rating rating =
      cmax::rate::RateEvidence(cmax::rate::Rubric::Builtin(), {{&r}, nullptr});
  r.evidence.push_back({"rating", cmax::rate::RatingJson(rating).dump()});
  return r;
}

void BM_ProviderReportHtml(benchmark::State& state) {
  const RunRecord record = Provider();
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string html = cmax::report::RenderHtml(record);
    bytes = html.size();
    benchmark::DoNotOptimize(html.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ProviderReportHtml)->Unit(benchmark::kMillisecond);

void BM_ProviderReportMarkdown(benchmark::State& state) {
  const RunRecord record = Provider();
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string md = cmax::report::RenderMarkdown(record);
    bytes = md.size();
    benchmark::DoNotOptimize(md.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ProviderReportMarkdown)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
