#include "rate/ranking.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/strings.hpp"

namespace cmax::rate {

using nlohmann::json;

Ranking RankProviders(const Rubric& rubric, std::vector<std::pair<std::string, Rating>> ratings) {
  Ranking out;
  out.rubric = rubric.Name();
  out.rubric_sha256 = rubric.Sha256();
  for (auto& [provider, rating] : ratings) {
    out.providers.push_back({.provider = provider, .rating = std::move(rating)});
  }
  std::ranges::sort(out.providers, [&](const RankedProvider& a, const RankedProvider& b) {
    const int ta = rubric.Rank(a.rating.tier);
    const int tb = rubric.Rank(b.rating.tier);
    if (ta != tb) return ta < tb;
    const double sa = a.rating.score.value_or(-1);
    const double sb = b.rating.score.value_or(-1);
    if (sa != sb) return sa > sb;
    if (a.rating.confidence != b.rating.confidence) {
      return a.rating.confidence > b.rating.confidence;
    }
    return a.provider < b.provider;
  });
  const auto rated = [&](const RankedProvider& p) {
    return p.rating.score.has_value() && p.rating.tier != rubric.Untestable();
  };
  double best = 0;
  const RankedProvider* leader = nullptr;
  for (const RankedProvider& p : out.providers) {
    if (!rated(p)) continue;
    ++out.field;
    if (!leader || *p.rating.score > best) {
      best = *p.rating.score;
      leader = &p;
    }
  }
  int rank = 0;
  for (RankedProvider& p : out.providers) p.rank = ++rank;
  if (out.field < kRelativeFieldMin) {
    out.relative_note = fmt::format(
        "no relative tiers: {} provider(s) with a rated score, under the {} a field needs",
        out.field, kRelativeFieldMin);
    return out;
  }
  if (best <= 0) {
    out.relative_note =
        "no relative tiers: the best rated provider scores 0, so there is no "
        "field to curve to";
    return out;
  }
  out.relative_note = fmt::format(
      "relative tiers: scores curved so the best rated provider ({}, {:.1f}) scores 100, the "
      "rubric's bands applied, each provider's failed gates capping as they cap its absolute "
      "tier (cmax's rule)",
      leader->provider, best);
  for (RankedProvider& p : out.providers) {
    if (!rated(p)) continue;
    p.relative_score = std::min(100.0, *p.rating.score / best * 100);
    std::string tier = rubric.BandOf(*p.relative_score);
    // Each failed gate caps the relative tier as it caps the absolute one, whether or not it
    // lowered the absolute tier (a cap at Gold does nothing to a Silver band, but holds a curved
    // Platinum to Gold).
    for (const ItemRating& item : p.rating.items) {
      if (!item.gate_cap || !item.applies || !item.score || *item.score >= 1) continue;
      if (rubric.Rank(*item.gate_cap) > rubric.Rank(tier)) tier = *item.gate_cap;
    }
    p.relative_tier = tier;
  }
  return out;
}

std::string RankingText(const Ranking& r) {
  std::string out = fmt::format("{:>4}  {:<24} {:<24} {:>6} {:>10}  {:<22} {}\n", "RANK",
                                "PROVIDER", "TIER", "SCORE", "CONFIDENCE", "RELATIVE TIER", "RUNS");
  for (const RankedProvider& p : r.providers) {
    std::vector<std::string> runs;
    for (const int64_t id : p.rating.runs) runs.push_back(std::to_string(id));
    std::string tier = p.rating.tier;
    if (!p.rating.gates_failed.empty()) tier += " (gated)";
    out += fmt::format(
        "{:>4}  {:<24} {:<24} {:>6} {:>9.0f}%  {:<22} {}\n", p.rank, p.provider, tier,
        p.rating.score ? fmt::format("{:.1f}", *p.rating.score) : "-", 100 * p.rating.confidence,
        p.relative_tier.empty() ? "-"
                                : fmt::format("{} ({:.0f})", p.relative_tier, *p.relative_score),
        Join(runs, ", "));
  }
  out += fmt::format("\nRubric {} (sha256 {}); {}.\n", r.rubric, r.rubric_sha256.substr(0, 12),
                     r.relative_note);
  // Names, notes and evidence come from stores and files: shown, never obeyed by a terminal.
  return SanitizeUtf8(out);
}

json RankingJson(const Ranking& r) {
  json providers = json::array();
  for (const RankedProvider& p : r.providers) {
    providers.push_back(
        {{"rank", p.rank},
         {"provider", p.provider},
         {"tier", p.rating.tier},
         {"band", p.rating.band},
         {"score", p.rating.score ? json(*p.rating.score) : json(nullptr)},
         {"confidence", p.rating.confidence},
         {"gates_failed", p.rating.gates_failed},
         {"relative_score", p.relative_score ? json(*p.relative_score) : json(nullptr)},
         {"relative_tier", p.relative_tier.empty() ? json(nullptr) : json(p.relative_tier)},
         {"runs", p.rating.runs},
         {"rating", RatingJson(p.rating)}});
  }
  return {{"schema", "cmax.ranking/v1"},
          {"rubric", {{"name", r.rubric}, {"sha256", r.rubric_sha256}}},
          {"field", r.field},
          {"relative_note", r.relative_note},
          {"providers", providers}};
}

}  // namespace cmax::rate
