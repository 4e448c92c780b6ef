// SLA risk against worked examples computed by hand here (rate/sla.hpp gives the model), the
// terms' validation, and the SLA risk in a rating: the attested terms or a rubric template, a
// measured outage preferred to the rubric's assumption, and why there is none.
#include "rate/sla.hpp"

#include <cmath>
#include <gtest/gtest.h>

#include "rate/rating.hpp"

namespace cmax::rate {
namespace {

SlaTerms Gold(SlaTerms::Unit unit = SlaTerms::Unit::kNode) {
  return {.name = "gold",
          .unit = unit,
          .uptime_pct = 99.9,
          .credits = {{99.9, 10}, {99.0, 25}, {95.0, 100}}};
}

// P(N >= k), N ~ Poisson(m), written out term by term.
double Tail(double m, int k) {
  double below = 0;
  double term = std::exp(-m);
  for (int n = 0; n < k; ++n) {
    below += term;
    term *= m / (n + 1);
  }
  return 1 - below;
}

TEST(Sla, PoissonTail) {
  EXPECT_DOUBLE_EQ(PoissonTail(0.5, 0), 1);
  EXPECT_DOUBLE_EQ(PoissonTail(0, 3), 0);
  EXPECT_NEAR(PoissonTail(0.2336, 1), 1 - std::exp(-0.2336), 1e-12);
  EXPECT_NEAR(PoissonTail(3, 4), Tail(3, 4), 1e-12);
  EXPECT_NEAR(PoissonTail(800, 1), 1, 1e-12);  // a large mean does not underflow
  // Ramanujan: P(N < m) = 1/2 - P(N = m)/3 nearly, P(N = 800) = 1/sqrt(2 pi 800) = 0.014105.
  EXPECT_NEAR(PoissonTail(800, 800), 0.5 + 0.014105 / 3, 1e-4);
  // Tails far under 1e-16 keep their precision (a rack's): P(N >= 2) = m^2/2 - m^3/3 + m^4/8 ...
  const double m = 2.9e-5;
  EXPECT_NEAR(PoissonTail(m, 2) / (m * m / 2 - m * m * m / 3 + m * m * m * m / 8), 1, 1e-9);
  // P(N >= 30) for m = 1: e^-1 (1/30! + 1/31! + ...), 1.37e-33, not rounding noise.
  const double first = std::exp(-1 - std::lgamma(31.0));
  EXPECT_NEAR(
      PoissonTail(1, 30) / (first * (1 + 1.0 / 31 + 1.0 / (31 * 32) + 1.0 / (31 * 32 * 33))), 1,
      2e-6);
}

// A month at exactly the threshold is not below it: 0.73 h allowed at 99.9%, one outage of
// 0.73 h is not a breach, two are.
TEST(Sla, AMonthAtTheThresholdIsNotBelowIt) {
  const SlaRisk r = ComputeSlaRisk({.terms = Gold(), .mtbf_gpu_hours = 25000, .outage_h = 0.73});
  EXPECT_EQ(r.breach_at, 2);
}

// An HGX node: 8 GPUs at an MTBF of 25,000 GPU-hours fail 8 * 730 / 25,000 = 0.2336 times a
// month. Each failure costs D = 2 h. 99.9% allows 0.73 h: one outage breaches it (k = 1).
// 99.0% allows 7.3 h: k = floor(7.3 / 2) + 1 = 4. 95.0% allows 36.5 h: k = 19.
TEST(Sla, NodeWorkedExample) {
  const SlaRisk r = ComputeSlaRisk({.terms = Gold(),
                                    .mtbf_gpu_hours = 25000,
                                    .outage_h = 2,
                                    .gpu_hour_usd = 2,
                                    .fleet_gpus = 1024});
  const double m = 0.2336;
  EXPECT_DOUBLE_EQ(r.unit_gpus, 8);
  EXPECT_DOUBLE_EQ(r.units, 128);
  EXPECT_NEAR(r.outages_per_unit_month, m, 1e-12);
  EXPECT_DOUBLE_EQ(r.outage_h, 2);
  EXPECT_EQ(r.breach_at, 1);
  const double p1 = 1 - std::exp(-m);                                        // 0.20832
  const double p4 = 1 - std::exp(-m) * (1 + m + m * m / 2 + m * m * m / 6);  // 1.03e-4
  EXPECT_NEAR(r.breach_probability, p1, 1e-12);
  EXPECT_NEAR(r.breaches_per_year, 128 * 12 * p1, 1e-9);  // 320.0
  // Credits: 10% from one outage, 25% from four, 100% from nineteen (next to nothing).
  const double share = 0.10 * p1 + 0.15 * p4 + 0.75 * Tail(m, 19);
  EXPECT_NEAR(r.expected_credit_share, share, 1e-12);
  const double contract = 128 * 12 * 8 * 730 * 2.0;  // 17,940,480 USD
  EXPECT_DOUBLE_EQ(r.contract_usd_per_year, contract);
  EXPECT_NEAR(r.credit_usd_per_year, contract * share, 1e-6);  // about 374,016 USD
  EXPECT_NEAR(r.credit_usd_per_year, 374'016, 1);
}

// The same fleet as NVL72 racks: 18 trays of 4 GPUs, down only when 3 trays are down at once.
// A tray fails 4 / 25,000 = 1.6e-4 times an hour and is down p = 1.6e-4 * 2 = 3.2e-4 of the
// time. An outage starts at 16 * 1.6e-4 * C(18,2) p^2 (1-p)^16 an hour and lasts 2/3 h, so
// 99.9% (0.73 h) is breached by 2 outages in a month.
TEST(Sla, RackWorkedExample) {
  const SlaRisk r = ComputeSlaRisk({.terms = Gold(SlaTerms::Unit::kRack),
                                    .mtbf_gpu_hours = 25000,
                                    .outage_h = 2,
                                    .gpu_hour_usd = 2,
                                    .fleet_gpus = 1152});
  const double tray = 4.0 / 25000;
  const double p = tray * 2;
  const double month = 16 * tray * 153 * p * p * std::pow(1 - p, 16) * 730;
  EXPECT_DOUBLE_EQ(r.unit_gpus, 72);
  EXPECT_DOUBLE_EQ(r.units, 16);
  EXPECT_NEAR(r.outages_per_unit_month, month, 1e-15);  // 2.9e-5
  EXPECT_NEAR(r.outage_h, 2.0 / 3, 1e-12);
  EXPECT_EQ(r.breach_at, 2);
  EXPECT_NEAR(r.breach_probability, Tail(month, 2), 1e-15);
  EXPECT_LT(r.breaches_per_year, 1e-6) << "the 3-of-18 rule makes a rack outage rare";
}

TEST(Sla, ValidatesTerms) {
  EXPECT_TRUE(ValidateSlaTerms(Gold()));
  SlaTerms t = Gold();
  t.uptime_pct = 100;
  EXPECT_FALSE(ValidateSlaTerms(t));
  t = Gold();
  t.credits = {};
  EXPECT_FALSE(ValidateSlaTerms(t));
  t.credits = {{99.0, 25}, {99.9, 10}};  // thresholds must fall
  EXPECT_FALSE(ValidateSlaTerms(t));
  t.credits = {{99.9, 25}, {99.0, 10}};  // credits must rise
  EXPECT_FALSE(ValidateSlaTerms(t));
  t.credits = {{101, 10}};
  EXPECT_FALSE(ValidateSlaTerms(t));
  EXPECT_EQ(ParseSlaUnit("rack").value(), SlaTerms::Unit::kRack);
  EXPECT_FALSE(ParseSlaUnit("pod"));
}

// In a rating: the rubric's template named by the attestation, the outage measured by a
// reliability run, the price attested; without terms or an attestation, why there is none.
TEST(Sla, InARating) {
  const Rubric rubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "sla-test",
    "tiers": [{"name": "Gold", "min": 80}], "below": "Bronze",
    "untestable": {"name": "Untestable", "below_confidence": 0},
    "categories": [{"id": "reliability", "title": "Reliability", "weight": 1}],
    "items": [{"id": "rel.detect", "category": "reliability", "title": "Detect", "weight": 1,
               "from": {"metric": "reliability.detect"},
               "score": {"kind": "bands", "better": "lower", "bands": [[120, 1]],
                         "otherwise": 0, "unit": "s"}}],
    "goodput": {"job_gpus": 1024, "contract_hours": 730, "mtbf_gpu_hours": 25000,
                "detect_h": 1, "repair_h": 1},
    "sla_templates": [{"name": "gold", "unit": "node", "uptime_pct": 99.9,
                       "credits": [[99.9, 10], [99.0, 25], [95.0, 100]]}]
  })");
  RunRecord run;
  run.run.id = 4;
  run.metrics = {{"reliability.detect", {{"step", "a"}}, 60, "s"},
                 {"reliability.back_in_service", {{"step", "a"}}, 7200, "s"}};
  Attestation attested;
  attested.provider = "P";
  attested.source = "S";
  attested.sla_template = "gold";
  attested.facts["pricing.gpu_hour_usd"] = 2.0;
  attested.facts["availability.delivery_late_days"] = 2;
  const Rating r = RateEvidence(rubric, {{&run}, &attested});
  ASSERT_TRUE(r.sla) << r.sla_missing;
  EXPECT_EQ(r.sla->terms.name, "gold");
  EXPECT_TRUE(r.sla->priced);
  EXPECT_NEAR(r.sla->risk.credit_usd_per_year, 374'016, 1) << "D = 7200 s measured = 2 h";
  EXPECT_EQ(r.sla->delivery_late_days, 2);
  const auto outage = std::ranges::find(
      r.sla->inputs, std::string("D (failure to back in service)"), &GoodputInputView::name);
  ASSERT_NE(outage, r.sla->inputs.end());
  EXPECT_EQ(outage->source, "measured: reliability.back_in_service, run 4");
  // A lab's 120 s at a scale of 1/60 are the same 2 h.
  RunRecord lab_run = run;
  lab_run.metrics = {{"reliability.back_in_service", {{"step", "a"}}, 120, "s"}};
  const Rating lab = RateEvidence(rubric.WithTimesScaled(1.0 / 60), {{&lab_run}, &attested});
  ASSERT_TRUE(lab.sla);
  EXPECT_NEAR(lab.sla->risk.outage_h, 2, 1e-9);
  EXPECT_NEAR(lab.sla->risk.credit_usd_per_year, 374'016, 1);
  const nlohmann::json json = RatingJson(r);
  EXPECT_EQ(json["sla"]["breach_at"], 1);
  EXPECT_EQ(json["sla"]["terms"]["credits"][1][1], 25);
  EXPECT_NE(RatingText(r).find("SLA risk (gold node, 99.9% monthly uptime"), std::string::npos)
      << RatingText(r);
  // The model is printed with its inputs (-v), and carried in the JSON: a node's, or a rack's.
  EXPECT_NE(RatingText(r, 1).find("  outages per node-month N ~ Poisson(8 * 730 / MTBF), each D "
                                  "hours\n"),
            std::string::npos)
      << RatingText(r, 1);
  EXPECT_EQ(RatingText(r).find("Poisson"), std::string::npos);  // not without -v
  EXPECT_EQ(json["sla"]["formulas"].size(), 4U);
  EXPECT_NE(RatingText(r, 1).find("G_cold = "), std::string::npos);
  EXPECT_EQ(json["goodput"]["formulas"].size(), 5U);
  Attestation rack = attested;
  rack.sla_template.clear();
  rack.sla_terms = SlaTerms{.name = "attested",
                            .unit = SlaTerms::Unit::kRack,
                            .uptime_pct = 99.9,
                            .credits = {{99.9, 10}}};
  const Rating racked = RateEvidence(rubric, {{&run}, &rack});
  ASSERT_TRUE(racked.sla) << racked.sla_missing;
  EXPECT_EQ(racked.sla->formulas.at(0), "tray down share p = (4 / MTBF) * D");

  // Without the measurement: the rubric's detect_h + repair_h (2 h as well).
  RunRecord bare;
  bare.run.id = 5;
  const Rating assumed = RateEvidence(rubric, {{&bare}, &attested});
  ASSERT_TRUE(assumed.sla);
  EXPECT_NEAR(assumed.sla->risk.outage_h, 2, 1e-12);

  Attestation no_price = attested;
  no_price.facts.erase("pricing.gpu_hour_usd");
  const Rating unpriced = RateEvidence(rubric, {{&run}, &no_price});
  ASSERT_TRUE(unpriced.sla);
  EXPECT_FALSE(unpriced.sla->priced);
  EXPECT_TRUE(RatingJson(unpriced)["sla"]["credit_usd_per_year"].is_null());

  Attestation no_terms = attested;
  no_terms.sla_template.clear();
  EXPECT_FALSE(RateEvidence(rubric, {{&run}, &no_terms}).sla);
  EXPECT_NE(RateEvidence(rubric, {{&run}, &no_terms}).sla_missing.find("no SLA terms"),
            std::string::npos);
  EXPECT_NE(RateEvidence(rubric, {{&run}, nullptr}).sla_missing.find("no attestation"),
            std::string::npos);
}

TEST(Sla, AttestationTermsAndRubricTemplatesAreChecked) {
  const WallTime now = *ParseIso8601("2026-12-03T00:00:00Z");
  const std::string head =
      "schema: cmax.attestation/v1\nprovider: P\nsource: S\ndate: 2026-12-01\n";
  auto written = ParseAttestation(head +
                                      "sla:\n  unit: rack\n  uptime_pct: 99.5\n  credits:\n"
                                      "    - {below_pct: 99.5, credit_pct: 10}\n"
                                      "    - {below_pct: 95, credit_pct: 50}\n",
                                  now);
  ASSERT_TRUE(written) << written.error().message;
  ASSERT_TRUE(written->sla_terms);
  EXPECT_EQ(written->sla_terms->unit, SlaTerms::Unit::kRack);
  EXPECT_EQ(written->sla_terms->credits.size(), 2U);
  auto named = ParseAttestation(head + "sla:\n  template: silver\n", now);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->sla_template, "silver");
  for (const char* bad : {"sla:\n  template: gold\n  uptime_pct: 99\n",
                          "sla:\n  unit: pod\n  uptime_pct: 99\n  credits: []\n",
                          "sla:\n  unit: node\n  credits: [{below_pct: 99, credit_pct: 10}]\n",
                          "sla:\n  unit: node\n  uptime_pct: 99\n  credits:\n"
                          "    - {below_pct: 95, credit_pct: 10}\n"
                          "    - {below_pct: 99, credit_pct: 50}\n",
                          "sla:\n  unit: node\n  uptime_pct: 99\n  credits: [{below: 99}]\n"}) {
    EXPECT_FALSE(ParseAttestation(head + bad, now)) << bad;
  }
  // The built-in rubric's templates, and the checks on a rubric's own.
  EXPECT_EQ(Rubric::Builtin().SlaTemplates().size(), 4U);
  const std::string rubric_head = R"({"schema": "cmax.rubric/v1", "name": "x",
    "tiers": [{"name": "Gold", "min": 80}], "below": "Bronze",
    "untestable": {"name": "Untestable", "below_confidence": 0},
    "categories": [{"id": "reliability", "title": "R", "weight": 1}],
    "items": [{"id": "r", "category": "reliability", "title": "R", "weight": 1,
               "from": {"metric": "reliability.detect"},
               "score": {"kind": "bands", "better": "lower", "bands": [[1, 1]],
                         "otherwise": 0, "unit": "s"}}], "sla_templates": )";
  EXPECT_TRUE(Rubric::Parse(rubric_head + R"([{"name": "a", "unit": "node", "uptime_pct": 99,
    "credits": [[99, 10]]}]})"));
  for (const char* bad :
       {R"([{"name": "a", "unit": "node", "uptime_pct": 99, "credits": [[99, 10]], "x": 1}]})",
        R"([{"name": "a", "unit": "pod", "uptime_pct": 99, "credits": [[99, 10]]}]})",
        R"([{"name": "a", "unit": "node", "uptime_pct": 99, "credits": [[95, 10], [99, 20]]}]})",
        R"([{"name": "a", "unit": "node", "uptime_pct": 99, "credits": [99, 10]}]})",
        R"([{"name": "a", "unit": "node", "uptime_pct": 99, "credits": [[99, 10]]},
            {"name": "a", "unit": "node", "uptime_pct": 99, "credits": [[99, 10]]}]})",
        R"({"name": "a"}})"}) {
    EXPECT_FALSE(Rubric::Parse(rubric_head + bad)) << bad;
  }
}

}  // namespace
}  // namespace cmax::rate
