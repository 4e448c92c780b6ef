// A reliability scenario: a sequence of injections, each watched on the scheduler until the
// pass bars are met or missed, each judged. The runner is told how to inject and how to wait,
// so it runs the same against the lab, a real cluster, or a test's scripted scheduler.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "reliability/observer.hpp"
#include "reliability/timeline.hpp"
#include "remediate/scheduler.hpp"

namespace cmax::reliability {

// Where a step's fault is written: the kernel log (xid, sxid), the simulated NVML's state file,
// DCGM's injection (dcgmi), or a secondary bus reset of the GPU's bridge.
enum class InjectKind { kXid, kSxid, kNvmlSim, kDcgm, kPcieSbr };
std::string_view InjectKindName(InjectKind kind);  // "xid", "sxid", "nvml-sim", "dcgm", "pcie-sbr"
std::optional<InjectKind> ParseInjectKind(std::string_view name);

struct Step {
  std::string name;
  InjectKind inject = InjectKind::kXid;
  int code = 0;
  std::string node;
  std::string pci;  // the GPU (xid, nvml-sim: index or address; dcgm: DCGM's id), the NVSwitch
  int switch_index = 0;
  int link = 0;
  bool fatal = false;
  std::string fault;    // nvml-sim: lost, dbe, ...; dcgm: the field
  long long value = 0;  // nvml-sim and dcgm
  std::string state;    // nvml-sim: the state file (default $CMAX_NVML_SIM_STATE)
};

struct Scenario {
  std::string name;
  PassBars bars;
  Duration poll = std::chrono::seconds(1);
  Duration timeout{};  // the longest a step is watched: the largest bar unless given
  std::string service_partition = "gpu";
  std::vector<Step> steps;
  // An alert signal besides the scheduler: a Prometheus server and an instant query whose
  // series name the alerting nodes (label `alert_node_label`, else instance).
  std::string prometheus;
  std::string alert_query;
  std::string alert_node_label = "node";
  std::string alert_webhook;  // HOST:PORT to receive Alertmanager-style webhooks on
};

// YAML or JSON:
//   name: three faults
//   architecture: hgx            # bars from data/reliability_bars.json ...
//   bars: {detect_s: 30, out_of_service_s: 30}   # ... or these
//   poll_s: 0.5
//   timeout_s: 60
//   service_partition: gpu
//   signals: {prometheus: "http://prom:9090", query: 'max by (node) (ALERTS{alertstate="firing"})',
//             webhook: "0.0.0.0:9099"}
//   steps:
//     - {name: fallen-off, inject: xid, code: 79, node: gpu1, gpu: "0000:17:00.0"}
//     - {inject: sxid, code: 12028, node: gpu3, switch_pci: "0000:05:00.0", fatal: true}
//     - {inject: nvml-sim, fault: row-remap-failure, node: gpu4, gpu: 0, state: /lab/gpu4.json}
//     - {inject: dcgm, field: xid, value: 79, node: gpu5, gpu: 0}
//     - {inject: pcie-sbr, node: gpu6, gpu: "0000:17:00.0"}   (run with --allow-destructive)
Result<Scenario> ParseScenario(std::string_view text);

// The alert signals as a scenario or the flags give them, checked before anything is injected
// (a dry run says it too): the Prometheus server an http:// or https:// URL and a query with
// it, the webhook HOST:PORT to listen on. The error names the bad one ("prometheus", "query",
// "webhook") first.
Result<void> CheckAlertSignals(std::string_view prometheus, std::string_view query,
                               std::string_view webhook);

struct StepResult {
  Step step;
  std::string record;        // what was written
  std::string not_injected;  // why it was not (already drained, refused): verdict UNKNOWN
  Timeline timeline;
  Judgement judgement;
  std::vector<Observation> observations;
};

struct RunHooks {
  // Writes the step's record where the provider's checks read it; returns when it is written.
  std::function<Result<void>(const Step&, const std::string& record)> inject;
  // Called with each observation as it is seen, and a line per step: progress for people.
  std::function<void(std::string_view)> progress;
  // Asked before each look: true stops the run (Ctrl-C); the step under way ends with what was
  // seen (its verdict UNKNOWN unless already decided) and no further step is injected.
  std::function<bool()> stop;
  AlertSource* alerts = nullptr;  // a second signal (may be null)
  // Called with each step's result as soon as it is judged, before the next step is injected:
  // where the run records it, so that a scenario killed at its fifth step keeps four. An error
  // ends the scenario (no fault is injected that could not be recorded).
  std::function<Result<void>(const StepResult&)> step_done;
};

// Runs every step in order. A step whose node is already out of service is not injected (a
// fault must not stack on one being handled) and is UNKNOWN. Fails only when the scheduler
// cannot be read at all before a step, or `step_done` fails (the steps before were handed to
// it).
Result<std::vector<StepResult>> RunScenario(const Scenario& scenario,
                                            remediate::Scheduler& scheduler, Clock& clock,
                                            const RunHooks& hooks);

// What each step writes: the kernel-log record (the driver's formats, inject/kernel_lines) for
// xid and sxid; for nvml-sim and dcgm, the change in words.
Result<std::string> StepRecord(const Step& step);

// A dcgm step's dcgmi command.
Result<std::vector<std::string>> StepDcgmArgv(const Step& step);

// For the store and the report: one finding per step (PASS, FAIL, or WARN for UNKNOWN), and
// the timeline as metrics in seconds (reliability.detect_s{step,node}, ...).
std::vector<Finding> ScenarioFindings(const std::vector<StepResult>& results);
std::vector<Metric> ScenarioMetrics(const std::vector<StepResult>& results);

}  // namespace cmax::reliability
