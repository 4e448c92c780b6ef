#include "core/run_record.hpp"

#include <array>
#include <unordered_map>
#include <utility>

namespace cmax {
namespace {

template <class Enum, size_t N>
Result<Enum> ParseName(const std::array<std::pair<Enum, std::string_view>, N>& names,
                       std::string_view text, std::string_view what) {
  for (const auto& [value, name] : names) {
    if (name == text) return value;
  }
  return Fail(ErrorCode::kInvalidArgument, "unknown {} '{}'", what, text);
}

template <class Enum, size_t N>
std::string_view NameOf(const std::array<std::pair<Enum, std::string_view>, N>& names, Enum value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "?";
}

constexpr std::array<std::pair<CheckStatus, std::string_view>, 6> kStatusNames{{
    {CheckStatus::kPass, "PASS"},
    {CheckStatus::kWarn, "WARN"},
    {CheckStatus::kFail, "FAIL"},
    {CheckStatus::kSkip, "SKIP"},
    {CheckStatus::kAttest, "ATTEST"},
    {CheckStatus::kUnknown, "UNKNOWN"},
}};

constexpr std::array<std::pair<Severity, std::string_view>, 5> kSeverityNames{{
    {Severity::kInfo, "info"},
    {Severity::kLow, "low"},
    {Severity::kMedium, "medium"},
    {Severity::kHigh, "high"},
    {Severity::kCritical, "critical"},
}};

constexpr std::array<std::pair<RunState, std::string_view>, 5> kRunStateNames{{
    {RunState::kRunning, "running"},
    {RunState::kOk, "ok"},
    {RunState::kChecksFailed, "checks-failed"},
    {RunState::kInterrupted, "interrupted"},
    {RunState::kError, "error"},
}};

constexpr std::array<std::pair<RecommendedAction, std::string_view>, 6> kActionNames{{
    {RecommendedAction::kNone, "none"},
    {RecommendedAction::kRestartApp, "restart-app"},
    {RecommendedAction::kResetGpu, "reset-gpu"},
    {RecommendedAction::kRebootNode, "reboot-node"},
    {RecommendedAction::kDrainAndRma, "drain-and-rma"},
    {RecommendedAction::kContactSupport, "contact-support"},
}};

}  // namespace

std::string_view StatusName(CheckStatus status) {
  return NameOf(kStatusNames, status);
}
Result<CheckStatus> ParseStatus(std::string_view text) {
  return ParseName(kStatusNames, text, "status");
}
std::string_view SeverityName(Severity severity) {
  return NameOf(kSeverityNames, severity);
}
Result<Severity> ParseSeverity(std::string_view text) {
  return ParseName(kSeverityNames, text, "severity");
}
std::string_view ActionName(RecommendedAction action) {
  return NameOf(kActionNames, action);
}
Result<RecommendedAction> ParseAction(std::string_view text) {
  return ParseName(kActionNames, text, "action");
}
std::string_view RunStateName(RunState state) {
  return NameOf(kRunStateNames, state);
}
Result<RunState> ParseRunState(std::string_view text) {
  return ParseName(kRunStateNames, text, "run state");
}

std::string_view FindingCategory(std::string_view check_id) {
  return check_id.substr(0, check_id.find('.'));
}

std::vector<FindingGroup> FindingsByCategory(const std::vector<Finding>& findings) {
  std::vector<FindingGroup> groups;
  std::unordered_map<std::string_view, size_t> index;
  for (const Finding& f : findings) {
    const std::string_view category = FindingCategory(f.check_id);
    const auto [at, added] = index.try_emplace(category, groups.size());
    if (added) groups.push_back({category, {}});
    groups[at->second].findings.push_back(&f);
  }
  return groups;
}

StatusCounts CountStatuses(const std::vector<Finding>& findings) {
  StatusCounts counts;
  for (const Finding& finding : findings) {
    switch (finding.status) {
      case CheckStatus::kPass: ++counts.pass; break;
      case CheckStatus::kWarn: ++counts.warn; break;
      case CheckStatus::kFail: ++counts.fail; break;
      case CheckStatus::kSkip: ++counts.skip; break;
      case CheckStatus::kAttest: ++counts.attest; break;
      case CheckStatus::kUnknown: ++counts.unknown; break;
    }
  }
  return counts;
}

}  // namespace cmax
