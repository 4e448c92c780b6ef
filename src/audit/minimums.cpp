#include "audit/minimums.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "core/json_read.hpp"
#include "core/keys.hpp"
#include "core/sha256.hpp"
#include "core/strings.hpp"
#include "core/version.hpp"

namespace cmax::audit {

// Generated at build time from data/audit_minimums.json (src/CMakeLists.txt).
extern const char* const kBuiltinAuditMinimums;

namespace {

using Json = nlohmann::json;

constexpr int kMaxDays = 366;
constexpr auto kDay = std::chrono::hours(24);

const std::vector<std::string_view> kRootKeys = {"schema",     "generated",    "note",
                                                 "grace_days", "max_age_days", "components"};
const std::vector<std::string_view> kComponentKeys = {"select",    "unlisted",   "minimums",
                                                      "available", "advisories", "cves"};

Error Bad(std::string_view where, std::string_view what) {
  return Error{ErrorCode::kInvalidArgument,
               "minimum table: " + std::string(where) + ": " + std::string(what)};
}

// A release-candidate suffix ("1.5.0-rc.3", "2.0.0-beta1") sorts before its release, as in
// semantic versioning; Debian's ordering does that for '~'. A Debian revision ("-0ubuntu3")
// starts with a digit and stays one.
std::string Comparable(std::string_view text) {
  std::string out(text);
  const size_t dash = out.find('-');
  if (dash != std::string::npos && dash + 1 < out.size() &&
      ((out[dash + 1] >= 'a' && out[dash + 1] <= 'z') ||
       (out[dash + 1] >= 'A' && out[dash + 1] <= 'Z'))) {
    out[dash] = '~';
  }
  return out;
}

std::optional<Version> VersionOf(std::string_view text) {
  auto version = ParseVersion(Comparable(text));
  if (!version) return std::nullopt;
  return *version;
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The leading digits of a field ("4702" of "4702", "1" of "1rc2").
std::optional<uint64_t> LeadingNumber(std::string_view field) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || end == field.data()) return std::nullopt;
  return value;
}

// The selector of a version for its component's kind: "*", "570", "1.3", "28".
std::optional<std::string> SelectorOf(MinimumSelect select, const Version& version) {
  const std::vector<std::string_view> fields = Split(version.upstream, '.');
  switch (select) {
    case MinimumSelect::kWhole: return "*";
    case MinimumSelect::kMajor:
    case MinimumSelect::kTrain: {
      const auto major = LeadingNumber(fields[0]);
      if (!major) return std::nullopt;
      return std::to_string(*major);
    }
    case MinimumSelect::kMajorMinor: {
      if (fields.size() < 2) return std::nullopt;
      const auto major = LeadingNumber(fields[0]);
      const auto minor = LeadingNumber(fields[1]);
      if (!major || !minor) return std::nullopt;
      return fmt::format("{}.{}", *major, *minor);
    }
    case MinimumSelect::kModel: return std::nullopt;  // the version does not say the hardware
  }
  return std::nullopt;
}

// A number written the one way a version's selector is made ("5", not "05"): a table's
// selector must be found by the selector of a version on its branch.
bool Canonical(std::string_view number) {
  return AllDigits(number) && (number.size() == 1 || number[0] != '0');
}

bool SelectorFits(MinimumSelect select, std::string_view selector) {
  switch (select) {
    case MinimumSelect::kWhole: return selector == "*";
    case MinimumSelect::kMajor:
    case MinimumSelect::kTrain: return Canonical(selector);
    case MinimumSelect::kMajorMinor: {
      const size_t dot = selector.find('.');
      return dot != std::string_view::npos && Canonical(selector.substr(0, dot)) &&
             Canonical(selector.substr(dot + 1));
    }
    case MinimumSelect::kModel:  // a model's name as the hardware reports it: MI300X
      return !selector.empty() && selector.size() <= 32 &&
             std::all_of(selector.begin(), selector.end(), [](char c) {
               return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
             });
  }
  return false;
}

Result<std::vector<std::string>> StringList(const Json& object, const char* key,
                                            std::string_view where, bool (*fits)(std::string_view),
                                            const char* what) {
  std::vector<std::string> out;
  const auto it = object.find(key);
  if (it == object.end()) return out;
  if (!it->is_array()) return tl::unexpected(Bad(where, fmt::format("\"{}\" is not a list", key)));
  for (const Json& value : *it) {
    if (!value.is_string()) {
      return tl::unexpected(
          Bad(where, fmt::format("\"{}\" holds a value that is not a string", key)));
    }
    if (!fits(value.get_ref<const std::string&>())) {
      return tl::unexpected(
          Bad(where, fmt::format("\"{}\" holds '{}', which is not {}", key,
                                 AsOneLine(value.get<std::string>().substr(0, 80)), what)));
    }
    out.push_back(value.get<std::string>());
  }
  return out;
}

Result<int> Days(const Json& root, const char* key, int fallback) {
  const auto it = root.find(key);
  if (it == root.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxDays) {
    return tl::unexpected(
        Bad("the document",
            fmt::format("\"{}\" must be a whole number of days in [0, {}]", key, kMaxDays)));
  }
  return it->get<int>();
}

Result<ComponentMinimums> ParseComponent(const Json& value, const std::string& where) {
  if (!value.is_object()) return tl::unexpected(Bad(where, "not an object"));
  for (const auto& item : value.items()) {
    if (std::find(kComponentKeys.begin(), kComponentKeys.end(), item.key()) ==
        kComponentKeys.end()) {
      return tl::unexpected(UnknownKey("minimum table " + where, item.key(), 0, kComponentKeys));
    }
  }
  ComponentMinimums out;
  const auto select_value = value.find("select");
  const std::string select = select_value != value.end() && select_value->is_string()
                                 ? select_value->get<std::string>()
                                 : std::string();
  if (select == "whole") {
    out.select = MinimumSelect::kWhole;
  } else if (select == "major") {
    out.select = MinimumSelect::kMajor;
  } else if (select == "major.minor") {
    out.select = MinimumSelect::kMajorMinor;
  } else if (select == "train") {
    out.select = MinimumSelect::kTrain;
  } else if (select == "model") {
    out.select = MinimumSelect::kModel;
  } else {
    return tl::unexpected(
        Bad(where, "\"select\" must be whole, major, major.minor, train or model"));
  }
  if (value.contains("unlisted")) {
    const Json& unlisted = value["unlisted"];
    if (unlisted == "unknown") {
      out.unlisted = UnlistedBranch::kUnknown;
    } else if (unlisted == "fail" && out.select == MinimumSelect::kModel) {
      return tl::unexpected(
          Bad(where, "an unlisted model is unknown: \"unlisted\" cannot be fail"));
    } else if (unlisted == "fail") {
      out.unlisted = UnlistedBranch::kFail;
    } else {
      return tl::unexpected(Bad(where, "\"unlisted\" must be unknown or fail"));
    }
  }
  const auto minimums = value.find("minimums");
  if (minimums == value.end() || !minimums->is_object() || minimums->empty()) {
    return tl::unexpected(Bad(where, "\"minimums\" must be an object, not empty"));
  }
  for (const auto& [selector, minimum] : minimums->items()) {
    if (!SelectorFits(out.select, selector)) {
      return tl::unexpected(Bad(where, fmt::format("selector '{}' does not fit select {}",
                                                   SanitizeUtf8(selector), select)));
    }
    const bool valid =
        minimum.is_string() && (out.select == MinimumSelect::kTrain
                                    ? AllDigits(minimum.get_ref<const std::string&>())
                                    : VersionOf(minimum.get_ref<const std::string&>()).has_value());
    if (!valid) {
      return tl::unexpected(
          Bad(where, fmt::format("the minimum of '{}' is not a {}", SanitizeUtf8(selector),
                                 out.select == MinimumSelect::kTrain ? "number" : "version")));
    }
    out.minimums[selector] = minimum.get<std::string>();
  }
  if (value.contains("available")) {
    const Json& available = value["available"];
    if (!available.is_object()) return tl::unexpected(Bad(where, "\"available\" is not an object"));
    for (const auto& [selector, date] : available.items()) {
      if (!out.minimums.contains(selector)) {
        return tl::unexpected(Bad(
            where,
            fmt::format("\"available\" names '{}', which has no minimum", SanitizeUtf8(selector))));
      }
      auto when = date.is_string() ? ParseIso8601(date.get<std::string>() + "T00:00:00Z")
                                   : Result<WallTime>(Fail(ErrorCode::kInvalidArgument, "x"));
      if (!when) {
        return tl::unexpected(
            Bad(where, fmt::format("the date of '{}' is not YYYY-MM-DD", SanitizeUtf8(selector))));
      }
      out.available[selector] = *when;
    }
  }
  auto advisories = StringList(value, "advisories", where, IsAdvisoryAddress, "an http(s) address");
  if (!advisories) return tl::unexpected(advisories.error());
  out.advisories = std::move(*advisories);
  auto cves = StringList(value, "cves", where, IsCveId, "a CVE id (CVE-YYYY-NNNN)");
  if (!cves) return tl::unexpected(cves.error());
  out.cves = std::move(*cves);
  return out;
}

std::string DateOf(WallTime time) {
  return FormatIso8601(time).substr(0, 10);
}

}  // namespace

