#include "health/xid_catalog.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/strings.hpp"

namespace cmax::health {

// Generated at build time from data/xid_catalog.json (src/health/CMakeLists.txt).
extern const char* const kBuiltinXidCatalog;

namespace {

using Json = nlohmann::json;

// A string field; absent is empty, another type is an error (never an exception).
Result<std::string> StringField(const Json& entry, const char* key, std::string_view where) {
  if (!entry.contains(key)) return std::string();
  if (!entry[key].is_string()) {
    return Fail(ErrorCode::kInvalidArgument, "{}: \"{}\" is not a string", where, key);
  }
  return entry[key].get<std::string>();
}

Result<EventMeaning> ParseMeaning(const Json& entry, std::string_view where) {
  if (!entry.is_object()) return Fail(ErrorCode::kInvalidArgument, "{}: not an object", where);
  EventMeaning meaning;
  meaning.known = true;
  std::string fields[5];
  const char* keys[5] = {"name", "meaning", "source", "severity", "action"};
  for (int i = 0; i < 5; ++i) {
    auto value = StringField(entry, keys[i], where);
    if (!value) return tl::unexpected(value.error());
    fields[i] = std::move(*value);
  }
  meaning.name = fields[0];
  meaning.meaning = fields[1];
  meaning.source = fields[2];
  auto severity = ParseSeverity(fields[3]);
  if (!severity) return Wrap(severity.error(), where);
  meaning.severity = *severity;
  auto action = ParseAction(fields[4]);
  if (!action) return Wrap(action.error(), where);
  meaning.action = *action;
  return meaning;
}

// Xid 154 names the action it changed to, in its last parentheses.
std::optional<RecommendedAction> ActionFromRecoveryText(std::string_view text) {
  const std::string lower = ToLower(text);
  if (lower == "none") return RecommendedAction::kNone;
  if (lower == "gpu reset required") return RecommendedAction::kResetGpu;
  if (lower == "node reboot required") return RecommendedAction::kRebootNode;
  if (lower == "drain and reset") return RecommendedAction::kResetGpu;
  // Stop the peer-to-peer work, then read the recovery action again (NVIDIA's guide).
  if (lower == "drain p2p") return RecommendedAction::kRestartApp;
  return std::nullopt;
}

}  // namespace

Result<XidCatalog> XidCatalog::Parse(std::string_view text) {
  const Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "the XID catalogue is not a JSON object");
  }
  if (!doc.contains("schema") || !doc["schema"].is_string() ||
      doc["schema"].get<std::string>() != "cmax.xid-catalog/v1") {
    return Fail(ErrorCode::kInvalidArgument, "the XID catalogue has no schema cmax.xid-catalog/v1");
  }
  XidCatalog catalog;
  if (!doc.contains("xids") || !doc["xids"].is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "the XID catalogue has no \"xids\" list");
  }
  for (const Json& entry : doc["xids"]) {
    if (!entry.is_object() || !entry.contains("code") || !entry["code"].is_number_integer()) {
      return Fail(ErrorCode::kInvalidArgument, "an XID entry has no integer \"code\"");
    }
    // Read as the 64-bit number it is: 4294967375 read as an int was Xid 79, and a catalogue
    // saying "info" for it made a GPU fallen off the bus a PASS.
    // (nlohmann reads a number that is not negative as unsigned.)
    if (!entry["code"].is_number_unsigned() || entry["code"].get<uint64_t>() > 100000) {
      return Fail(ErrorCode::kInvalidArgument, "an XID code is 0 to 100000, not {}",
                  entry["code"].dump());
    }
    const int code = entry["code"].get<int>();
    auto meaning = ParseMeaning(entry, "xid " + std::to_string(code));
    if (!meaning) return tl::unexpected(meaning.error());
    if (!catalog.xids_.emplace(code, std::move(*meaning)).second) {
      return Fail(ErrorCode::kInvalidArgument, "xid {} is listed twice", code);
    }
  }
  if (doc.contains("rules")) {
    if (!doc["rules"].is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "\"rules\" is not an object");
    }
    for (const auto& [name, entry] : doc["rules"].items()) {
      auto meaning = ParseMeaning(entry, "rule " + name);
      if (!meaning) return tl::unexpected(meaning.error());
      if (meaning->name.empty()) meaning->name = name;
      catalog.rules_.emplace(name, std::move(*meaning));
    }
  }
  return catalog;
}

const XidCatalog& XidCatalog::Builtin() {
  static const XidCatalog kCatalog = [] {
    auto parsed = Parse(kBuiltinXidCatalog);
    // The built-in file is checked by a unit test; a broken one is a build defect.
    if (!parsed) throw std::logic_error("built-in XID catalogue: " + parsed.error().message);
    return std::move(*parsed);
  }();
  return kCatalog;
}

EventMeaning XidCatalog::Xid(int code) const {
  if (auto it = xids_.find(code); it != xids_.end()) return it->second;
  EventMeaning unknown;
  unknown.name = "UNKNOWN";
  unknown.meaning = code == kUnreadableCode
                        ? "an Xid whose code has too many digits to be one NVIDIA defines"
                        : "Xid " + std::to_string(code) + " is not in the catalogue";
  unknown.severity = Severity::kHigh;
  unknown.action = RecommendedAction::kContactSupport;
  unknown.source = "cmax rule: an Xid the catalogue does not know is never ignored";
  unknown.known = false;
  return unknown;
}

EventMeaning XidCatalog::Explain(const KernelEvent& event) const {
  auto rule = [&](const std::string& name) {
    if (auto it = rules_.find(name); it != rules_.end()) return it->second;
    EventMeaning missing;
    missing.name = name;
    missing.meaning = "no rule for " + name + " in the catalogue";
    missing.source = "cmax rule: an event without a rule is never ignored";
    return missing;
  };
  switch (event.kind) {
    case KernelEventKind::kXid: {
      EventMeaning meaning = Xid(event.code);
      if (event.code == 154 && !event.recovery_action.empty()) {
        if (auto action = ActionFromRecoveryText(event.recovery_action)) {
          meaning.action = *action;
          meaning.severity = *action == RecommendedAction::kNone ? Severity::kLow : Severity::kHigh;
          meaning.source = "Xid 154 text: \"" + event.recovery_action + "\"";
        }
      }
      if (event.code >= 144 && event.code <= 150 && meaning.known) {
        const EventMeaning nvlink5 = rule(event.fatal ? "nvlink5_fatal" : "nvlink5_nonfatal");
        meaning.action = nvlink5.action;
        meaning.severity = nvlink5.severity;
        meaning.source = nvlink5.source;
      }
      return meaning;
    }
    case KernelEventKind::kSxid: return rule(event.fatal ? "sxid_fatal" : "sxid_nonfatal");
    case KernelEventKind::kPcieAer:
      return rule(event.fatal       ? "pcie_aer_fatal"
                  : event.corrected ? "pcie_aer_corrected"
                                    : "pcie_aer_uncorrected");
    case KernelEventKind::kMachineCheck:
      return rule(event.fatal ? "machine_check_uncorrected" : "machine_check");
    default: return rule(std::string(KernelEventKindName(event.kind)));
  }
}

}  // namespace cmax::health
