// libFuzzer target for what the audit reads from other machines and other people: evidence
// (from nodes, stored runs, other cmax versions) graded by every rule of the catalogue, a
// minimum table, advisories for `minimums build`, dcgmi's diagnostic document, an NCCL topology
// file and an egress target. None may crash, hang or throw past its caller; a built table must
// parse back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/catalogue.hpp"
#include "audit/grading.hpp"
#include "audit/minimums.hpp"
#include "audit/minimums_build.hpp"
#include "audit/nccl_topology.hpp"
#include "audit/side_effects.hpp"
#include "core/clock.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::json;
  using namespace cmax;
  using namespace cmax::audit;
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)ParseEgressTarget(input);
  (void)ParseDcgmDiag(input);
  (void)NcclTopologyXmlProblem(input);
  (void)MinimumTable::Parse(input);
  const WallTime now = *ParseIso8601("2026-12-01T00:00:00Z");
  if (auto built = BuildMinimums({{.name = "fuzz.json", .text = input}}, now); built) {
    if (!MinimumTable::Parse(built->table.dump())) std::abort();
  }
  const json doc = json::parse(input, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return 0;
  AuditEvidence evidence;
  for (const auto& [key, value] : doc.items()) evidence[key] = value;
  static const auto checks = AuditCatalogue::Builtin().Select("");
  if (!checks) std::abort();
  for (const AuditTarget target : {AuditTarget::kStandalone, AuditTarget::kSlurm,
                                   AuditTarget::kKubernetes, AuditTarget::kVm}) {
    const GradeContext context{.target = target,
                               .minimums = &MinimumTable::Builtin(),
                               .now = now,
                               .allow_side_effects = true};
    if (GradeChecks(*checks, evidence, context).size() != checks->size()) std::abort();
  }
  return 0;
}
