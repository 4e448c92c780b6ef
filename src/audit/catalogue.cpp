#include "audit/catalogue.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "core/json_read.hpp"
#include "core/keys.hpp"
#include "core/strings.hpp"

namespace cmax::audit {

// Generated at build time from data/audit_catalogue.json (src/CMakeLists.txt).
extern const char* const kBuiltinAuditCatalogue;

namespace {

using Json = nlohmann::json;

constexpr std::array<std::pair<AuditTarget, std::string_view>, 5> kTargets = {{
    {AuditTarget::kSlurm, "slurm"},
    {AuditTarget::kKubernetes, "kubernetes"},
    {AuditTarget::kStandalone, "standalone"},
    {AuditTarget::kVm, "vm"},
    {AuditTarget::kContainer, "container"},
}};

constexpr std::array<std::pair<AuditSeverity, std::string_view>, 4> kSeverities = {{
    {AuditSeverity::kMissing, "MISSING"},
    {AuditSeverity::kVersion, "VERSION"},
    {AuditSeverity::kConfig, "CONFIG"},
    {AuditSeverity::kCritical, "CRITICAL"},
}};

const std::vector<std::string_view> kRootKeys = {"schema", "note", "profiles", "checks"};
const std::vector<std::string_view> kProfileKeys = {"name", "title"};
const std::vector<std::string_view> kCheckKeys = {
    "id",        "title",       "profile",   "targets", "severity", "evidence",
    "predicate", "remediation", "reproduce", "links",   "public",   "side_effect"};
const std::vector<std::string_view> kPublicKeys = {"number", "key", "relation", "difference"};

// Every check in the public audit's catalogue has a number in 1..kPublicChecks.
constexpr int kPublicChecks = 61;

Error Bad(std::string_view where, std::string_view what) {
  return Error{ErrorCode::kInvalidArgument,
               "audit catalogue: " + std::string(where) + ": " + std::string(what)};
}

Result<void> KnownKeys(const Json& object, const std::vector<std::string_view>& known,
                       std::string_view where) {
  for (const auto& item : object.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      return tl::unexpected(
          UnknownKey("audit catalogue " + std::string(where), item.key(), 0, known));
    }
  }
  return {};
}

// A string field that must be there and not be empty.
Result<std::string> Text(const Json& object, const char* key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return tl::unexpected(Bad(where, fmt::format("\"{}\" must be a non-empty string", key)));
  }
  return it->get<std::string>();
}

// A list of non-empty strings; `required`: it must have one at least.
Result<std::vector<std::string>> Texts(const Json& object, const char* key, std::string_view where,
                                       bool required) {
  std::vector<std::string> out;
  const auto it = object.find(key);
  if (it == object.end() && !required) return out;
  if (it == object.end() || !it->is_array() || (required && it->empty())) {
    return tl::unexpected(Bad(where, fmt::format("\"{}\" must be a list of strings{}", key,
                                                 required ? ", not empty" : "")));
  }
  for (const Json& value : *it) {
    if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
      return tl::unexpected(Bad(where, fmt::format("\"{}\" holds a value that is not a "
                                                   "non-empty string",
                                                   key)));
    }
    out.push_back(value.get<std::string>());
  }
  return out;
}

Result<PublicCheck> ParsePublic(const Json& value, std::string_view where) {
  if (!value.is_object()) return tl::unexpected(Bad(where, "\"public\" must be an object"));
  if (auto ok = KnownKeys(value, kPublicKeys, std::string(where) + " public"); !ok) {
    return tl::unexpected(ok.error());
  }
  PublicCheck out;
  const auto number = value.find("number");
  if (number == value.end() || !number->is_number_integer() || number->get<int64_t>() < 1 ||
      number->get<int64_t>() > kPublicChecks) {
    return tl::unexpected(Bad(
        where, fmt::format("public \"number\" must be a whole number in [1, {}]", kPublicChecks)));
  }
  out.number = number->get<int>();
  auto key = Text(value, "key", std::string(where) + " public");
  if (!key) return tl::unexpected(key.error());
  out.key = std::move(*key);
  auto relation = Text(value, "relation", std::string(where) + " public");
  if (!relation) return tl::unexpected(relation.error());
  if (std::ranges::find(kPublicRelations, *relation) == std::end(kPublicRelations)) {
    return tl::unexpected(Bad(where, fmt::format("public \"relation\" must be same, stricter, "
                                                 "different or not yet, not '{}'",
                                                 SanitizeUtf8(*relation))));
  }
  out.relation = std::move(*relation);
  auto difference = Text(value, "difference", std::string(where) + " public");
  if (!difference) return tl::unexpected(difference.error());
  out.difference = std::move(*difference);
  return out;
}

