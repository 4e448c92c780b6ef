// Rating from the store. The bar: 100 providers with 10,000 findings each, rated and
// ranked from the store, under 2 s. The store is built first (not timed): per provider one
// audit run of 10,000 findings on the built-in rubric's checks (1 in 17 FAIL, 1 in 5 WARN, some
// UNKNOWN) and one reliability run with its timeline metrics; then `cmax rate --providers`'s
// work is timed end to end: open the store, find each provider's newest runs, load them, rate
// them with the built-in rubric, rank. Run: build/release/bin/rate_bench (make bench).
#include <stdlib.h>
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <filesystem>
#include <string>

#include "rate/rate_run.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"

namespace {

using cmax::CheckStatus;
using cmax::Finding;

struct ProviderStore {
  explicit ProviderStore(int providers, int findings) {
    std::string pattern = (std::filesystem::temp_directory_path() / "cmax-bench-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
    path = dir + "/cmax.db";
    auto store = cmax::store::Store::Open({.path = path});
    std::vector<std::string> checks;
    for (const auto& item : cmax::rate::Rubric::Builtin().Items()) {
      for (const std::string& check : item.source.audit_checks) checks.push_back(check);
    }
    for (int p = 0; p < providers; ++p) {
      const std::string provider = "provider-" + std::to_string(p);
      std::vector<Finding> list;
      list.reserve(static_cast<size_t>(findings));
      for (int i = 0; i < findings; ++i) {
        Finding f;
        f.check_id = checks[static_cast<size_t>(i + p) % checks.size()];
        const int k = (i + 3 * p) % 17;
        f.status = k == 0   ? CheckStatus::kFail
                   : k < 4  ? CheckStatus::kWarn
                   : k == 4 ? CheckStatus::kUnknown
                            : CheckStatus::kPass;
        f.observed = "observed " + std::to_string(i);
        f.expected = ">= 12.8";
        f.message = "node gpu-" + std::to_string(i / 80) + ": the value read against the minimum";
        f.remediation = "upgrade to the fixed release";
        list.push_back(std::move(f));
      }
      auto audit = store->BeginRun({.command = "audit", .provider = provider});
      (void)store->AddFindings(*audit, list);
      auto reliability = store->BeginRun({.command = "reliability", .provider = provider});
      (void)store->AddMetrics(*reliability,
                              {{"reliability.detect", {{"step", "xid79"}}, 30.0 + p, "s"},
                               {"reliability.out_of_service", {{"step", "xid79"}}, 40.0 + p, "s"},
                               {"reliability.back_in_service", {{"step", "xid79"}}, 900.0, "s"}});
    }
  }
  ~ProviderStore() { std::filesystem::remove_all(dir); }
  std::string dir;
  std::string path;
};

void BM_RankProvidersFromTheStore(benchmark::State& state) {
  const ProviderStore providers(static_cast<int>(state.range(0)), 10000);
  cmax::sys::LocalFileSystem fs;
  cmax::SystemClock clock;
  size_t ranked = 0;
  for (auto _ : state) {
    auto ranking = cmax::rate::RankStoredProviders(
        {}, {.db_path = providers.path, .fs = &fs, .clock = &clock});
    if (!ranking) {
      state.SkipWithError(ranking.error().message.c_str());
      return;
    }
    ranked = ranking->providers.size();
  }
  state.counters["providers"] = static_cast<double>(ranked);
  state.SetItemsProcessed(state.iterations() * state.range(0) * 10000);
}
BENCHMARK(BM_RankProvidersFromTheStore)->Arg(100)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
