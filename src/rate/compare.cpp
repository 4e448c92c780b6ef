#include "rate/compare.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "core/strings.hpp"

namespace cmax::rate {
namespace {

using nlohmann::json;

// Scores equal to the printed precision count as unchanged.
bool Moved(const std::optional<double>& a, const std::optional<double>& b, double slack) {
  if (a.has_value() != b.has_value()) return true;
  return a && std::fabs(*a - *b) > slack;
}

std::string Shown(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("none");
}

std::string Ids(const std::vector<int64_t>& runs) {
  std::vector<std::string> ids;
  for (int64_t id : runs) ids.push_back(std::to_string(id));
  return ids.empty() ? "none" : Join(ids, ", ");
}

json Optional(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

Comparison CompareRatings(const Rating& before, const Rating& after) {
  Comparison out{.tier_before = before.tier,
                 .tier_after = after.tier,
                 .score_before = before.score,
                 .score_after = after.score,
                 .confidence_before = before.confidence,
                 .confidence_after = after.confidence,
                 .runs_before = before.runs,
                 .runs_after = after.runs,
                 .gates_before = before.gates_failed,
                 .gates_after = after.gates_failed,
                 .same_rubric = before.rubric_sha256 == after.rubric_sha256};
  for (const CategoryRating& a : after.categories) {
    const auto b = std::ranges::find(before.categories, a.id, &CategoryRating::id);
    CategoryMove move{.id = a.id, .after = a.score, .confidence_after = a.confidence};
    if (b != before.categories.end()) {
      move.before = b->score;
      move.confidence_before = b->confidence;
    }
    if (Moved(move.before, move.after, 0.05) ||
        std::fabs(move.confidence_before - move.confidence_after) > 0.005) {
      out.categories.push_back(std::move(move));
    }
  }
  for (const ItemRating& a : after.items) {
    const auto b = std::ranges::find(before.items, a.id, &ItemRating::id);
    ItemMove move{
        .id = a.id, .category = a.category, .after = a.score, .evidence_after = a.evidence};
    if (b != before.items.end()) {
      move.before = b->score;
      move.evidence_before = b->evidence;
    }
    // Run numbers in the evidence differ between any two runs: only a score that moved, or
    // evidence that says something else besides its run, counts.
    const auto without_runs = [](std::string text) {
      for (size_t at = text.find(" in run "); at != std::string::npos;
           at = text.find(" in run ", at + 1)) {
        size_t end = at + 8;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) {
          ++end;
        }
        text.erase(at, end - at);
      }
      return text;
    };
    if (Moved(move.before, move.after, 0.005) ||
        without_runs(move.evidence_before) != without_runs(move.evidence_after)) {
      out.items.push_back(std::move(move));
    }
  }
  // Items the newer rating no longer has (an older rubric's) moved to nothing.
  for (const ItemRating& b : before.items) {
    if (std::ranges::find(after.items, b.id, &ItemRating::id) != after.items.end()) continue;
    out.items.push_back({.id = b.id,
                         .category = b.category,
                         .before = b.score,
                         .evidence_before = b.evidence,
                         .evidence_after = "not in this rubric"});
  }
  return out;
}

namespace {

std::string LabelsText(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    if (!out.empty()) out += ", ";
    out += key + "=" + value;
  }
  return out;
}

}  // namespace

std::vector<MetricMove> CompareMetrics(const std::vector<Metric>& before,
                                       const std::vector<Metric>& after, double threshold_pct) {
  std::vector<bool> used(before.size(), false);
  std::vector<std::pair<const Metric*, const Metric*>> pairs;
  std::vector<const Metric*> left;
  for (const Metric& a : after) {
    bool matched = false;
    for (size_t i = 0; i < before.size() && !matched; ++i) {
      if (!used[i] && before[i].name == a.name && before[i].labels == a.labels) {
        used[i] = true;
        pairs.emplace_back(&before[i], &a);
        matched = true;
      }
    }
    if (!matched) left.push_back(&a);
  }
  for (const Metric* a : left) {
    const auto same_name = [&](const Metric& m) { return m.name == a->name; };
    const auto after_count =
        std::ranges::count_if(left, [&](const Metric* m) { return m->name == a->name; });
    std::vector<size_t> candidates;
    for (size_t i = 0; i < before.size(); ++i) {
      if (!used[i] && same_name(before[i])) candidates.push_back(i);
    }
    if (after_count == 1 && candidates.size() == 1) {
      used[candidates.front()] = true;
      pairs.emplace_back(&before[candidates.front()], a);
    }
  }
  std::vector<MetricMove> out;
  for (const auto& [b, a] : pairs) {
    MetricMove move{.name = a->name,
                    .labels = LabelsText(a->labels),
                    .unit = a->unit,
                    .before = b->value,
                    .after = a->value};
    if (b->value != 0) move.change_pct = 100 * (a->value - b->value) / std::fabs(b->value);
    const bool moved =
        move.change_pct ? std::fabs(*move.change_pct) >= threshold_pct : a->value != b->value;
    if (moved) out.push_back(std::move(move));
  }
  std::ranges::sort(out, {}, [](const MetricMove& m) { return m.name + "\n" + m.labels; });
  return out;
}

std::string ComparisonText(const Comparison& c) {
  std::string out = c.tier_before == c.tier_after
                        ? fmt::format("Tier: {} (unchanged)\n", c.tier_after)
                        : fmt::format("Tier: {} -> {}\n", c.tier_before, c.tier_after);
  out += fmt::format("Score: {} -> {}, confidence {:.0f}% -> {:.0f}%\n",
                     Shown(c.score_before, "{:.1f}"), Shown(c.score_after, "{:.1f}"),
                     100 * c.confidence_before, 100 * c.confidence_after);
  out += fmt::format("Runs: {} -> {}\n", Ids(c.runs_before), Ids(c.runs_after));
  if (!c.same_rubric) out += "NOTE  the two ratings use different rubrics\n";
  for (const std::string& gate : c.gates_before) {
    if (std::ranges::find(c.gates_after, gate) == c.gates_after.end()) {
      out += "GATE MET NOW   " + gate + "\n";
    }
  }
  for (const std::string& gate : c.gates_after) {
    if (std::ranges::find(c.gates_before, gate) == c.gates_before.end()) {
      out += "GATE FAILED    " + gate + "\n";
    }
  }
  std::string measured;
  if (!c.metrics.empty()) {
    measured = fmt::format("\nMeasurements that moved {:.0f}% or more:\n", c.metric_threshold_pct);
    for (const MetricMove& m : c.metrics) {
      measured += fmt::format(
          "  {}{}: {:.4g} -> {:.4g} {}{}\n", m.name, m.labels.empty() ? "" : " {" + m.labels + "}",
          m.before, m.after, m.unit, m.change_pct ? fmt::format(" ({:+.1f}%)", *m.change_pct) : "");
    }
  }
  if (c.categories.empty() && c.items.empty()) {
    out += c.metrics.empty() ? "\nNothing moved.\n" : measured;
    return SanitizeUtf8(out);  // metric names and labels come from the store
  }
  out += "\n";
  for (const CategoryMove& m : c.categories) {
    out += fmt::format("{:<14} {:>6} -> {:<6} confidence {:>3.0f}% -> {:.0f}%\n", m.id,
                       Shown(m.before, "{:.1f}"), Shown(m.after, "{:.1f}"),
                       100 * m.confidence_before, 100 * m.confidence_after);
  }
  for (const ItemMove& m : c.items) {
    out += fmt::format("\n{} ({}): {} -> {}\n  before: {}\n  after:  {}\n", m.id, m.category,
                       Shown(m.before, "{:.2f}"), Shown(m.after, "{:.2f}"),
                       m.evidence_before.empty() ? "not in that rating" : m.evidence_before,
                       m.evidence_after);
  }
  // Names, notes and evidence come from stores and files: shown, never obeyed by a terminal.
  return SanitizeUtf8(out + measured);
}

json ComparisonJson(const Comparison& c) {
  json categories = json::array();
  for (const CategoryMove& m : c.categories) {
    categories.push_back({{"id", m.id},
                          {"before", Optional(m.before)},
                          {"after", Optional(m.after)},
                          {"confidence_before", m.confidence_before},
                          {"confidence_after", m.confidence_after}});
  }
  json items = json::array();
  for (const ItemMove& m : c.items) {
    items.push_back({{"id", m.id},
                     {"category", m.category},
                     {"before", Optional(m.before)},
                     {"after", Optional(m.after)},
                     {"evidence_before", m.evidence_before},
                     {"evidence_after", m.evidence_after}});
  }
  json metrics = json::array();
  for (const MetricMove& m : c.metrics) {
    metrics.push_back({{"name", m.name},
                       {"labels", m.labels},
                       {"unit", m.unit},
                       {"before", m.before},
                       {"after", m.after},
                       {"change_pct", Optional(m.change_pct)}});
  }
  return {{"schema", "cmax.comparison/v1"},
          {"tier", {{"before", c.tier_before}, {"after", c.tier_after}}},
          {"score", {{"before", Optional(c.score_before)}, {"after", Optional(c.score_after)}}},
          {"confidence", {{"before", c.confidence_before}, {"after", c.confidence_after}}},
          {"runs", {{"before", c.runs_before}, {"after", c.runs_after}}},
          {"gates_failed", {{"before", c.gates_before}, {"after", c.gates_after}}},
          {"same_rubric", c.same_rubric},
          {"categories", categories},
          {"items", items},
          {"metrics", metrics},
          {"metric_threshold_pct", c.metric_threshold_pct}};
}

}  // namespace cmax::rate
