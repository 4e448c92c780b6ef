// `cmax health --passive`'s whole work, behind its thin command file: the node's facts read
// (kernel log or a saved one, PCIe links, InfiniBand ports, network filesystems, NVML), judged,
// and recorded as one run; as Slurm's HealthCheckProgram (--slurm-healthcheck) silent and
// unrecorded on success, one line on failure, and the node drained when asked, never over
// someone else's drain and never for a health that could not be read.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::health {

struct PassiveRunOptions {
  std::string from_file;  // a saved kernel log instead of /dev/kmsg
  std::string since;      // a duration or a UTC time; "2h" as a health check when empty
  std::string xid_catalog;
  double mount_timeout_s = 2.0;
  bool slurm_healthcheck = false;
  bool drain = false;  // with slurm_healthcheck
  std::string node;    // Slurm's name: default $SLURMD_NODENAME, else the short hostname
  std::string nvml_lib;
};

struct PassiveRunIo {
  std::string db_path;
  std::string cmax_version;
  std::string provider;  // the provider evaluated; empty: --provider or CMAX_PROVIDER, if any
  std::function<bool()> interrupted;
  std::function<int()> interrupt_signal;
  // Drains the node through Slurm with this reason, unless someone else drained it; what was
  // done, in words ("already drained by someone else ..." when it was not).
  std::function<Result<std::string>(const std::string& node, const std::string& reason)> drain;
};

struct PassiveRunReport {
  int exit_code = 0;                // 0, 1 (a check failed), 3 (unknown or error), 128+signal
  std::optional<RunRecord> record;  // the stored run, to show (not as a health check)
  std::string line;                 // a health check's one line, for stdout
  std::vector<std::string> notes;   // what went wrong on the side, for stderr
};

// Errors: what the user gave (kInvalidArgument, a missing --from-file) and a store that cannot
// record the run (outside a health check, which goes on without it).
Result<PassiveRunReport> RunPassiveHealth(const PassiveRunOptions& options, const PassiveRunIo& io);

}  // namespace cmax::health