Result<CheckSpec> ParseCheck(const Json& value, size_t index,
                             const std::set<std::string, std::less<>>& profiles) {
  std::string where = fmt::format("check {}", index + 1);
  if (!value.is_object()) return tl::unexpected(Bad(where, "not an object"));
  CheckSpec check;
  auto id = Text(value, "id", where);
  if (!id) return tl::unexpected(id.error());
  check.id = std::move(*id);
  where = "check '" + SanitizeUtf8(check.id) + "'";
  if (auto ok = KnownKeys(value, kCheckKeys, where); !ok) return tl::unexpected(ok.error());
  for (auto [field, key] : {std::pair{&check.title, "title"},
                            {&check.profile, "profile"},
                            {&check.predicate, "predicate"},
                            {&check.remediation, "remediation"},
                            {&check.reproduce, "reproduce"}}) {
    auto text = Text(value, key, where);
    if (!text) return tl::unexpected(text.error());
    *field = std::move(*text);
  }
  if (!profiles.contains(check.profile)) {
    return tl::unexpected(Bad(where, "profile '" + SanitizeUtf8(check.profile) +
                                         "' is not one of the catalogue's profiles"));
  }
  if (!check.id.starts_with(check.profile + ".") || check.id.size() == check.profile.size() + 1) {
    return tl::unexpected(Bad(where, "the id must be '" + check.profile + ".NAME'"));
  }
  auto severity = Text(value, "severity", where);
  if (!severity) return tl::unexpected(severity.error());
  auto parsed_severity = ParseAuditSeverity(*severity);
  if (!parsed_severity) return tl::unexpected(Bad(where, parsed_severity.error().message));
  check.severity = *parsed_severity;
  auto targets = Texts(value, "targets", where, true);
  if (!targets) return tl::unexpected(targets.error());
  for (const std::string& name : *targets) {
    auto target = ParseTarget(name);
    if (!target) return tl::unexpected(Bad(where, target.error().message));
    if (std::find(check.targets.begin(), check.targets.end(), *target) != check.targets.end()) {
      return tl::unexpected(Bad(where, "target '" + name + "' is listed twice"));
    }
    check.targets.push_back(*target);
  }
  auto evidence = Texts(value, "evidence", where, true);
  if (!evidence) return tl::unexpected(evidence.error());
  check.evidence = std::move(*evidence);
  auto links = Texts(value, "links", where, false);
  if (!links) return tl::unexpected(links.error());
  for (const std::string& link : *links) {
    if (!link.starts_with("https://") && !link.starts_with("http://")) {
      return tl::unexpected(Bad(where, "link '" + SanitizeUtf8(link) + "' is not an http(s) URL"));
    }
  }
  check.links = std::move(*links);
  if (value.contains("side_effect")) {
    auto side_effect = Text(value, "side_effect", where);
    if (!side_effect) return tl::unexpected(side_effect.error());
    check.side_effect = std::move(*side_effect);
  }
  if (value.contains("public")) {
    auto public_check = ParsePublic(value["public"], where);
    if (!public_check) return tl::unexpected(public_check.error());
    check.public_check = std::move(*public_check);
  }
  return check;
}

}  // namespace

std::string_view TargetName(AuditTarget target) {
  for (const auto& [value, name] : kTargets) {
    if (value == target) return name;
  }
  return "standalone";
}

Result<AuditTarget> ParseTarget(std::string_view name) {
  for (const auto& [value, known] : kTargets) {
    if (known == name) return value;
  }
  return Fail(ErrorCode::kInvalidArgument,
              "unknown target '{}' (slurm, kubernetes, standalone, vm or container)",
              SanitizeUtf8(name));
}

std::string_view AuditSeverityName(AuditSeverity severity) {
  for (const auto& [value, name] : kSeverities) {
    if (value == severity) return name;
  }
  return "CONFIG";
}

Result<AuditSeverity> ParseAuditSeverity(std::string_view name) {
  for (const auto& [value, known] : kSeverities) {
    if (known == name) return value;
  }
  return Fail(ErrorCode::kInvalidArgument,
              "unknown severity '{}' (MISSING, VERSION, CONFIG or CRITICAL)", SanitizeUtf8(name));
}