bool IsCveId(std::string_view text) {
  return text.size() >= 13 && text.size() <= 32 && text.starts_with("CVE-") &&
         AllDigits(text.substr(4, 4)) && text[8] == '-' && AllDigits(text.substr(9));
}

bool IsAdvisoryAddress(std::string_view text) {
  return (text.starts_with("https://") || text.starts_with("http://")) && IsOneLine(text, 2048) &&
         text.find(' ') == std::string_view::npos;
}

Result<MinimumTable> MinimumTable::Parse(std::string_view json) {
  const auto parsed = ParseJsonObject(json);
  if (!parsed) return tl::unexpected(Bad("the document", parsed.error().message));
  const Json& root = *parsed;
  for (const auto& item : root.items()) {
    if (std::find(kRootKeys.begin(), kRootKeys.end(), item.key()) == kRootKeys.end()) {
      return tl::unexpected(UnknownKey("minimum table", item.key(), 0, kRootKeys));
    }
  }
  if (!root.contains("schema") || root["schema"] != "cmax.audit-minimums/v1") {
    return tl::unexpected(Bad("the document", "schema must be \"cmax.audit-minimums/v1\""));
  }
  MinimumTable table;
  table.sha256_ = Sha256Hex(json);
  const auto generated = root.find("generated");
  auto when = generated != root.end() && generated->is_string()
                  ? ParseIso8601(generated->get<std::string>())
                  : Result<WallTime>(Fail(ErrorCode::kInvalidArgument, "missing"));
  if (!when) {
    return tl::unexpected(Bad("the document", "\"generated\" must be an ISO 8601 UTC time"));
  }
  table.generated_ = *when;
  auto grace = Days(root, "grace_days", 3);
  if (!grace) return tl::unexpected(grace.error());
  table.grace_days_ = *grace;
  auto max_age = Days(root, "max_age_days", 10);
  if (!max_age) return tl::unexpected(max_age.error());
  table.max_age_days_ = *max_age;
  const auto components = root.find("components");
  if (components == root.end() || !components->is_object() || components->empty()) {
    return tl::unexpected(Bad("the document", "\"components\" must be an object, not empty"));
  }
  for (const auto& [name, value] : components->items()) {
    if (std::ranges::find(kGradedComponents, name) == kGradedComponents.end()) {
      const std::vector<std::string_view> graded(kGradedComponents.begin(),
                                                 kGradedComponents.end());
      const auto nearest = NearestKey(name, graded);
      const int line = LineOfJsonKey(json, name);
      return Fail(ErrorCode::kInvalidArgument,
                  "minimum table{}: no check grades a component named '{}'{}; the checks grade {}",
                  line > 0 ? fmt::format(" line {}", line) : "", SanitizeUtf8(name.substr(0, 60)),
                  nearest ? fmt::format(" (did you mean '{}'?)", *nearest) : "",
                  fmt::join(graded, ", "));
    }
    auto component = ParseComponent(value, "component '" + SanitizeUtf8(name) + "'");
    if (!component) return tl::unexpected(component.error());
    table.components_[name] = std::move(*component);
  }
  return table;
}

