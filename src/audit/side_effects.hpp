// What the audit does beyond reading, and only when told (--allow-side-effects): the collectors
// of the catalogue's checks that have a "side_effect". Each one taken is logged in the evidence
// (audit.side_effects: the check, what was done, how to undo it); without the flag none runs and
// the checks are N/A saying why.
//   networking.outbound-internet: one TCP connection to the host the user names
//     (--egress-target), nothing sent; reached is reported, never acted on;
//   health.dcgm-diag: `dcgmi diag -r 1 -j` (seconds of load on every GPU), only on a node whose
//     GPUs are idle unless --force, and only when the node's deadline leaves time for it;
//   containers.enroot-import: `enroot import` of docker://hello-world (what a job's container
//     image needs first) into a folder of its own, removed at once; its layers stay in enroot's
//     cache.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "audit/catalogue.hpp"
#include "audit/grading.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::audit {

struct SideEffectOptions {
  bool allowed = false;       // --allow-side-effects
  bool force = false;         // --force: the GPU diagnostic on a node whose GPUs are busy too
  std::string egress_target;  // --egress-target HOST[:PORT]; empty: no connection
  // The checks asked for (the profile's) that need a side effect: only theirs are taken.
  std::set<std::string, std::less<>> checks;
};

// `options` with `checks` set to those of `selected` that need a side effect.
SideEffectOptions ForChecks(SideEffectOptions options,
                            const std::vector<const CheckSpec*>& selected);

// Whether the side effect of `check` is to be taken: allowed, and the check asked for.
bool TakesSideEffect(const SideEffectOptions& options, std::string_view check);

// Adds a side effect taken to the evidence's audit.side_effects log: what was done and how to
// undo it.
void RecordSideEffect(AuditEvidence& out, std::string_view check, std::string did,
                      std::string undo);

// What the user is asked to confirm about side effects: "read-only", or what may be done.
std::string SideEffectsPlan(const SideEffectOptions& options);

struct SideEffectIo {
  const sys::FileSystem* fs = nullptr;
  sys::ProcessRunner* runner = nullptr;
  std::string path;                            // PATH, where programs are looked up
  Duration timeout = std::chrono::seconds(5);  // the connection's
  // One TCP connection (sys::TcpConnect); null: none is made.
  std::function<Result<void>(const std::string& host, uint16_t port, Duration timeout)> connect;
  std::function<WallTime()> now;     // for the time left before `deadline`
  std::optional<WallTime> deadline;  // the node's (a Slurm audit's --node-timeout)
  // A folder of the audit's own for the enroot import's image, made afresh (sys::MakeTempDir:
  // 0700, a name no one had), so that no file of anyone else's is written over or removed; and
  // how the image and then the folder are removed after. Any null: no import.
  std::function<Result<std::string>()> make_scratch_dir;
  std::function<Result<void>(const std::string& path)> remove_file;
  std::function<Result<void>(const std::string& dir)> remove_dir;  // an empty folder
  // Asked before each side effect: once the user has pressed Ctrl-C none is started.
  std::function<bool()> interrupted;
};

// Takes the side effects `options` allows on this host, with the evidence read so far (the
// GPUs' idleness, whether dcgmi is there), and adds what they found to `out`.
void TakeSideEffects(const SideEffectOptions& options, const SideEffectIo& io, AuditEvidence& out);

// "HOST[:PORT]" ("[v6]:PORT" for an IPv6 address); the port is 443 when not given.
struct EgressTarget {
  std::string host;
  uint16_t port = 443;
};
Result<EgressTarget> ParseEgressTarget(std::string_view text);

// `dcgmi diag -j`'s document (DCGM 3's "DCGM GPU Diagnostic" and 4's "DCGM Diagnostic"): each
// test's outcome, as {"ran": true, "version", "tests", "passed", "skipped", "failed": ["NAME:
// GPU 0: warning"], "warned": [...]}. kCorrupt when it is not one, or when the diagnostic
// reports it could not run (its runtime_error).
Result<nlohmann::json> ParseDcgmDiag(std::string_view text);

// What the side effects recorded in each node's evidence come to: "dcgmi diag -r 1 on 2
// node(s); a TCP connection to example.com:443 from 2 node(s)"; empty when none was taken.
std::string SideEffectsSummary(const std::vector<const AuditEvidence*>& nodes);

}  // namespace cmax::audit
