// Events through the remediation state machine. The bar: 100,000 events per second on
// one core. The stream is a fleet's: each node goes round the whole loop (fault, reset done,
// validation passed, probation over) with medium faults and quiet timer ticks in between, so
// every state and most transitions are on the path. Run: build/release/bin/policy_bench.
#include <benchmark/benchmark.h>
#include <vector>

#include "remediate/policy.hpp"

namespace {

using namespace std::chrono_literals;
using cmax::Severity;
using cmax::WallTime;
using cmax::remediate::ActionKind;
using cmax::remediate::Event;
using cmax::remediate::EventKind;
using cmax::remediate::FaultAction;
using cmax::remediate::NodeRecord;
using cmax::remediate::PolicyConfig;
using cmax::remediate::Transition;

std::vector<Event> Loop() {
  auto of = [](EventKind kind, ActionKind action = ActionKind::kDrain) {
    Event e;
    e.kind = kind;
    e.action = action;
    return e;
  };
  Event medium;
  medium.kind = EventKind::kFault;
  medium.severity = Severity::kMedium;
  medium.fault_action = FaultAction::kRestartApp;
  medium.device = "GPU3";
  medium.summary = "Xid 13 on GPU3: graphics engine exception";
  Event serious = medium;
  serious.severity = Severity::kCritical;
  serious.fault_action = FaultAction::kResetGpu;
  serious.summary = "Xid 79 on GPU3: GPU has fallen off the bus";
  return {medium,
          of(EventKind::kTimerExpired),
          serious,
          of(EventKind::kActionSucceeded, ActionKind::kDrain),
          of(EventKind::kActionSucceeded, ActionKind::kResetGpu),
          of(EventKind::kValidationPassed),
          of(EventKind::kActionSucceeded, ActionKind::kResume),
          of(EventKind::kTimerExpired),
          of(EventKind::kTimerExpired)};
}

void BM_PolicyEvents(benchmark::State& state) {
  const PolicyConfig config;
  const std::vector<Event> loop = Loop();
  std::vector<NodeRecord> fleet(1024);
  WallTime now{std::chrono::milliseconds(1'800'000'000'000)};
  size_t node = 0;
  size_t step = 0;
  int64_t events = 0;
  int64_t changes = 0;  // state changes: shows the stream really moves nodes round the loop
  for (auto _ : state) {
    NodeRecord& record = fleet[node];
    const auto before = record.state;
    record = Transition(record, loop[step], now, config).next;
    changes += record.state != before ? 1 : 0;
    benchmark::DoNotOptimize(record);
    ++events;
    if (++node == fleet.size()) {
      node = 0;
      now += 4h;  // fleet time per sweep: timers expire, a fault leaves the window before the next
      if (++step == loop.size()) step = 0;
    }
  }
  state.SetItemsProcessed(events);
  state.counters["state_changes_per_event"] =
      static_cast<double>(changes) / static_cast<double>(events);
}
BENCHMARK(BM_PolicyEvents);

}  // namespace

BENCHMARK_MAIN();
