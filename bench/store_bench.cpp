// Store and report throughput. The bar: at least 100,000 findings per second inserted
// in one transaction. Run: build/release/bin/store_bench (make bench).
#include <stdlib.h>
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <filesystem>
#include <string>

#include "report/render.hpp"
#include "store/store.hpp"

namespace {

using cmax::CheckStatus;
using cmax::Finding;
using cmax::Severity;

std::vector<Finding> MakeFindings(int count) {
  std::vector<Finding> findings;
  findings.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Finding f;
    f.check_id = "gpu.ecc.sbe." + std::to_string(i % 64);
    f.status = i % 10 == 0 ? CheckStatus::kFail : CheckStatus::kPass;
    f.severity = Severity::kHigh;
    f.observed = std::to_string(i);
    f.expected = "0";
    f.message = "volatile single-bit ECC errors on GPU " + std::to_string(i % 8);
    f.remediation = "watch for escalation to double-bit errors; reset the GPU when idle";
    if (i % 4 == 0) f.links = {"https://docs.nvidia.com/deploy/xid-errors/"};
    findings.push_back(std::move(f));
  }
  return findings;
}

struct TempStore {
  TempStore() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cmax-bench-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  ~TempStore() { std::filesystem::remove_all(dir); }
  std::string dir;
};

// One transaction of N findings into a fresh run: the shape every command writes.
void BM_AddFindingsOneTransaction(benchmark::State& state) {
  TempStore temp;
  auto store = cmax::store::Store::Open({.path = temp.dir + "/cmax.db"});
  if (!store) {
    state.SkipWithError(store.error().message.c_str());
    return;
  }
  const auto findings = MakeFindings(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto run = store->BeginRun({.command = "bench", .target = "t", .host = "h"});
    auto ok = store->AddFindings(*run, findings);
    if (!ok) state.SkipWithError(ok.error().message.c_str());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AddFindingsOneTransaction)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_LoadRun(benchmark::State& state) {
  TempStore temp;
  auto store = cmax::store::Store::Open({.path = temp.dir + "/cmax.db"});
  auto run = store->BeginRun({.command = "bench", .target = "t", .host = "h"});
  (void)store->AddFindings(*run, MakeFindings(static_cast<int>(state.range(0))));
  for (auto _ : state) benchmark::DoNotOptimize(store->LoadRun(*run));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LoadRun)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_RenderHtml(benchmark::State& state) {
  cmax::RunRecord record;
  record.run.command = "bench";
  record.findings = MakeFindings(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(cmax::report::RenderHtml(record));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RenderHtml)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
