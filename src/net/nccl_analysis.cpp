#include "net/nccl_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

#include "core/strings.hpp"

namespace cmax::net {
namespace {

using nlohmann::json;

// The platforms' figures are for large messages: 442 of 480 GB/s at 512 MiB on 8x H200.
constexpr uint64_t kPlatformMinSize = uint64_t{512} << 20;

// "all_reduce_perf_mpi" -> "all_reduce".
std::string CollectiveOf(std::string name) {
  for (const char* suffix : {"_mpi", "_perf"}) {
    if (name.ends_with(suffix)) name.resize(name.size() - std::string_view(suffix).size());
  }
  return name;
}

// The name NCCL's tuning lines give a collective, and whether their bytes are per rank where
// nccl-tests' size is the total over ranks.
struct TuningName {
  const char* function;
  bool per_rank;
};
std::optional<TuningName> TuningNameOf(const std::string& collective) {
  static const std::map<std::string, TuningName, std::less<>> kNames = {
      {"all_reduce", {"AllReduce", false}},
      {"broadcast", {"Broadcast", false}},
      {"reduce", {"Reduce", false}},
      {"all_gather", {"AllGather", true}},
      {"reduce_scatter", {"ReduceScatter", true}}};
  const auto it = kNames.find(collective);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

NcclCurve CurveOf(const std::string& file, size_t index, const NcclTable& table,
                  const std::vector<NcclTuning>& tuning) {
  NcclCurve curve;
  curve.origin = fmt::format("{} table {}{}", SanitizeUtf8(file), index + 1,
                             table.source.empty() ? "" : " (from " + table.source + ")");
  curve.collective = CollectiveOf(table.collective);
  curve.cpu_stand_in = table.cpu_stand_in;
  curve.nodes = static_cast<int>(table.hosts.size());
  curve.ranks = table.ranks;
  curve.concluded = table.concluded;
  curve.out_of_bounds_failed = table.out_of_bounds_ok.has_value() && !*table.out_of_bounds_ok;
  std::map<uint64_t, double> best;  // one point per size: a size printed twice keeps its best
  for (const NcclRow& row : table.rows) {
    double wrong = row.out_of_place.wrong.value_or(0);
    if (row.in_place) wrong += row.in_place->wrong.value_or(0);
    if (table.wrong_is_count && std::isfinite(wrong) && wrong > 0) {
      curve.wrong_values += wrong;
      ++curve.wrong_sizes;
    }
    const std::optional<double> bw = row.BestBusbw();
    if (!bw || !std::isfinite(*bw) || *bw < 0) continue;
    auto [it, added] = best.emplace(row.size_bytes, *bw);
    if (!added) it->second = std::max(it->second, *bw);
  }
  std::map<uint64_t, std::string> chosen;
  if (const auto name = TuningNameOf(curve.collective)) {
    for (const NcclTuning& t : tuning) {
      if (t.function == name->function) chosen.emplace(t.bytes, t.algo + "/" + t.proto);
    }
    for (const auto& [size, bw] : best) {
      uint64_t bytes = size;
      if (name->per_rank) bytes = curve.ranks > 0 ? size / static_cast<uint64_t>(curve.ranks) : 0;
      const auto it = chosen.find(bytes);
      curve.points.push_back({size, bw, it == chosen.end() ? "" : it->second});
    }
  } else {
    for (const auto& [size, bw] : best) curve.points.push_back({size, bw, ""});
  }
  for (const NcclCurvePoint& p : curve.points) {
    if (!curve.peak_gbs || p.busbw_gbs > *curve.peak_gbs) {
      curve.peak_gbs = p.busbw_gbs;
      curve.peak_size_bytes = p.size_bytes;
    }
  }
  if (!curve.points.empty()) {
    curve.largest_gbs = curve.points.back().busbw_gbs;
    curve.largest_size_bytes = curve.points.back().size_bytes;
  }
  return curve;
}

void FindDips(size_t index, const NcclCurve& curve, const NcclAnalysisOptions& options,
              std::vector<NcclDip>& out) {
  if (!curve.peak_gbs || *curve.peak_gbs <= 0) return;
  const double floor = options.floor_share * *curve.peak_gbs;
  const std::vector<NcclCurvePoint>& pts = curve.points;
  double best = -1;
  size_t best_at = 0;
  size_t i = 0;
  while (i < pts.size()) {
    const double line = best * (1 - options.tolerance);
    if (best >= floor && best > 0 && pts[i].busbw_gbs < line) {
      NcclDip dip{.curve = index,
                  .best_size_bytes = pts[best_at].size_bytes,
                  .best_gbs = best,
                  .first_size_bytes = pts[i].size_bytes};
      size_t lowest = i;
      size_t j = i;
      while (j < pts.size() && pts[j].busbw_gbs < line) {
        if (pts[j].busbw_gbs < pts[lowest].busbw_gbs) lowest = j;
        ++j;
      }
      dip.at_size_bytes = pts[lowest].size_bytes;
      dip.at_gbs = pts[lowest].busbw_gbs;
      dip.last_size_bytes = pts[j - 1].size_bytes;
      dip.depth_pct = 100.0 * (1 - dip.at_gbs / best);
      const bool recovered = j < pts.size();
      // A fall at the last size alone is one reading: a dip, not yet a cliff.
      dip.kind = recovered || j - i < 2 ? NcclDipKind::kDip : NcclDipKind::kCliff;
      // NCCL's choice changed between the size before the dip and its first one.
      if (i > 0 && !pts[i - 1].choice.empty() && !pts[i].choice.empty() &&
          pts[i - 1].choice != pts[i].choice) {
        dip.switch_from = pts[i - 1].choice;
        dip.switch_to = pts[i].choice;
        if (recovered && j - i <= 2 && dip.depth_pct <= kMaxKinkDepthPct) {
          dip.kind = NcclDipKind::kKink;
        }
      }
      out.push_back(std::move(dip));
      i = j;
      continue;
    }
    if (pts[i].busbw_gbs > best) {
      best = pts[i].busbw_gbs;
      best_at = i;
    }
    ++i;
  }
}

// A curve's points are in size order, one a size (made from a map above): found by halving, so
// that comparing two curves of 40,000 sizes is not 40,000 scans.
std::optional<double> BusbwAt(const NcclCurve& curve, uint64_t size) {
  const auto it = std::ranges::lower_bound(curve.points, size, {}, &NcclCurvePoint::size_bytes);
  if (it != curve.points.end() && it->size_bytes == size) return it->busbw_gbs;
  return std::nullopt;
}

void FindScalingDrops(const std::vector<NcclCurve>& curves, double tolerance,
                      std::vector<NcclScalingDrop>& out, std::vector<std::string>& notes) {
  // One curve per (collective, variant, node count): the first; 1-node curves are NVLink alone.
  std::map<std::pair<std::string, std::string>, std::map<int, const NcclCurve*>> by;
  for (const NcclCurve& c : curves) {
    if (c.nodes >= 2 && !c.points.empty()) by[{c.collective, c.variant}].emplace(c.nodes, &c);
  }
  for (const auto& [key, counts] : by) {
    const std::string collective =
        key.second.empty() ? key.first : fmt::format("{} ({})", key.first, key.second);
    const NcclCurve* previous = nullptr;
    for (const auto& [nodes, curve] : counts) {
      if (previous != nullptr) {
        // The largest size both ran.
        std::optional<uint64_t> common;
        for (const NcclCurvePoint& p : curve->points) {
          if (BusbwAt(*previous, p.size_bytes)) common = p.size_bytes;
        }
        if (!common) {
          notes.push_back(fmt::format("{}: {} and {} nodes share no size to compare",
                                      collective.empty() ? "unknown collective" : collective,
                                      previous->nodes, nodes));
        } else {
          const double from = *BusbwAt(*previous, *common);
          const double to = *BusbwAt(*curve, *common);
          // At a size still latency-bound for the fewer nodes, more nodes are slower by design.
          if (previous->peak_gbs && from < 0.5 * *previous->peak_gbs) {
            notes.push_back(fmt::format(
                "{}: {} and {} nodes share only sizes up to {}, where {} nodes are still under "
                "half their peak: not compared",
                collective.empty() ? "unknown collective" : collective, previous->nodes, nodes,
                SizeText(*common), previous->nodes));
          } else if (from > 0 && to < from * (1 - tolerance)) {
            out.push_back({.collective = collective,
                           .from_nodes = previous->nodes,
                           .to_nodes = nodes,
                           .size_bytes = *common,
                           .from_gbs = from,
                           .to_gbs = to,
                           .drop_pct = 100.0 * (1 - to / from)});
          }
        }
      }
      previous = curve;
    }
  }
}

std::string Gbs(double v) {
  return fmt::format("{:.2f} GB/s", v);
}

std::string KindName(NcclDipKind kind) {
  switch (kind) {
    case NcclDipKind::kDip: return "dip";
    case NcclDipKind::kCliff: return "cliff";
    case NcclDipKind::kKink: return "kink";
  }
  return "dip";
}

}  // namespace

std::string NcclCurve::Name() const {
  std::string out = collective.empty() ? "unknown collective" : collective;
  if (!variant.empty()) out += " (" + variant + ")";
  out += nodes > 0 ? fmt::format(", {} node{}", nodes, nodes == 1 ? "" : "s") : ", nodes unknown";
  if (ranks > 0) out += fmt::format(", {} rank{}", ranks, ranks == 1 ? "" : "s");
  return out;
}

bool NcclAnalysis::Faulty() const {
  if (std::ranges::any_of(curves, [](const NcclCurve& c) { return c.WrongResults(); })) {
    return true;
  }
  const bool dip =
      std::ranges::any_of(dips, [](const NcclDip& d) { return d.kind != NcclDipKind::kKink; });
  const bool short_of =
      std::ranges::any_of(platform, [](const NcclAgainstPlatform& p) { return p.short_of; });
  return dip || !scaling.empty() || short_of;
}

std::string SizeText(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  uint64_t whole = bytes;
  while (unit + 1 < std::size(kUnits) && whole >= 1024 && whole % 1024 == 0) {
    whole /= 1024;
    ++unit;
  }
  if (whole < 10000 || unit + 1 == std::size(kUnits))
    return fmt::format("{} {}", whole, kUnits[unit]);
  return fmt::format("{} B", bytes);
}

NcclAnalysis AnalyzeNccl(const std::vector<NcclInput>& inputs, const NcclAnalysisOptions& options) {
  NcclAnalysis out;
  out.tolerance = options.tolerance;
  bool any_tuning = false;
  for (const NcclInput& input : inputs) {
    any_tuning = any_tuning || !input.output.tuning.empty();
    const std::string name = SanitizeUtf8(input.name);
    for (const std::string& p : input.output.problems) out.problems.push_back(name + ": " + p);
    for (const std::string& w : input.output.warnings) out.warnings.push_back(name + ": " + w);
    for (size_t t = 0; t < input.output.tables.size(); ++t) {
      NcclCurve curve = CurveOf(input.name, t, input.output.tables[t], input.output.tuning);
      if (curve.points.empty()) continue;  // the parser said why
      curve.variant = SanitizeUtf8(input.variant);
      out.curves.push_back(std::move(curve));
    }
  }
  for (size_t c = 0; c < out.curves.size(); ++c) {
    const NcclCurve& curve = out.curves[c];
    if (curve.points.size() < 3) {
      out.notes.push_back(fmt::format("{} ({}): {} size(s): too few to judge its shape",
                                      curve.Name(), curve.origin, curve.points.size()));
    }
    FindDips(c, curve, options, out.dips);
    if (curve.nodes == 0) {
      out.notes.push_back(fmt::format(
          "{} ({}): its ranks' hosts are not listed, so it is left out of the node-count "
          "comparison{}",
          curve.Name(), curve.origin,
          options.platform == nullptr ? "" : " and not set against the platform"));
      continue;
    }
    if (options.platform != nullptr && curve.peak_gbs && !curve.variant.empty() &&
        curve.variant != "nvlink") {
      out.notes.push_back(
          fmt::format("{} ({}): the platform's figures are for NCCL's defaults, not this variant's",
                      curve.Name(), curve.origin));
    } else if (options.platform != nullptr && curve.peak_gbs) {
      const NcclPlatform& platform = *options.platform;
      const NcclExpectation* e = platform.Find(curve.collective, curve.nodes);
      if (curve.ranks != curve.nodes * platform.gpus_per_node) {
        out.notes.push_back(
            fmt::format("{} ({}): not {} GPUs on each node, so {}'s figures do not apply",
                        curve.Name(), curve.origin, platform.gpus_per_node, platform.name));
      } else if (e == nullptr) {
        out.notes.push_back(fmt::format("{} ({}): {} gives no figure for it", curve.Name(),
                                        curve.origin, platform.name));
      } else if (curve.largest_size_bytes < kPlatformMinSize) {
        out.notes.push_back(fmt::format(
            "{} ({}): the sweep stops at {}; {}'s figure is for {} and more: not compared",
            curve.Name(), curve.origin, SizeText(curve.largest_size_bytes), platform.name,
            SizeText(kPlatformMinSize)));
      } else {
        const double ratio = *curve.peak_gbs / e->busbw_gbs;
        out.platform.push_back({.curve = c,
                                .platform = platform.name,
                                .expected_gbs = e->busbw_gbs,
                                .measured_gbs = *curve.peak_gbs,
                                .measured_size_bytes = curve.peak_size_bytes,
                                .ratio = ratio,
                                .short_of = ratio < 1 - options.tolerance,
                                .basis = e->basis});
      }
    }
  }
  FindScalingDrops(out.curves, options.tolerance, out.scaling, out.notes);
  // NCCL's algorithms are no part of the CPU stand-in's curves: nothing to say of them there.
  const bool nccl =
      std::ranges::any_of(out.curves, [](const NcclCurve& c) { return !c.cpu_stand_in; });
  if (nccl && !out.dips.empty() && !any_tuning) {
    out.notes.push_back(
        "no NCCL tuning lines: a dip at an algorithm or protocol switch cannot be told from a "
        "fault (run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING)");
  }
  if (nccl && std::ranges::any_of(out.scaling,
                                  [](const NcclScalingDrop& d) { return d.from_nodes == 2; })) {
    out.notes.push_back(
        "2-node runs can use Tree or NVLSTree and show more than the network carries; rerun "
        "with NCCL_ALGO=Ring to compare the network alone");
  }
  return out;
}

json NcclAnalysisJson(const NcclAnalysis& analysis) {
  json curves = json::array();
  for (const NcclCurve& c : analysis.curves) {
    json points = json::array();
    for (const NcclCurvePoint& p : c.points) {
      points.push_back({{"size_bytes", p.size_bytes},
                        {"busbw_gbs", p.busbw_gbs},
                        {"nccl_choice", p.choice.empty() ? json(nullptr) : json(p.choice)}});
    }
    curves.push_back(
        {{"origin", c.origin},
         {"collective", c.collective},
         {"variant", c.variant},
         {"wrong_values", c.wrong_values},
         {"wrong_sizes", c.wrong_sizes},
         {"out_of_bounds_failed", c.out_of_bounds_failed},
         {"concluded", c.concluded},
         {"nodes", c.nodes > 0 ? json(c.nodes) : json(nullptr)},
         {"ranks", c.ranks},
         {"peak_busbw_gbs", c.peak_gbs ? json(*c.peak_gbs) : json(nullptr)},
         {"peak_size_bytes", c.peak_size_bytes},
         {"largest_size_busbw_gbs", c.largest_gbs ? json(*c.largest_gbs) : json(nullptr)},
         {"largest_size_bytes", c.largest_size_bytes},
         {"points", points}});
  }
  json dips = json::array();
  for (const NcclDip& d : analysis.dips) {
    dips.push_back({{"curve", d.curve},
                    {"kind", KindName(d.kind)},
                    {"best_size_bytes", d.best_size_bytes},
                    {"best_busbw_gbs", d.best_gbs},
                    {"at_size_bytes", d.at_size_bytes},
                    {"at_busbw_gbs", d.at_gbs},
                    {"first_size_bytes", d.first_size_bytes},
                    {"last_size_bytes", d.last_size_bytes},
                    {"depth_pct", d.depth_pct},
                    {"nccl_switch", d.switch_from.empty()
                                        ? json(nullptr)
                                        : json{{"from", d.switch_from}, {"to", d.switch_to}}}});
  }
  json scaling = json::array();
  for (const NcclScalingDrop& s : analysis.scaling) {
    scaling.push_back({{"collective", s.collective},
                       {"from_nodes", s.from_nodes},
                       {"to_nodes", s.to_nodes},
                       {"size_bytes", s.size_bytes},
                       {"from_busbw_gbs", s.from_gbs},
                       {"to_busbw_gbs", s.to_gbs},
                       {"drop_pct", s.drop_pct}});
  }
  json platform = json::array();
  for (const NcclAgainstPlatform& p : analysis.platform) {
    platform.push_back({{"curve", p.curve},
                        {"platform", p.platform},
                        {"expected_busbw_gbs", p.expected_gbs},
                        {"measured_busbw_gbs", p.measured_gbs},
                        {"measured_size_bytes", p.measured_size_bytes},
                        {"ratio", p.ratio},
                        {"short_of", p.short_of},
                        {"basis", p.basis}});
  }
  return {{"schema", "cmax.nccl-analysis/v1"},
          {"tolerance", analysis.tolerance},
          {"faulty", analysis.Faulty()},
          {"curves", curves},
          {"dips", dips},
          {"scaling", scaling},
          {"platform", platform},
          {"notes", analysis.notes},
          {"problems", analysis.problems},
          {"warnings", analysis.warnings}};
}

std::string NcclAnalysisText(const NcclAnalysis& analysis, bool per_size) {
  std::string out;
  for (size_t c = 0; c < analysis.curves.size(); ++c) {
    const NcclCurve& curve = analysis.curves[c];
    out += fmt::format("{}  ({})\n", curve.Name(), curve.origin);
    if (curve.peak_gbs) {
      out += fmt::format("  peak {} at {}; {} at the largest size, {}\n", Gbs(*curve.peak_gbs),
                         SizeText(curve.peak_size_bytes), Gbs(*curve.largest_gbs),
                         SizeText(curve.largest_size_bytes));
    }
    if (curve.WrongResults()) {
      out +=
          fmt::format("  WRONG  {:g} wrong value(s) at {} size(s){}: its figures are worthless\n",
                      curve.wrong_values, curve.wrong_sizes,
                      curve.out_of_bounds_failed ? ", out-of-bounds check FAILED" : "");
    }
    if (!curve.concluded) {
      out += fmt::format("  CUT    the run stops after {} (no footer: a rank crashed or hung?)\n",
                         SizeText(curve.largest_size_bytes));
    }
    if (per_size) {
      out += fmt::format("  {:>10}  {:>12}  {}\n", "size", "busbw GB/s", "NCCL chose");
      for (const NcclCurvePoint& p : curve.points) {
        out +=
            fmt::format("  {:>10}  {:>12.2f}  {}\n", SizeText(p.size_bytes), p.busbw_gbs, p.choice);
      }
    }
    for (const NcclDip& d : analysis.dips) {
      if (d.curve != c) continue;
      std::string where = SizeText(d.first_size_bytes);
      if (d.last_size_bytes != d.first_size_bytes) where += " to " + SizeText(d.last_size_bytes);
      std::string label = KindName(d.kind);
      std::ranges::transform(label, label.begin(), [](char ch) { return ch - 'a' + 'A'; });
      std::string line = fmt::format("  {:<5}  {}: down to {} at {}, {:.0f}% below {} at {}", label,
                                     where, Gbs(d.at_gbs), SizeText(d.at_size_bytes), d.depth_pct,
                                     Gbs(d.best_gbs), SizeText(d.best_size_bytes));
      if (d.kind == NcclDipKind::kCliff) line += "; not back by the largest size";
      if (!d.switch_from.empty()) {
        line += fmt::format("; NCCL switched {} -> {} there", d.switch_from, d.switch_to);
        if (d.kind == NcclDipKind::kKink) line += " (a switch point, not a fault)";
      }
      out += line + "\n";
    }
    for (const NcclAgainstPlatform& p : analysis.platform) {
      if (p.curve != c) continue;
      out += fmt::format("  {:<5}  {}: peak {} is {:.0f}% of the {} a healthy one reaches ({})\n",
                         p.short_of ? "SHORT" : "OK", p.platform, Gbs(p.measured_gbs),
                         100 * p.ratio, Gbs(p.expected_gbs), p.basis);
    }
  }
  for (const NcclScalingDrop& s : analysis.scaling) {
    out +=
        fmt::format("DROP   {}: {} -> {} nodes at {}: {} -> {}, {:.0f}% lower\n",
                    s.collective.empty() ? "unknown collective" : s.collective, s.from_nodes,
                    s.to_nodes, SizeText(s.size_bytes), Gbs(s.from_gbs), Gbs(s.to_gbs), s.drop_pct);
  }
  for (const std::string& n : analysis.notes) out += "note: " + n + "\n";
  for (const std::string& p : analysis.problems) out += "problem: " + p + "\n";
  for (const std::string& w : analysis.warnings) out += "NCCL: " + w + "\n";
  const size_t faults = std::ranges::count_if(
      analysis.dips, [](const NcclDip& d) { return d.kind != NcclDipKind::kKink; });
  const size_t short_of = std::ranges::count_if(
      analysis.platform, [](const NcclAgainstPlatform& p) { return p.short_of; });
  const size_t wrong =
      std::ranges::count_if(analysis.curves, [](const NcclCurve& c) { return c.WrongResults(); });
  out += fmt::format(
      "{} curve(s){}: {} dip(s) or cliff(s), {} switch-point kink(s), {} drop(s) with "
      "the node count{} (tolerance {:.0f}%)\n",
      analysis.curves.size(), wrong > 0 ? fmt::format(", {} with wrong results", wrong) : "",
      faults, analysis.dips.size() - faults, analysis.scaling.size(),
      analysis.platform.empty() ? "" : fmt::format(", {} short of the platform", short_of),
      100 * analysis.tolerance);
  return out;
}

}  // namespace cmax::net
