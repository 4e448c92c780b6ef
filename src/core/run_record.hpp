// The evidence model every command produces and every report reads: a run, the evidence it
// collected, the findings rules drew from it, and the metrics it measured.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax {

// kUnknown: the check could not read what it judges (a read error, an interrupted read); it is
// never a pass, and a run with one and no FAIL ends as an error (exit 3).
enum class CheckStatus { kPass, kWarn, kFail, kSkip, kAttest, kUnknown };
enum class Severity { kInfo, kLow, kMedium, kHigh, kCritical };
// kOk: finished with no FAIL finding; kChecksFailed: finished with at least one.
enum class RunState { kRunning, kOk, kChecksFailed, kInterrupted, kError };

std::string_view StatusName(CheckStatus status);  // "PASS", "WARN", ...
Result<CheckStatus> ParseStatus(std::string_view text);
std::string_view SeverityName(Severity severity);  // "info", "low", ...
Result<Severity> ParseSeverity(std::string_view text);

// What to do about a fault, as the XID catalogue recommends; the agent writes it into a node's
// conditions and the remediation policy acts on it.
enum class RecommendedAction {
  kNone,
  kRestartApp,
  kResetGpu,
  kRebootNode,
  kDrainAndRma,
  kContactSupport,
};
std::string_view ActionName(RecommendedAction action);  // "none", "restart-app", ...
Result<RecommendedAction> ParseAction(std::string_view text);
std::string_view RunStateName(RunState state);  // "running", "ok", "checks-failed", ...
Result<RunState> ParseRunState(std::string_view text);

struct Finding {
  std::string check_id;  // "<category>.<name>", e.g. "gpu.driver"
  CheckStatus status = CheckStatus::kSkip;
  Severity severity = Severity::kInfo;
  std::string observed;
  std::string expected;
  std::string message;
  std::string remediation;
  std::vector<std::string> links;
};

// The part of a check id before the first dot: how reports group findings.
std::string_view FindingCategory(std::string_view check_id);

// The findings grouped by category, in the order each category's first finding appears (so that
// related checks stay together), each group in the findings' order; linear in the findings (a
// store of 40,000 one-finding categories took minutes when each renderer went over every finding
// for each category). The pointers are into `findings`.
struct FindingGroup {
  std::string_view category;
  std::vector<const Finding*> findings;
};
std::vector<FindingGroup> FindingsByCategory(const std::vector<Finding>& findings);

struct EvidenceItem {
  std::string key;         // "host.kernel.release"
  std::string value_json;  // any JSON value, as text
};

struct Metric {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0.0;
  std::string unit;
};

struct Event {
  WallTime time;
  std::string node;
  std::string source;  // "kmsg", "nvml", "slurm", ...
  std::string kind;
  std::string payload_json;
};

// A node condition as the store keeps it: one fault source on one node, with its count. The
// agent writes them as they change; remediation and reports read them.
struct NodeCondition {
  std::string node;
  std::string key;        // kind/device/code, unique per node
  std::string component;  // "gpu", "nvswitch", "nic", ...
  std::string device;
  std::string kind;  // "xid", "soft_lockup", ...
  int code = 0;
  Severity severity = Severity::kInfo;
  std::string action;  // "reset-gpu", ...
  std::string action_source;
  std::string message;  // the most recent record or reading
  uint64_t count = 0;
  WallTime first_seen;
  WallTime last_seen;
  bool recovered = false;
};

struct RunInfo {
  int64_t id = 0;
  std::string command;  // "run", "audit", ...
  std::string target;   // what was evaluated, e.g. "container/standalone"
  std::string host;
  WallTime started_at;
  std::optional<WallTime> ended_at;
  RunState state = RunState::kRunning;
  std::optional<int> exit_code;
  std::string cmax_version;
  int64_t pid = 0;       // of the process that wrote the run, to tell abandoned runs from live ones
  std::string provider;  // the provider it evaluates (--provider, CMAX_PROVIDER); empty: not said
};

struct RunRecord {
  RunInfo run;
  std::vector<EvidenceItem> evidence;
  std::vector<Finding> findings;
  std::vector<Metric> metrics;
};

struct StatusCounts {
  int pass = 0;
  int warn = 0;
  int fail = 0;
  int skip = 0;
  int attest = 0;
  int unknown = 0;
  int Total() const { return pass + warn + fail + skip + attest + unknown; }
};
StatusCounts CountStatuses(const std::vector<Finding>& findings);

}  // namespace cmax
