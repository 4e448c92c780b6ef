// Relative tiering on a synthetic field of providers: the order, the curve that makes the best
// rated provider score 100, gates that cap the relative tier as they cap the absolute one, the
// untestable left out of the field, and no relative tiers for a field under three.
#include "rate/ranking.hpp"

#include <gtest/gtest.h>

#include "rate/rating.hpp"

namespace cmax::rate {
namespace {

const Rubric& Bands() {
  static const Rubric kRubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "bands",
    "tiers": [{"name": "Platinum", "min": 90}, {"name": "Gold", "min": 80},
              {"name": "Silver", "min": 65}, {"name": "Bronze", "min": 50}],
    "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0.4},
    "categories": [{"id": "reliability", "title": "Reliability", "weight": 1}],
    "items": [{"id": "rel.detect", "category": "reliability", "title": "Detect", "weight": 1,
               "from": {"metric": "reliability.detect"},
               "score": {"kind": "bands", "better": "lower", "bands": [[120, 1]],
                         "otherwise": 0, "unit": "s"}}]
  })");
  return kRubric;
}

// A rating as RateEvidence leaves it: the band from the score, a failed gate's item, the tier
// capped by the gate where its cap is under the band.
Rating Rated(double score, double confidence, const char* gate_cap = nullptr) {
  Rating r;
  r.score = score;
  r.confidence = confidence;
  r.band = Bands().BandOf(score);
  r.tier = r.band;
  if (gate_cap != nullptr) {
    ItemRating gate;
    gate.id = "sec.soc2";
    gate.score = 0;
    gate.gate_cap = gate_cap;
    gate.gate_why = "no SOC 2";
    r.items.push_back(gate);
    r.gates_failed = {std::string("sec.soc2: no SOC 2 (caps the tier at ") + gate_cap + ")"};
    if (Bands().Rank(gate_cap) > Bands().Rank(r.tier)) r.tier = gate_cap;
  }
  if (confidence < 0.4) r.tier = "Untestable";
  return r;
}

const RankedProvider& Named(const Ranking& r, std::string_view name) {
  return *std::ranges::find(r.providers, name, &RankedProvider::provider);
}

TEST(Ranking, CurvesTheFieldToItsBest) {
  const Ranking r = RankProviders(Bands(), {{"Echo", Rated(56, 0.9)},
                                            {"Alpha", Rated(80, 0.9)},
                                            {"Bravo", Rated(72, 0.8)},
                                            {"Charlie", Rated(60, 0.7)},
                                            {"Delta", Rated(85, 0.3)},  // untestable
                                            {"Foxtrot", Rated(78, 0.9, "Underperforming")},
                                            {"Golf", Rated(79, 0.9, "Gold")}});
  // The absolute tier first, then the score: the gated and the untestable go to the bottom.
  std::vector<std::string> order;
  for (const RankedProvider& p : r.providers) order.push_back(p.provider);
  EXPECT_EQ(order, (std::vector<std::string>{"Alpha", "Golf", "Bravo", "Charlie", "Echo", "Foxtrot",
                                             "Delta"}));
  EXPECT_EQ(r.providers.front().rank, 1);
  EXPECT_EQ(r.field, 6) << "the untestable is no part of the field";
  // Curved to Alpha's 80: Alpha 100, Bravo 90, Charlie 75, Echo 70.
  EXPECT_DOUBLE_EQ(*Named(r, "Alpha").relative_score, 100);
  EXPECT_EQ(Named(r, "Alpha").relative_tier, "Platinum");
  EXPECT_EQ(Named(r, "Alpha").rating.tier, "Gold");
  EXPECT_DOUBLE_EQ(*Named(r, "Bravo").relative_score, 90);
  EXPECT_EQ(Named(r, "Bravo").relative_tier, "Platinum");
  EXPECT_DOUBLE_EQ(*Named(r, "Charlie").relative_score, 75);
  EXPECT_EQ(Named(r, "Charlie").relative_tier, "Silver");
  EXPECT_EQ(Named(r, "Echo").relative_tier, "Silver");
  EXPECT_EQ(Named(r, "Echo").rating.tier, "Bronze");
  // Foxtrot's 78 curves to 97.5, but its failed gate caps it as it caps the absolute tier.
  EXPECT_DOUBLE_EQ(*Named(r, "Foxtrot").relative_score, 97.5);
  EXPECT_EQ(Named(r, "Foxtrot").relative_tier, "Underperforming");
  // Golf's gate caps at Gold, above its Silver band: its absolute tier stays Silver, but its
  // 79 curves to 98.75, which the same gate holds to Gold.
  EXPECT_EQ(Named(r, "Golf").rating.tier, "Silver");
  EXPECT_EQ(Named(r, "Golf").relative_tier, "Gold");
  EXPECT_FALSE(Named(r, "Delta").relative_score);
  EXPECT_EQ(Named(r, "Delta").relative_tier, "");
  EXPECT_NE(r.relative_note.find("best rated provider (Alpha, 80.0)"), std::string::npos);

  const std::string text = RankingText(r);
  EXPECT_NE(text.find("Foxtrot"), std::string::npos);
  EXPECT_NE(text.find("Underperforming (gated)"), std::string::npos) << text;
  const nlohmann::json json = RankingJson(r);
  EXPECT_EQ(json["schema"], "cmax.ranking/v1");
  EXPECT_EQ(json["providers"][0]["provider"], "Alpha");
  EXPECT_EQ(json["providers"][0]["relative_tier"], "Platinum");
  EXPECT_TRUE(json["providers"][6]["relative_tier"].is_null());
}

TEST(Ranking, TooSmallAFieldHasNoRelativeTiers) {
  const Ranking r = RankProviders(
      Bands(), {{"Alpha", Rated(80, 0.9)}, {"Bravo", Rated(60, 0.9)}, {"Charlie", Rated(90, 0.1)}});
  EXPECT_EQ(r.field, 2);
  for (const RankedProvider& p : r.providers) EXPECT_EQ(p.relative_tier, "") << p.provider;
  EXPECT_NE(r.relative_note.find("2 provider(s) with a rated score, under the 3"),
            std::string::npos);
  // Ties in tier and score go by confidence, then by name.
  const Ranking tied =
      RankProviders(Bands(), {{"b", Rated(70, 0.8)}, {"a", Rated(70, 0.8)}, {"c", Rated(70, 0.9)}});
  EXPECT_EQ(tied.providers[0].provider, "c");
  EXPECT_EQ(tied.providers[1].provider, "a");
  EXPECT_EQ(tied.providers[2].provider, "b");
}

// A provider's name and a rating's notes come from stores and attestations someone else wrote:
// the text for a terminal holds no escape (an OSC title, a screen clear, a C1 CSI) and no
// bidi override, in the ranking and in the rating alike.
TEST(Ranking, TheTextHoldsNoTerminalControl) {
  const std::string hostile =
      "Acme\x1b]0;pwned\x07\x1b[2J\xc2\x9b"
      "31m\xe2\x80\xae";
  Rating rated = Rated(70, 0.9);
  rated.provider = hostile;
  rated.notes = {hostile};
  const Ranking r = RankProviders(Bands(), {{hostile, rated}, {"b", Rated(60, 0.9)}});
  for (const std::string& text : {RankingText(r), RatingText(rated, 1)}) {
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
    EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos) << text;
    EXPECT_NE(text.find("Acme"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace cmax::rate