const MinimumTable& MinimumTable::Builtin() {
  static const MinimumTable kTable = [] {
    auto parsed = Parse(kBuiltinAuditMinimums);
    // The built-in file is checked by the tests; a build with a broken one is a broken build.
    if (!parsed) std::abort();
    return std::move(*parsed);
  }();
  return kTable;
}

const ComponentMinimums* MinimumTable::Find(std::string_view component) const {
  const auto it = components_.find(component);
  return it == components_.end() ? nullptr : &it->second;
}

std::string MinimumTable::AgeNotice(WallTime now) const {
  if (generated_ > now + kDay) {
    return fmt::format(
        "the minimum-version table is dated in the future ({}): the clock or the table is wrong; "
        "versions are not graded against it",
        DateOf(generated_));
  }
  const auto age_days =
      std::chrono::duration_cast<std::chrono::hours>(now - generated_).count() / 24;
  if (age_days <= max_age_days_) return {};
  return fmt::format(
      "the minimum-version table is {} days old (generated {}; older than {} days): fixes "
      "published since are missing from it; give a newer one with --minimums FILE",
      age_days, DateOf(generated_), max_age_days_);
}

std::optional<std::string> MinimumSelector(MinimumSelect select, std::string_view version) {
  const auto parsed = VersionOf(version);
  return parsed ? SelectorOf(select, *parsed) : std::nullopt;
}

