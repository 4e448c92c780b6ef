// `cmax run`'s work on this host, behind its thin command file: the host inventory (files only,
// quick), the run opened as soon as the environment is known so that anything slower is inside
// a recorded run, then the GPUs and driver, then the scheduler (probes with a timeout), then the
// audit of this host (every check `cmax audit --local` grades, with the built-in minimum table);
// each phase's evidence and findings are stored as it ends, and Ctrl-C keeps what was found.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::store {
class RunWriter;
}

namespace cmax::audit {

struct HostRunIo {
  std::string db_path;
  std::string cmax_version;
  sys::FileSystem* fs = nullptr;
  sys::ProcessRunner* runner = nullptr;
  Clock* clock = nullptr;
  std::function<bool()> interrupted;
  std::function<int()> interrupt_signal;
  std::string path;                                    // PATH, for the audit's programs
  std::function<std::string(const std::string&)> env;  // an environment variable, "" if unset
  // The provider the run evaluates; empty: --provider or CMAX_PROVIDER, if any (the store's).
  std::string provider;
};

struct HostRunReport {
  int exit_code = 0;  // the stored run's: 0, 1 (a FAIL finding), 3, 128+signal
  bool interrupted = false;
  RunRecord record;  // the run as stored
};

// The phases an evaluation runs after the host's own, into the same run before it is closed
// (evaluate/): they add to `writer` what they found. An error ends the run as an error.
using LaterPhases = std::function<Result<void>(store::RunWriter& writer)>;

// `probe_timeout_s`: how long a scheduler probe (sinfo, scontrol ping) may take. `later` runs
// after the audit unless the run was interrupted.
Result<HostRunReport> EvaluateHost(double probe_timeout_s, const HostRunIo& io,
                                   const LaterPhases& later = {});

}  // namespace cmax::audit
