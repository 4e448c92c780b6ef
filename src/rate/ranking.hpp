// Several providers rated with the same rubric and ranked, each with its absolute tier (the
// rubric's bands) and a relative one (against the others in the field). Pure.
//
// The relative rule is cmax's own (ClusterMAX sets tiers against peers but publishes no rule):
// among the providers with a rated score (not Untestable), scores are curved so the best one
// scores 100 (relative = score / best * 100); the rubric's bands apply to the curved score, and
// each provider's failed gates cap it as they cap its absolute tier. A field of fewer than
// three rated providers has no relative tiers: there is no field to be relative to. Drains by
// cause are left out of a ranking: a store's remediation journal is its cluster's, not each
// provider's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rate/rating.hpp"
#include "rate/rubric.hpp"

namespace cmax::rate {

inline constexpr int kRelativeFieldMin = 3;

struct RankedProvider {
  int rank = 0;  // 1 the best
  std::string provider;
  Rating rating;
  std::optional<double> relative_score;  // 0 to 100; none outside the field
  std::string relative_tier;             // empty when the field is too small or it is untestable
};

struct Ranking {
  std::string rubric;
  std::string rubric_sha256;
  std::vector<RankedProvider> providers;  // best first
  int field = 0;                          // providers with a rated score
  std::string relative_note;              // how the relative tiers were set, or why there are none
};

// Best first: the absolute tier, then the score, then the confidence, then the name.
Ranking RankProviders(const Rubric& rubric, std::vector<std::pair<std::string, Rating>> ratings);

std::string RankingText(const Ranking& ranking);
nlohmann::json RankingJson(const Ranking& ranking);  // schema cmax.ranking/v1

}  // namespace cmax::rate
