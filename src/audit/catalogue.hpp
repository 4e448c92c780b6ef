// The audit's checks as data (data/audit_catalogue.json, built into the binary): for each check
// its id, title, profile, the targets it applies to, severity, the evidence it reads, the
// predicate in words, the remediation, a one-line command that reproduces the observation, its
// references, the side effect it needs (none for nearly all: the audit is read-only unless told
// otherwise), and the check of the public `cmax audit` it covers. `cmax audit --show` lists it
// and the README's check table is generated from it, so the three cannot disagree. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax::audit {

// Where a check can run. The public audit's "standalone" harness covers the last three.
enum class AuditTarget { kSlurm, kKubernetes, kStandalone, kVm, kContainer };
std::string_view TargetName(AuditTarget target);  // "slurm", "kubernetes", ...
Result<AuditTarget> ParseTarget(std::string_view name);

// How bad a finding is, as the public audit grades it: a missing component, a version below
// its minimum, a configuration, or a critical isolation failure.
enum class AuditSeverity { kMissing, kVersion, kConfig, kCritical };
std::string_view AuditSeverityName(AuditSeverity severity);  // "MISSING", ...
Result<AuditSeverity> ParseAuditSeverity(std::string_view name);

struct PublicCheck {
  int number = 0;   // its row in the public audit's catalogue (1-61)
  std::string key;  // its key there, e.g. "securityVersions.nvidiaDriver.status"
  // How cmax's check compares with it: "same" (evidence and predicate), "stricter" (fails or is
  // UNKNOWN where it passes), "different" (other evidence or predicate), "not yet" (no rule,
  // or a side effect cmax does not take); and in one sentence how.
  std::string relation;
  std::string difference;
};
inline constexpr const char* kPublicRelations[] = {"same", "stricter", "different", "not yet"};

struct CheckSpec {
  std::string id;  // "<profile>.<name>", e.g. "versions.nvidia-driver"
  std::string title;
  std::string profile;
  std::vector<AuditTarget> targets;
  AuditSeverity severity = AuditSeverity::kConfig;
  std::vector<std::string> evidence;  // evidence keys it reads
  std::string predicate;              // when it passes, in words
  std::string remediation;
  std::string reproduce;  // one shell line that shows what the check saw
  std::vector<std::string> links;
  std::string side_effect;  // empty: read-only
  std::optional<PublicCheck> public_check;
  bool AppliesTo(AuditTarget target) const;
};

struct ProfileSpec {
  std::string name;  // "versions"
  std::string title;
};

class AuditCatalogue {
 public:
  // A catalogue in the data/audit_catalogue.json shape (schema cmax.audit-catalogue/v1). Strict:
  // an unknown key, a missing field, a duplicate id or public number, or an id outside its
  // profile is an error that names the check.
  static Result<AuditCatalogue> Parse(std::string_view json);
  // The catalogue built into the binary.
  static const AuditCatalogue& Builtin();

  const std::vector<ProfileSpec>& Profiles() const { return profiles_; }
  const std::vector<CheckSpec>& Checks() const { return checks_; }
  // The checks of a profile in catalogue order; "security" is versions and isolation; empty
  // selects every check. An unknown profile is kInvalidArgument naming the known ones.
  Result<std::vector<const CheckSpec*>> Select(std::string_view profile) const;

 private:
  std::vector<ProfileSpec> profiles_;
  std::vector<CheckSpec> checks_;
};

}  // namespace cmax::audit
