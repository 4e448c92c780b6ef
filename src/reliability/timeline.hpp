// From what an observer saw after an injection to a timeline and a verdict, against pass bars
// that are data (data/reliability_bars.json), not code. Pure.
//
// The verdict is never PASS without evidence: an observer that lost contact with the scheduler
// before the provider reacted makes it UNKNOWN, and a watch that ended before a bar was reached
// or missed is UNKNOWN too.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::reliability {

enum class ObservationKind {
  kDrained,      // the node stopped taking work: Slurm drain/down, Kubernetes cordon
  kTainted,      // a NoSchedule/NoExecute taint appeared (Kubernetes)
  kAlert,        // an alert arrived (webhook, Prometheus)
  kResumed,      // the node takes work again
  kSpareIn,      // a node that was not there joined the service partition
  kContactLost,  // the observer could not read the scheduler
  kContactBack,
};
std::string_view ObservationKindName(ObservationKind kind);

struct Observation {
  WallTime at;
  std::string node;  // the node it is about ("" for contact)
  ObservationKind kind = ObservationKind::kDrained;
  std::string detail;  // the scheduler's words: the drain reason, the taint, the alert
};

struct PassBars {
  std::string architecture;         // "hgx", "nvl72"
  Duration detect{};                // first sign of detection (drain/cordon/taint/alert)
  Duration out_of_service{};        // no longer scheduled (drain/cordon/taint)
  std::optional<Duration> replace;  // HGX: a spare in service within this
  std::optional<Duration> back;     // the node itself back in service within this (a scenario's)
};
// {"schema": "cmax.reliability-bars/v1", "architectures": {"hgx": {"detect_s": 120, ...}}}
Result<std::map<std::string, PassBars>> ParsePassBars(std::string_view json);
// The bars built into the binary from data/reliability_bars.json.
const std::map<std::string, PassBars>& BuiltinPassBars();

struct Timeline {
  std::string node;
  WallTime injected;
  WallTime watched_until;
  std::optional<Duration> detected;        // injection -> first sign of detection
  std::string detected_by;                 // "drained: cmax: Xid 79 on ...", "alert: ..."
  std::optional<Duration> out_of_service;  // injection -> no longer scheduled
  std::optional<Duration> replaced;        // injection -> a spare in service
  std::string spare;
  std::optional<Duration> back;          // injection -> taking work again
  std::optional<WallTime> contact_lost;  // first loss of contact before detection
};
Timeline BuildTimeline(const std::string& node, WallTime injected,
                       std::span<const Observation> observations, WallTime watched_until);

enum class Verdict { kPass, kFail, kUnknown };
std::string_view VerdictName(Verdict verdict);  // "PASS", "FAIL", "UNKNOWN"

struct Judgement {
  Verdict verdict = Verdict::kUnknown;
  std::vector<std::string> reasons;  // one per bar: "drained in 1.2s (bar 2m00s)"
};
Judgement Judge(const Timeline& timeline, const PassBars& bars);

// True when nothing that could still happen would change the verdict: every bar met or
// missed. A runner stops watching then (or at its time limit).
bool Decided(const Timeline& timeline, const PassBars& bars);

}  // namespace cmax::reliability