std::optional<int> CompareTableVersions(std::string_view a, std::string_view b) {
  const auto va = VersionOf(a);
  const auto vb = VersionOf(b);
  if (!va || !vb) return std::nullopt;
  return CompareVersions(*va, *vb);
}

namespace {

// A version against the minimum of `held_to`, the selector it is held to: at or above passes;
// below is a warning within the grace period after its fix became available, else a failure.
VersionGrade GradeAgainst(const MinimumTable& table, const ComponentMinimums& entry,
                          const std::string& held_to, const Version& version,
                          std::string_view shown, WallTime now) {
  VersionGrade grade;
  const std::string& minimum_text = entry.minimums.at(held_to);
  grade.minimum = minimum_text;
  int cmp = 0;
  if (entry.select == MinimumSelect::kTrain) {
    // train.release.patch, as ConnectX firmware is numbered (28.43.4702).
    const std::vector<std::string_view> fields = Split(version.upstream, '.');
    const auto patch = fields.size() >= 3 ? LeadingNumber(fields.back()) : std::nullopt;
    if (!patch) {
      grade.reason = fmt::format("'{}' has no patch number to compare", shown);
      return grade;
    }
    const uint64_t minimum = std::strtoull(minimum_text.c_str(), nullptr, 10);
    cmp = *patch < minimum ? -1 : 0;
  } else {
    // A package's epoch (docker-ce's "5:") says nothing about the upstream release the
    // advisories name: against a minimum without one, it is not compared.
    const Version minimum = *VersionOf(minimum_text);
    Version seen = version;
    if (minimum.epoch == 0) seen.epoch = 0;
    cmp = CompareVersions(seen, minimum);
  }
  if (cmp >= 0) {
    grade.status = CheckStatus::kPass;
    grade.reason = fmt::format("{} is at or above the minimum {}", shown, minimum_text);
    return grade;
  }
  const auto available = entry.available.find(held_to);
  if (available != entry.available.end()) {
    const WallTime enforced = available->second + kDay * table.GraceDays();
    if (now < available->second) {
      grade.status = CheckStatus::kPass;
      grade.reason = fmt::format(
          "{} is below {}, a minimum not in effect until its fix is "
          "available ({})",
          shown, minimum_text, DateOf(available->second));
      return grade;
    }
    if (now < enforced) {
      grade.status = CheckStatus::kWarn;
      grade.reason = fmt::format(
          "{} is below the minimum {}: in the grace period since the fix "
          "became available on {}; a failure from {}",
          shown, minimum_text, DateOf(available->second), DateOf(enforced));
      return grade;
    }
  }
  grade.status = CheckStatus::kFail;
  grade.reason = fmt::format("{} is below the minimum {}", shown, minimum_text);
  return grade;
}

}  // namespace

