// The evaluation behind `cmax run`: every phase the plan asks for and this host allows, in one
// run, then rated. The host's phases (inventory and audit, audit/host_run) open the run; the
// passive health check, the active checks (this host's when the plan asks, and the fleet's
// newest view from `cmax health schedule`), each endpoint's load, each reliability scenario,
// each network and training entry follow, each recorded as its own run (its full detail) and
// folded into the evaluation's (phases.hpp); a phase that cannot run, or that the plan does not
// ask for, is UNTESTED with the reason. The rating
// (rate/) then reads the stored run back, so `cmax rate RUN` gives the same answer later, and
// its summary is kept in the run as its `rating` evidence.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/host_run.hpp"
#include "core/result.hpp"
#include "evaluate/phases.hpp"
#include "rate/rating.hpp"

namespace cmax::evaluate {

struct EvaluationOptions {
  double probe_timeout_s = 2.0;
  std::string plan;         // a plan file (cmax.plan/v1); empty: this host alone
  std::string attestation;  // the provider's attestation file; empty: the plan's, if any
  std::string rubric;       // a rubric file; empty: the plan's, else the built-in one
  // Handed to the plan's reliability scenarios, which inject faults: without them a scenario
  // whose steps need them is refused, and its phase UNTESTED with the refusal.
  bool yes = false;
  bool force = false;
  bool allow_destructive = false;
  // A lab's pass bars are its scenarios' own, scaled down to finish in minutes: the rubric's
  // time bands are scaled the same way (Rubric::WithTimesScaled), and its name says so.
  double time_scale = 1;
  // Where the network phases keep their logs, a folder each; empty: beside the store. A lab's
  // are in its own folder, which each lab evaluation cleans.
  std::string logs_dir;
};

struct EvaluationIo {
  audit::HostRunIo host;  // the store, files, programs, clock and interrupt of every phase
  std::function<void(std::string_view)> progress;  // a line per phase as it starts and ends
  // Called just before a phase runs (kind, name): a lab starts what that phase needs.
  std::function<void(const std::string& kind, const std::string& name)> before_phase;
  // cmax-mpi-perf, for a network sweep or search without nccl-tests (the CPU stand-in); empty:
  // such a sweep is refused, and `cmax run --lab` plans no network phase.
  std::string cpu_perf;
  // cmax-probe, for the active phase's CUDA probes (active::ProbeProgramBeside); empty: they
  // are SKIP.
  std::string probe_program;
};

struct Evaluation {
  int exit_code = 0;  // the run's (audit/host_run.hpp), whatever the tier
  bool interrupted = false;
  RunRecord record;  // the run as stored, its rating evidence included
  std::vector<PhaseOutcome> phases;
  std::optional<rate::Rating> rating;  // none when interrupted
};

// Where `cmax run` writes a run's HTML page unless told: reports/run-ID.html beside the store,
// the path whole (it is printed, to be opened from anywhere).
std::string DefaultHtmlReportPath(const std::string& db_path, int64_t run_id);

// Bad plan, attestation or rubric files are kInvalidArgument before anything runs.
Result<Evaluation> Evaluate(const EvaluationOptions& options, const EvaluationIo& io);

}  // namespace cmax::evaluate
