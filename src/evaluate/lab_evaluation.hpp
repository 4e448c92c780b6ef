// `cmax run --lab`: an evaluation of a simulated provider, end to end on one machine. It brings
// up the lab (real Slurm daemons on loopback, lab/), runs the provider as a profile says
// (cmax's agents and remediation as its health checks, serve-sim as its inference endpoint,
// its attestation; its fabric four network namespaces here), writes a plan for it, evaluates it
// like any provider (evaluation.hpp), injecting a GPU fault and timing detection, drain and return
// to service, and takes everything down again, whatever happened: no daemon outlives the command.
//
// The lab's pass bars are the published ones divided by 60 (detect within 2 s, not 2 minutes),
// so that every profile finishes in under 3 minutes; the rubric's time bands are scaled the
// same way and the rating's rubric name says so.
#pragma once

#include <string>
#include <vector>

#include "evaluate/evaluation.hpp"

namespace cmax::evaluate {

inline constexpr double kLabTimeScale = 1.0 / 60;

// How well the simulated provider behaves.
struct ProviderProfile {
  enum class Checks {
    kAgents,          // an agent per node acts on a fault at once (drain, reset, validate)
    kSlowController,  // the agents only report; a controller acts every `interval_s`
    kNone,            // nothing watches the nodes
  };
  std::string name;
  std::string summary;  // in words, for --help and the report
  Checks checks = Checks::kAgents;
  double interval_s = 0;  // kSlowController: seconds between the controller's passes
  bool attestation = true;
  double endpoint_error_share = 0;  // the share of requests serve-sim answers with HTTP 500
  bool stale_driver = false;        // its GPUs' driver misses the security fixes of its branch
  bool prefix_cache = true;         // its endpoint reuses cached prompt prefixes
  // It runs `cmax health schedule`: each idle node's active checks, weekly (the rubric's
  // monitoring.active-checks-* items read the fleet's view it records).
  bool weekly_checks = true;
  // Its fabric, four hosts made as network namespaces on this machine: this host's link slowed
  // ("h3:200mbit", tc's token bucket) and nobody noticed; empty: every link as fast as the rest.
  std::string slow_link;
};
const std::vector<ProviderProfile>& ProviderProfiles();  // good, slow, negligent
const ProviderProfile* FindProviderProfile(std::string_view name);

struct LabEvaluationOptions {
  std::string profile = "good";
  // The lab's folder: state, logs, the plan it wrote. Empty: lab-run beside the store; a
  // relative one is taken from the current folder (the lab's daemons need it absolute).
  std::string dir;
  int port_base = 28817;         // slurmctld's port; the nodes' follow it
  EvaluationOptions evaluation;  // the probe timeout and rubric; the lab writes the plan
};

struct LabEvaluationIo {
  EvaluationIo evaluation;
  std::string cmax_binary;  // the agents and the controller run as this program
  // libnvml-sim.so for the agents' GPUs; empty: the one the build puts beside cmax_binary
  // (../lib/libnvml-sim.so), and agents without NVML when that is not there either.
  std::string nvml_sim_lib;
  // libcmax-probes-sim.so for the weekly active checks' CUDA probes; empty: the one beside
  // cmax_binary (../lib/), and no weekly checks when that (or the simulated NVML) is missing.
  std::string probes_sim_lib;
};

// Errors: kInvalidArgument (an unknown profile), kUnavailable (what the lab needs and this
// machine lacks: root, Slurm's programs, free ports), others when the lab could not start.
Result<Evaluation> EvaluateLab(const LabEvaluationOptions& options, const LabEvaluationIo& io);

}  // namespace cmax::evaluate
