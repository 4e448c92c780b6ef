// The evaluation plan (YAML, schema cmax.plan/v1): what `cmax run --plan FILE` evaluates beyond
// the host it runs on. It names the provider, its attestation, the rubric, and what to test:
// inference endpoints with their model and load, reliability scenarios, NCCL sweeps or their
// logs, and training runs, logs or profiler traces. Parsed strictly (an unknown key is an error
// that names its line and the key meant); paths are taken relative to the plan's own folder, so a
// plan and its files travel together. An example: data/plan.example.yaml.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "endpoint/load_run.hpp"
#include "net/nccl_sweep.hpp"

namespace cmax::evaluate {

struct EndpointPhasePlan {
  std::string name;  // unique among the plan's phases: it labels the phase's evidence
  endpoint::TargetOptions target;
  endpoint::WorkloadOptions workload;
  endpoint::PaceOptions pace;
};

struct ScenarioPhasePlan {
  std::string name;
  std::string scenario;  // a reliability scenario file (cmax reliability run)
};

// Training: TorchTitan logs read (cmax train log), profiler traces analysed (cmax train trace),
// or a training command run with a step budget and a deadline (cmax train run): one of the
// three per entry; an entry with none is UNTESTED.
struct TrainingPhasePlan {
  std::string name;
  std::vector<std::string> logs;     // paths (relative to the plan's folder)
  std::vector<std::string> traces;   // likewise
  std::vector<std::string> command;  // argv
  std::vector<std::string> env;      // KEY=VALUE added to its environment
  std::string cwd;                   // relative to the plan's folder; empty: cmax's
  std::optional<int64_t> steps;      // the step budget; none: it ends itself
  double deadline_s = 7200;
  std::string reference;  // a published figure's id (cmax train references); "": none
  // The command run as one rank on each of this many namespace hosts (mpirun through the
  // namespace lab, as a network sweep's netns_lab), their links slowed as slow_links say.
  int netns_lab = 0;
  std::vector<std::string> slow_links;
};

// The network: nccl-tests logs analysed (cmax nccl analyze), a sweep run and analysed (cmax
// nccl sweep), or the hosts searched for a node that drags them down (cmax nccl find-bad-node,
// the rubric's networking.nccl-bad-node); an entry with none of them is UNTESTED.
struct NetworkPhasePlan {
  std::string name;
  std::vector<std::string> logs;  // paths (relative to the plan's folder)
  // What `cmax nccl sweep` would be given (its out_dir and the stand-in's path are the
  // evaluation's to choose).
  std::optional<net::NcclSweepRequest> sweep;
  // What `cmax nccl find-bad-node` would be given: its hosts, sizes and deadline as a sweep's,
  // its reference figure (none: the best measured) and its bound on measurements.
  std::optional<net::NcclSweepRequest> find_bad_node;
  std::optional<double> reference_gbs;
  int max_measurements = 64;
  std::string platform;  // a built-in platform's name; empty: none
  // How much lower is a dip, a drop or (find_bad_node) a slow node's pair.
  double tolerance_pct = 10;
};

// The active checks (`cmax health --active`): this host exercised when a level is given, and the
// fleet's view (the newest `cmax health schedule` run in the store) folded in when it is recent.
struct ActivePhasePlan {
  std::string level;             // "quick" or "full"; empty: this host is not exercised
  std::optional<double> burn_s;  // none: the level's
  double deadline_s = 0;         // each tool's; 0: each check's own
  std::string gpu_class;         // judge as this class of the thresholds; empty: NVML's name
  bool fleet = true;
  double fleet_max_age_days = 8;  // an older fleet view says too little: UNTESTED
};

// The names of the phases that are one per run: a plan's phase may not take them, as they label
// evidence keys (phase.NAME.KEY).
inline constexpr std::string_view kReservedPhaseNames[] = {"host", "health", "active",
                                                           "active-fleet"};

struct Plan {
  std::string provider;     // empty: --provider, CMAX_PROVIDER or the attestation's
  std::string attestation;  // a path; empty: none
  std::string rubric;       // a path; empty: the built-in rubric
  bool health = true;       // the passive health phase (kernel log, links, NVML)
  std::string health_since = "24h";
  ActivePhasePlan active;
  std::vector<EndpointPhasePlan> endpoints;
  std::vector<ScenarioPhasePlan> reliability;
  std::vector<NetworkPhasePlan> network;
  std::vector<TrainingPhasePlan> training;
};

// `base_dir`: the plan file's folder, for its relative paths. Errors are kInvalidArgument and
// name the line.
Result<Plan> ParsePlan(std::string_view yaml, const std::string& base_dir);

}  // namespace cmax::evaluate