VersionGrade GradeVersion(const MinimumTable& table, std::string_view component,
                          std::string_view observed, WallTime now) {
  VersionGrade grade;
  if (table.Generated() > now + kDay) {
    grade.reason = table.AgeNotice(now);
    return grade;
  }
  const ComponentMinimums* entry = table.Find(component);
  if (entry == nullptr) {
    grade.reason = fmt::format("the minimum table has no entry for {}", component);
    return grade;
  }
  if (entry->select == MinimumSelect::kModel) {
    grade.reason = fmt::format("the minimum of {} depends on the hardware it drives", component);
    return grade;
  }
  const std::string shown = SanitizeUtf8(observed.substr(0, 80));
  const auto version = VersionOf(observed);
  const auto selector = version ? SelectorOf(entry->select, *version) : std::nullopt;
  if (!version || !selector) {
    grade.reason = fmt::format("'{}' is not a version cmax understands", shown);
    return grade;
  }
  const auto compare_selectors = [](std::string_view a, std::string_view b) {
    return CompareVersionPart(a, b) < 0;
  };
  std::string held_to = *selector;
  auto it = entry->minimums.find(*selector);
  if (it == entry->minimums.end()) {
    std::vector<std::string_view> listed;
    for (const auto& [name, minimum] : entry->minimums) listed.push_back(name);
    std::sort(listed.begin(), listed.end(), compare_selectors);
    if (compare_selectors(listed.back(), *selector)) {
      grade.status = CheckStatus::kPass;
      grade.reason = fmt::format(
          "{} is on branch {}, newer than every branch the table lists "
          "(the newest: {})",
          shown, *selector, listed.back());
      return grade;
    }
    if (entry->unlisted == UnlistedBranch::kUnknown) {
      grade.reason =
          fmt::format("the table lists no minimum for branch {} of {}", *selector, component);
      return grade;
    }
    const auto next = std::find_if(listed.begin(), listed.end(), [&](std::string_view name) {
      return compare_selectors(*selector, name);
    });
    if (next == listed.end()) {  // cannot happen with canonical selectors; never guess
      grade.reason =
          fmt::format("the table lists no minimum for branch {} of {}", *selector, component);
      return grade;
    }
    held_to = std::string(*next);
    it = entry->minimums.find(held_to);
  }
  // A version that cannot be compared stays UNKNOWN even on a branch no fix covers.
  grade = GradeAgainst(table, *entry, held_to, *version, shown, now);
  if (grade.status != CheckStatus::kUnknown && held_to != *selector) {
    grade.status = CheckStatus::kFail;
    grade.reason = fmt::format(
        "{} is on branch {}, which no fix covers; the next maintained "
        "branch, {}, needs {}",
        shown, *selector, held_to, it->second);
  }
  return grade;
}

