// The provider's attestation: the example in data/ parses to the facts a rubric scores; what a
// report's age, a missed delivery and a silent section come to; and every malformed field is
// refused naming its line.
#include "rate/attestation.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace cmax::rate {
namespace {

using nlohmann::json;

WallTime Day(const char* date) {
  return *ParseIso8601(std::string(date) + "T12:00:00Z");
}

std::string Example() {
  std::ifstream in(std::string(CMAX_TEST_DATA) + "/../../data/attestation.example.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Attestation, TheExampleGivesEveryFact) {
  const auto a = ParseAttestation(Example(), Day("2026-12-02"));
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->provider, "Example Cloud");
  EXPECT_EQ(a->sha256.size(), 64U);
  EXPECT_TRUE(a->notes.empty());
  for (const std::string& fact : AttestationFacts()) {
    EXPECT_TRUE(a->facts.contains(fact)) << fact;
  }
  EXPECT_EQ(a->facts.at("security.soc2_or_iso27001"), true);
  EXPECT_EQ(a->facts.at("pricing.published"), true);
  EXPECT_EQ(a->facts.at("pricing.egress_gb_usd"), 0.0);
  EXPECT_EQ(a->facts.at("availability.delivery_late_days"), 2);
  EXPECT_EQ(a->facts.at("isolation.ib_sm_key"), true);
}

TEST(Attestation, ReportsAgeDeliveriesAndSilence) {
  const auto with = [](const std::string& body, const char* now = "2026-12-02") {
    return ParseAttestation(
        "schema: cmax.attestation/v1\nprovider: P\nsource: S\ndate: 2026-11-30\n" + body, Day(now));
  };
  // A SOC 2 report whose period ended 16 months before: not current; an ISO certificate of
  // two years: current.
  EXPECT_EQ(
      with("security:\n  soc2_type2_report: 2025-07-31\n")->facts.at("security.soc2_or_iso27001"),
      false);
  EXPECT_EQ(with("security:\n  soc2_type2_report: null\n  iso27001_certificate: 2024-12-01\n")
                ->facts.at("security.soc2_or_iso27001"),
            true);
  EXPECT_EQ(with("security:\n  soc2_type2_report: null\n")->facts.at("security.soc2_or_iso27001"),
            false);                                                     // said: none
  EXPECT_FALSE(with("")->facts.contains("security.soc2_or_iso27001"));  // said nothing
  // Promised and not delivered: late by today.
  const auto late = with("delivery:\n  promised: 2026-11-20\n");
  EXPECT_EQ(late->facts.at("availability.delivery_late_days"), 12);
  EXPECT_EQ(late->notes, std::vector<std::string>{"promised capacity not delivered yet"});
  // A folded source is one line.
  ASSERT_TRUE(
      ParseAttestation("schema: cmax.attestation/v1\nprovider: P\nsource: >\n  the sales\n  "
                       "team\ndate: 2026-11-30\n",
                       Day("2026-12-02")));
  // Delivered today, east of UTC, is not in the future.
  EXPECT_TRUE(with("delivery:\n  promised: 2026-11-20\n  delivered: 2026-12-03\n"));
  // Delivered early is on time, not "-30 days late".
  EXPECT_EQ(with("delivery:\n  promised: 2026-11-20\n  delivered: 2026-10-21\n")
                ->facts.at("availability.delivery_late_days"),
            0);
  EXPECT_EQ(with("delivery:\n  promised: 2026-11-20\n  delivered: 2026-11-23\n")
                ->facts.at("availability.delivery_late_days"),
            3);
  EXPECT_EQ(with("pricing:\n  gpu_hour_usd: 2.1\n")->facts.at("pricing.published"), false);
  // Judged today: a report current when attested has lapsed since, whatever the file says.
  EXPECT_EQ(with("security:\n  soc2_type2_report: 2026-06-30\n", "2027-11-01")
                ->facts.at("security.soc2_or_iso27001"),
            false);
  EXPECT_FALSE(with("security:\n  soc2_type2_report: 2027-06-30\n"));  // a report to come
  // A year and more old: stale, said.
  const auto old = with("", "2028-01-15");
  ASSERT_TRUE(old);
  ASSERT_EQ(old->notes.size(), 1U);
  EXPECT_NE(old->notes[0].find("stale"), std::string::npos);
}

TEST(Attestation, MalformedFieldsAreRefusedNamingTheLine) {
  struct Case {
    const char* text;
    const char* error_has;
  };
  const std::string head = "schema: cmax.attestation/v1\nprovider: P\nsource: S\n";
  const std::vector<Case> cases = {
      {"[1, 2]", "not a map"},
      {"schema: cmax.attestation/v2\nprovider: P\nsource: S\ndate: 2026-11-30\n", "schema"},
      {"schema: cmax.attestation/v1\nsource: S\ndate: 2026-11-30\n", "provider must say"},
      {"schema: cmax.attestation/v1\nprovider: P\nsource: S\n", "date (YYYY-MM-DD) is missing"},
      {"date: 30/11/2026\n", "line 4: date must be a date YYYY-MM-DD"},
      {"date: 2027-06-01\n", "in the future"},
      {"date: 2026-11-30\nsecurity:\n  soc2: 2026-01-01\n", "line 6: unknown key \"soc2\""},
      {"date: 2026-11-30\nsla:\n  partial_failures_defined: maybe\n",
       "line 6: partial_failures_defined must be true or false"},
      {"date: 2026-11-30\npricing:\n  gpu_hour_usd: -2\n", "gpu_hour_usd must be a number"},
      {"date: 2026-11-30\npricing:\n  gpu_hour_usd: cheap\n", "gpu_hour_usd must be a number"},
      // Past any offer: a slip that would make every cost and credit infinite.
      {"date: 2026-11-30\npricing:\n  gpu_hour_usd: 1e308\n",
       "gpu_hour_usd must be a number from 0 to 1000000"},
      // A day the calendar lacks is refused, not carried into the next month.
      {"date: 2026-11-31\n", "line 4: date must be a date YYYY-MM-DD"},
      {"date: 2026-11-30\ndelivery:\n  promised: 2026-02-31\n  delivered: 2026-03-02\n", "line 6"},
      {"date: 2026-11-30\nsecurity: yes\n", "security must be a map"},
      {"date: 2026-11-30\nvibes: good\n", "unknown key \"vibes\""},
      {"date: [2026\n", "not YAML"},
      {"schema: cmax.attestation/v1\nprovider: \"A\\nB\"\nsource: S\ndate: 2026-11-30\n",
       "line 2: provider must be 1 to 128 printable characters on one line"},
      // Two prices, two providers: YAML keeps the first; the file is refused instead.
      {"date: 2026-11-30\npricing:\n  gpu_hour_usd: 0.01\n  gpu_hour_usd: 2.49\n",
       "line 7: \"gpu_hour_usd\" appears twice in pricing"},
      {"date: 2026-11-30\nprovider: Other\n", "line 5: \"provider\" appears twice"},
      {"schema: cmax.attestation/v1\nprovider: P\nsource: |\n  two\n  lines\ndate: 2026-11-30\n",
       "line 3: source must be 1 to 1000 printable characters on one line"},
      {"schema: cmax.attestation/v1\nprovider: P\nsource: \"   \"\ndate: 2026-11-30\n",
       "line 3: source must be 1 to 1000 printable characters on one line"},
      {"date: 2026-11-30\ndelivery:\n  promised: 2026-10-01\n  delivered: 9999-12-31\n",
       "line 7: delivery delivered is in the future"},
  };
  for (const Case& c : cases) {
    const std::string text =
        std::string(c.text).starts_with("schema") || std::string(c.text).starts_with("[")
            ? c.text
            : head + c.text;
    const auto parsed = ParseAttestation(text, Day("2026-12-02"));
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_NE(parsed.error().message.find(c.error_has), std::string::npos)
        << c.text << ": " << parsed.error().message;
  }
}

}  // namespace
}  // namespace cmax::rate
