// The evaluation behind `cmax run`: every phase this host allows, recorded as one run, then
// rated. Today's phases are the host inventory and the audit (audit/host_run); the rating
// (rate/) reads the stored run back, so `cmax rate RUN` gives the same answer later. The
// rating's summary is kept in the run as its `rating` evidence.
#pragma once

#include <optional>
#include <string>

#include "audit/host_run.hpp"
#include "core/result.hpp"
#include "rate/rating.hpp"

namespace cmax::evaluate {

struct EvaluationOptions {
  double probe_timeout_s = 2.0;
  std::string attestation;  // the provider's attestation file; empty: none
  std::string rubric;       // a rubric file; empty: the built-in one
};

struct Evaluation {
  int exit_code = 0;  // the run's (audit/host_run.hpp), whatever the tier
  bool interrupted = false;
  RunRecord record;                    // the run as stored, its rating evidence included
  std::optional<rate::Rating> rating;  // none when interrupted
};

// Bad attestation or rubric files are kInvalidArgument before anything runs.
Result<Evaluation> EvaluateThisHost(const EvaluationOptions& options, const audit::HostRunIo& io);

}  // namespace cmax::evaluate
