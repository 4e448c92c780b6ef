// `cmax audit`'s work, behind its thin command file: the minimum table, the checks of the profile
// asked for, this host's evidence, the grades, one recorded run.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/catalogue.hpp"
#include "audit/inventory_checks.hpp"
#include "audit/minimums.hpp"
#include "audit/side_effects.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "sys/host_root.hpp"

namespace cmax::sys {
class FileSystem;
class HttpClient;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::audit {

struct AuditIo {
  std::string db_path;
  std::string cmax_version;
  sys::FileSystem* fs = nullptr;
  sys::ProcessRunner* runner = nullptr;
  Clock* clock = nullptr;
  std::string path;  // PATH, where programs are looked up
  std::function<bool()> interrupted;
  std::function<int()> interrupt_signal;
  std::function<std::string(const std::string&)> env;  // an environment variable, "" if unset
  std::string self_path;  // this cmax binary: what the nodes run unless told otherwise
  // Asked before work lands on other machines, with what is about to happen; false stops it.
  std::function<bool(const std::string& plan)> confirm;
  std::function<void(std::string_view line)> note;  // progress, for stderr
  // Kubernetes: how the API server is reached; null: libcurl, with the server's TLS settings.
  sys::HttpClient* http = nullptr;
};

struct AuditOptions {
  std::string profile;             // empty: every check; "security": versions and isolation
  std::string minimums;            // a minimum table file; empty: the built-in one
  double probe_timeout_s = 5;      // per program a probe runs
  bool exit_zero = false;          // exit 0 even with FAIL or UNKNOWN findings
  SideEffectOptions side_effects;  // what it may do beyond reading: nothing unless allowed
  // The host's root as a container sees it (`docker run -v /:/host`, a Kubernetes audit pod's
  // hostPath of "/"): the host's evidence is read through it (sys/host_root.hpp), the user's
  // files (--minimums) and the store are this process's. Empty: this process's own "/".
  std::string host_root;
};

struct AuditReport {
  int exit_code = 0;  // the stored run's (0, 1 a FAIL, 3 an UNKNOWN), or 0 with exit_zero
  RunRecord record;
  std::string notice;   // the minimum table's age notice, empty when it is current
  std::string summary;  // what the target's audit covered ("7 of 8 node(s) answered; ...")
};

// Audits this host (the local target: standalone, vm or container as detected) and records one
// run with a finding per check of the profile. Errors before the run (a bad table or profile)
// are kInvalidArgument.
Result<AuditReport> RunLocalAudit(const AuditOptions& options, const AuditIo& io);

// What every target's audit does around its own collection: the table and checks (checked
// before any run is opened), then one recorded run.
struct PreparedAudit {
  MinimumTable table;
  std::vector<const CheckSpec*> checks;
};
Result<PreparedAudit> PrepareAudit(const AuditOptions& options, const AuditIo& io);
struct GradedAudit {
  std::string target;  // the run's target: "local/vm", "slurm/gpu"
  std::string host;
  std::vector<EvidenceItem> evidence;  // the target's; the table's digest and date are added
  std::vector<Finding> findings;       // left out when the audit was interrupted
  std::string summary;                 // AuditReport::summary
  WallTime started{};                  // when the audit began (zero: when it is recorded)
};
Result<AuditReport> RecordAudit(const AuditOptions& options, const PreparedAudit& prepared,
                                GradedAudit graded, const AuditIo& io);

// This host's evidence and grades (the local target), for the caller to record: `cmax audit
// --local` as a run of its own, `cmax run` as a phase of its run. Interrupted: no findings.
GradedAudit AuditThisHost(const AuditOptions& options, const PreparedAudit& prepared,
                          const HostFacts& host, AuditTarget target, const AuditIo& io);
// How this process takes side effects (side_effects.hpp): a real connection, `io`'s clock and
// files, the enroot import's image in $TMPDIR (else /tmp), and the node's deadline if any.
// Refers to `io`, which must outlive it.
SideEffectIo SideEffectIoFor(const AuditIo& io, std::optional<WallTime> deadline);
// The variables of this process the audit reads (local_evidence.hpp's kAuditEnvironment), as
// `io` gives them (through a host root, without sys::kContainersOwnVariables).
std::map<std::string, std::string> AuditEnvironment(const AuditIo& io);
// The side effects the audit may take (side_effects.hpp's ForChecks). From a container it takes
// no image import (that would write on the host) and no login to other nodes (there is no job
// of nodes to go by).
SideEffectOptions AuditSideEffects(const AuditOptions& options,
                                   const std::vector<const CheckSpec*>& checks);

// What an audit reads a host through when it runs in a container with the host's root mounted
// at `host_root`: files below it, programs chrooted there under the host's default PATH, this
// process's variables without sys::kContainersOwnVariables and with the host's HOME. The
// returned io points into `view`, which must outlive it; an empty `host_root` gives `io` as it
// is. kInvalidArgument: not an absolute path to a folder.
struct HostRootView {
  std::optional<sys::HostRootFileSystem> fs;
  std::optional<sys::HostRootProcessRunner> runner;
};
Result<AuditIo> ThroughHostRoot(const std::string& host_root, const AuditIo& io,
                                HostRootView& view);

// What every recorded audit says about itself: its profile, the minimum table's date and
// SHA-256.
std::vector<EvidenceItem> AuditBookkeeping(const AuditOptions& options, const MinimumTable& table);
// The audit's target for what host detection found: standalone, vm or container.
AuditTarget LocalAuditTarget(const Target& target);

// The table to grade with: the built-in one when `path` is empty, else that file (at most 4 MiB;
// a broken file is an error naming it, exit 2).
Result<MinimumTable> LoadMinimums(const std::string& path, const AuditIo& io);

// `cmax audit --show-minimums [--minimums FILE]`: the table as MinimumTableText prints it.
Result<std::string> ShowMinimums(const std::string& path, const AuditIo& io);

}  // namespace cmax::audit