VersionGrade GradeVersionForModels(const MinimumTable& table, std::string_view component,
                                   const std::vector<std::string>& models,
                                   std::string_view observed, WallTime now) {
  VersionGrade grade;
  if (table.Generated() > now + kDay) {
    grade.reason = table.AgeNotice(now);
    return grade;
  }
  const ComponentMinimums* entry = table.Find(component);
  if (entry == nullptr || entry->select != MinimumSelect::kModel) {
    grade.reason = fmt::format("the minimum table has no entry by model for {}", component);
    return grade;
  }
  const std::string shown = SanitizeUtf8(observed.substr(0, 80));
  const auto version = VersionOf(observed);
  if (!version) {
    grade.reason = fmt::format("'{}' is not a version cmax understands", shown);
    return grade;
  }
  // Each listed model's minimum, the worst grade deciding (a failure, then a warning, then a
  // pass; between equals the higher minimum); the unlisted models named. At most 64 models are
  // weighed: a node has a few.
  constexpr size_t kMaxModels = 64;
  const auto rank = [](CheckStatus status) {
    return status == CheckStatus::kFail ? 3 : status == CheckStatus::kWarn ? 2 : 1;
  };
  std::set<std::string> seen;
  std::vector<std::string> unlisted;
  std::optional<VersionGrade> worst;
  std::string decided_by;
  for (const std::string& model : models) {
    if (seen.size() >= kMaxModels) break;
    if (!seen.insert(model).second) continue;
    const auto it = entry->minimums.find(model);
    if (it == entry->minimums.end()) {
      unlisted.push_back(SanitizeUtf8(model.substr(0, 32)));
      continue;
    }
    VersionGrade graded = GradeAgainst(table, *entry, model, *version, shown, now);
    const bool worse =
        !worst || rank(graded.status) > rank(worst->status) ||
        (rank(graded.status) == rank(worst->status) &&
         CompareVersions(*VersionOf(graded.minimum), *VersionOf(worst->minimum)) > 0);
    if (worse) {
      worst = std::move(graded);
      decided_by = model;
    }
  }
  if (!worst) {
    grade.reason = fmt::format("the table lists no minimum of {} for {}", component,
                               unlisted.empty() ? std::string("no model") : Join(unlisted, ", "));
    return grade;
  }
  grade = std::move(*worst);
  grade.reason += fmt::format(" ({}'s)", decided_by);
  if (grade.status == CheckStatus::kPass && !unlisted.empty()) {
    grade.status = CheckStatus::kUnknown;
    grade.reason += fmt::format("; the table lists no minimum for {}", Join(unlisted, ", "));
  }
  return grade;
}

std::string MinimumTableText(const MinimumTable& table, WallTime now) {
  std::string out = fmt::format("minimum-version table generated {} (sha256 {})\n",
                                FormatIso8601(table.Generated()), table.Sha256());
  if (const std::string notice = table.AgeNotice(now); !notice.empty()) {
    out += "NOTE: " + notice + "\n";
  }
  out += fmt::format(
      "grace period {} days after a fix becomes available; older than {} days is "
      "said loudly\n",
      table.GraceDays(), table.MaxAgeDays());
  static constexpr std::string_view kSelect[] = {
      "one minimum", "by branch", "by major.minor branch", "by firmware train", "by GPU model"};
  for (const auto& [name, component] : table.Components()) {
    out += fmt::format("{} ({}", name, kSelect[static_cast<int>(component.select)]);
    if (component.select == MinimumSelect::kModel) {
      out += "; each model present, the worst grade deciding; an unlisted model is UNKNOWN";
    } else if (component.select != MinimumSelect::kWhole) {
      out += component.unlisted == UnlistedBranch::kFail
                 ? "; an unlisted older branch fails against the next one"
                 : "; an unlisted older branch is UNKNOWN";
    }
    out += ")\n";
    for (const auto& [selector, minimum] : component.minimums) {
      out += selector == "*" ? fmt::format("  >= {}", minimum)
                             : fmt::format("  {:<8} >= {}", selector, minimum);
      if (const auto it = component.available.find(selector); it != component.available.end()) {
        out += "  (fix available " + DateOf(it->second) + ")";
      }
      out += "\n";
    }
    for (const std::string& cve : component.cves) out += "  " + cve + "\n";
    for (const std::string& link : component.advisories) out += "  " + link + "\n";
  }
  return out;
}

}  // namespace cmax::audit