bool CheckSpec::AppliesTo(AuditTarget target) const {
  return std::find(targets.begin(), targets.end(), target) != targets.end();
}

Result<AuditCatalogue> AuditCatalogue::Parse(std::string_view json) {
  auto object = ParseJsonObject(json);
  if (!object) return tl::unexpected(Bad("the document", object.error().message));
  const Json& root = *object;
  if (auto ok = KnownKeys(root, kRootKeys, "root"); !ok) return tl::unexpected(ok.error());
  if (!root.contains("schema") || root["schema"] != "cmax.audit-catalogue/v1") {
    return tl::unexpected(Bad("the document", "schema must be \"cmax.audit-catalogue/v1\""));
  }
  AuditCatalogue catalogue;
  std::set<std::string, std::less<>> profile_names;
  const auto profiles = root.find("profiles");
  if (profiles == root.end() || !profiles->is_array() || profiles->empty()) {
    return tl::unexpected(Bad("the document", "\"profiles\" must be a list, not empty"));
  }
  for (size_t i = 0; i < profiles->size(); ++i) {
    const Json& value = (*profiles)[i];
    const std::string where = fmt::format("profile {}", i + 1);
    if (!value.is_object()) return tl::unexpected(Bad(where, "not an object"));
    if (auto ok = KnownKeys(value, kProfileKeys, where); !ok) return tl::unexpected(ok.error());
    ProfileSpec profile;
    auto name = Text(value, "name", where);
    if (!name) return tl::unexpected(name.error());
    auto title = Text(value, "title", where);
    if (!title) return tl::unexpected(title.error());
    profile.name = std::move(*name);
    profile.title = std::move(*title);
    // "security" names versions and isolation together; no profile may take it.
    if (profile.name == "security" || !profile_names.insert(profile.name).second) {
      return tl::unexpected(
          Bad(where, "profile name '" + SanitizeUtf8(profile.name) + "' is taken"));
    }
    catalogue.profiles_.push_back(std::move(profile));
  }
  const auto checks = root.find("checks");
  if (checks == root.end() || !checks->is_array() || checks->empty()) {
    return tl::unexpected(Bad("the document", "\"checks\" must be a list, not empty"));
  }
  std::set<std::string, std::less<>> ids;
  std::set<int> public_numbers;
  for (size_t i = 0; i < checks->size(); ++i) {
    auto check = ParseCheck((*checks)[i], i, profile_names);
    if (!check) return tl::unexpected(check.error());
    if (!ids.insert(check->id).second) {
      return tl::unexpected(Bad("check '" + SanitizeUtf8(check->id) + "'", "the id is taken"));
    }
    if (check->public_check && !public_numbers.insert(check->public_check->number).second) {
      return tl::unexpected(
          Bad("check '" + SanitizeUtf8(check->id) + "'",
              fmt::format("public number {} is taken", check->public_check->number)));
    }
    catalogue.checks_.push_back(std::move(*check));
  }
  return catalogue;
}

const AuditCatalogue& AuditCatalogue::Builtin() {
  static const AuditCatalogue kCatalogue = [] {
    auto parsed = Parse(kBuiltinAuditCatalogue);
    // The built-in file is checked by the tests; a build with a broken one is a broken build.
    if (!parsed) std::abort();
    return std::move(*parsed);
  }();
  return kCatalogue;
}

Result<std::vector<const CheckSpec*>> AuditCatalogue::Select(std::string_view profile) const {
  const bool security = profile == "security";
  const bool known = profile.empty() || security ||
                     std::any_of(profiles_.begin(), profiles_.end(),
                                 [&](const ProfileSpec& p) { return p.name == profile; });
  if (!known) {
    std::string names = "security";
    for (const ProfileSpec& p : profiles_) names += ", " + p.name;
    return Fail(ErrorCode::kInvalidArgument, "unknown profile '{}' (known: {})",
                SanitizeUtf8(profile), names);
  }
  std::vector<const CheckSpec*> out;
  for (const CheckSpec& check : checks_) {
    const bool selected =
        profile.empty() || check.profile == profile ||
        (security && (check.profile == "versions" || check.profile == "isolation"));
    if (selected) out.push_back(&check);
  }
  return out;
}

}  // namespace cmax::audit
