// The audit's judgement: the catalogue's checks graded against the evidence collected from a
// target. Every check selected yields one finding, whatever happened (nothing is dropped):
//   N/A (SKIP) with the reason when it does not apply to the target, or needs a side effect
//     that was not allowed;
//   UNKNOWN with the reason when its evidence was not collected (a node that did not answer, a
//     probe past its deadline, a check this version cannot collect yet);
//   else PASS, or what its severity says a finding is: MISSING and VERSION are FAIL, CONFIG is
//     WARN, CRITICAL is FAIL at critical severity; ATTEST where only the provider can say.
// Evidence keys are the catalogue's; a key present with the value null means "looked, absent"
// (no nvcc on this host), a key missing means "not collected". Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/catalogue.hpp"
#include "audit/minimums.hpp"
#include "core/clock.hpp"
#include "core/run_record.hpp"

namespace cmax::audit {

using AuditEvidence = std::map<std::string, nlohmann::json, std::less<>>;

struct GradeContext {
  AuditTarget target = AuditTarget::kStandalone;
  const MinimumTable* minimums = nullptr;
  WallTime now{};
  bool allow_side_effects = false;
  // Why keys the target could not read were not read (a Kubernetes node's, where a pod would be
  // needed or the API refused): an UNKNOWN for want of evidence names the first of its keys
  // found here, else `unread_otherwise` (when not empty). Null: the UNKNOWN says "not
  // collected" only.
  const std::map<std::string, std::string>* unread = nullptr;
  std::string_view unread_otherwise;
};

// One finding per check, in the order given; check ids as the catalogue's.
std::vector<Finding> GradeChecks(const std::vector<const CheckSpec*>& checks,
                                 const AuditEvidence& evidence, const GradeContext& context);

// The checks this version of cmax has a rule for; the others are UNKNOWN when they apply.
std::vector<std::string> GradableChecks();

}  // namespace cmax::audit
