// The provider's attestation (YAML, schema cmax.attestation/v1): what a tenant cannot measure
// (security reports, SLA terms, prices, delivery dates, partnerships, and isolation only the
// provider can vouch for), with who said it and when. Parsed strictly (an unknown key, a date
// that is not YYYY-MM-DD, a price that is not a number: an error naming the line), then reduced
// to the facts a rubric scores (AttestationFacts). The file's SHA-256 goes into the rating.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "rate/sla.hpp"

namespace cmax::rate {

struct Attestation {
  std::string provider;
  std::string source;  // who attests, and how ("security team, email of 2026-11-30")
  WallTime date{};     // when it was attested
  std::string sha256;
  std::string
      yaml;  // the file as given: an evaluation keeps it with its run (kAttestationEvidence)
  // Fact -> value (true/false or a number); a fact the file says nothing about is absent.
  std::map<std::string, nlohmann::json> facts;
  std::vector<std::string> notes;  // what the reader should know: a stale attestation, ...
  // The SLA's terms: a rubric template by name (`sla: {template: gold}`), or written out.
  std::string sla_template;
  std::optional<SlaTerms> sla_terms;
};

// The evidence an evaluation keeps its attestation in, so that its run re-rates alike:
// {"path": ..., "sha256": ..., "yaml": ...}.
inline constexpr const char* kAttestationEvidence = "evaluation.attestation";

// `now` judges staleness (an attestation over a year old is noted) and refuses a future date.
Result<Attestation> ParseAttestation(std::string_view yaml, WallTime now);

// The facts cmax derives from an attestation, by name:
//   security.soc2_or_iso27001  a SOC 2 Type II report whose period ended within the last 15
//                              months, or an ISO 27001 certificate issued within the last 3 years
//                              (judged today, not on the attestation's date)
//   security.pentest_covers_fabric, reliability.sla_partial_failures, partnerships.nvidia_ncp,
//   isolation.nvlink_domain_exclusive, isolation.pcie_isolation, isolation.ufm_secured,
//   isolation.ib_sm_key, isolation.ib_sa_key             yes/no as attested
//   pricing.published          a GPU-hour and a storage price are given
//   pricing.gpu_hour_usd, pricing.egress_gb_usd  as attested
//   availability.delivery_late_days  delivered minus promised, in days
const std::vector<std::string>& AttestationFacts();

}  // namespace cmax::rate
