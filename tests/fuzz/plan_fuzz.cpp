// libFuzzer target for the evaluation plan (cmax run --plan FILE), which people write: the
// parser may not crash, hang or throw, and a plan it takes holds only what the evaluation can
// run (phase names plain and unique, endpoints with an http(s) URL, a model and a load in range).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "evaluate/plan_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  auto plan = cmax::evaluate::ParsePlan(input, "/plans");
  if (!plan) return 0;
  std::set<std::string> names;
  const auto take = [&](const std::string& name) {
    if (name.empty() || name.size() > 64 || !names.insert(name).second) std::abort();
  };
  for (const auto& e : plan->endpoints) {
    take(e.name);
    if (e.target.model.empty() || e.pace.concurrency < 1 || e.pace.concurrency > 4096 ||
        e.pace.requests < 1 || !(e.target.timeout_s >= 0.1) ||
        !(e.target.url.starts_with("http://") || e.target.url.starts_with("https://"))) {
      std::abort();
    }
  }
  for (const auto& r : plan->reliability) {
    take(r.name);
    if (r.scenario.empty()) std::abort();
  }
  for (const auto& n : plan->network) take(n.name);
  for (const auto& t : plan->training) take(t.name);
  return 0;
}
