// libFuzzer target for what a rating reads from people: a rubric (--rubric) and an attestation
// (--attestation), and what the report reads back from a store anyone could have edited (a
// run's `rating` evidence). No parser may crash, hang or throw; a rubric that parses must rate
// an empty store and a store of passes, and an attestation that parses must rate with the
// built-in rubric, each to a tier the rubric names, with an SLA risk of finite figures; the
// page and the Markdown of a run whose rating is the input must render with no script in it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "audit/catalogue.hpp"
#include "core/clock.hpp"
#include "rate/attestation.hpp"
#include "rate/rating.hpp"
#include "rate/rubric.hpp"
#include "report/render.hpp"

namespace {

void MustNameATier(const cmax::rate::Rubric& rubric, const cmax::rate::Rating& rating) {
  const bool named = rating.tier == rubric.Below() || rating.tier == rubric.Untestable() ||
                     std::ranges::any_of(rubric.Tiers(), [&](const auto& tier) {
                       return tier.first == rating.tier;
                     });
  if (!named) std::abort();
  if (rating.score && (*rating.score < 0 || *rating.score > 100.0000001)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cmax;
  using namespace cmax::rate;
  const std::string input(reinterpret_cast<const char*>(data), size);
  static const RunRecord passes = [] {
    RunRecord record;
    record.run.id = 1;
    for (const audit::CheckSpec& check : audit::AuditCatalogue::Builtin().Checks()) {
      Finding finding;
      finding.check_id = check.id;
      finding.status = CheckStatus::kPass;
      record.findings.push_back(finding);
    }
    record.metrics = {{"reliability.detect", {}, 60, "s"}};
    return record;
  }();
  if (auto rubric = Rubric::Parse(input)) {
    MustNameATier(*rubric, RateEvidence(*rubric, {}));
    MustNameATier(*rubric, RateEvidence(*rubric, {{&passes}, nullptr}));
  }
  const WallTime now = *ParseIso8601("2026-12-02T00:00:00Z");
  if (auto attestation = ParseAttestation(input, now)) {
    const Rating rating = RateEvidence(Rubric::Builtin(), {{&passes}, &*attestation});
    MustNameATier(Rubric::Builtin(), rating);
    if (rating.sla) {
      const SlaRisk& risk = rating.sla->risk;
      if (!std::isfinite(risk.credit_usd_per_year) || !std::isfinite(risk.breaches_per_year) ||
          risk.breach_probability < 0 || risk.breach_probability > 1 ||
          risk.expected_credit_share < 0 || risk.expected_credit_share > 1) {
        std::abort();
      }
    }
  }
  RunRecord stored;
  stored.run.id = 2;
  stored.evidence = {{"rating", input}};
  for (const std::string& page : {report::RenderHtml(stored), report::RenderMarkdown(stored)}) {
    if (page.find("<script") != std::string::npos) std::abort();
  }
  return 0;
}
