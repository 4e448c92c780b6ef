#include "net/bad_node_finder.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

#include "core/strings.hpp"

namespace cmax::net {
namespace {

using nlohmann::json;

class Finder {
 public:
  Finder(const MeasureGroup& measure, const BadNodeOptions& options, BadNodeVerdict& out)
      : measure_(measure), options_(options), out_(out) {}

  // The group's measurement, counted against the bound; none once the bound is reached.
  std::optional<GroupMeasurement> Measure(const std::vector<std::string>& nodes) {
    if (options_.stop && options_.stop()) {
      if (!bounded_) {
        out_.notes.push_back("stopped: asked to stop before the search ended");
        bounded_ = true;
      }
      return std::nullopt;
    }
    if (out_.measurements.size() >= options_.max_measurements) {
      if (!bounded_) {
        out_.notes.push_back(
            fmt::format("stopped after {} measurements (the bound)", options_.max_measurements));
        bounded_ = true;
      }
      return std::nullopt;
    }
    GroupMeasurement m = measure_(nodes);
    m.nodes = nodes;
    if (m.busbw_gbs) {
      if (!best_ || *m.busbw_gbs > *best_) best_ = m.busbw_gbs;
      for (const std::string& n : nodes) {
        auto [it, added] = best_of_.emplace(n, *m.busbw_gbs);
        if (!added) it->second = std::max(it->second, *m.busbw_gbs);
      }
    }
    out_.measurements.push_back(m);
    return m;
  }

  std::optional<double> Reference() const {
    return options_.reference_gbs ? options_.reference_gbs : best_;
  }
  bool SlowFigure(std::optional<double> busbw) const {
    const std::optional<double> reference = Reference();
    if (!busbw) return true;
    return reference && *busbw < *reference * (1 - options_.tolerance);
  }
  bool Slow(const GroupMeasurement& m) const { return SlowFigure(m.busbw_gbs); }
  // Seen in a group that was fast, judged against today's reference: the best figure can rise
  // as narrower groups are measured, and a group once thought fast may not be.
  bool Fast(const std::string& node) const {
    const auto it = best_of_.find(node);
    return it != best_of_.end() && !SlowFigure(it->second);
  }
  bool Convicted(const std::string& node) const {
    return cleared_.contains(node) ||
           std::ranges::any_of(out_.slow, [&](const SlowNode& s) { return s.node == node; });
  }
  bool Bounded() const { return bounded_; }

  // Narrows `group` (measured as `whole`) to the nodes that make it slow: by halves, each slow
  // half narrowed in turn, down to pairs.
  void Narrow(const std::vector<std::string>& group, const GroupMeasurement& whole) {
    if (group.size() <= 3) return Pairs(group);
    const auto middle = group.begin() + static_cast<std::ptrdiff_t>(group.size() / 2);
    const std::vector<std::string> halves[] = {{group.begin(), middle}, {middle, group.end()}};
    std::optional<GroupMeasurement> measured[2];
    for (int h = 0; h < 2; ++h) {
      measured[h] = Measure(halves[h]);
      if (!measured[h]) return;
    }
    bool narrowed = false;
    for (int h = 0; h < 2; ++h) {
      if (Slow(*measured[h])) {
        narrowed = true;
        Narrow(halves[h], *measured[h]);
      }
    }
    if (!narrowed && Slow(whole)) {
      // Each half is fast alone and the whole is slow: the fault is on a path the halves use
      // only together, not in one node.
      between_.push_back(fmt::format(
          "{} and {} are each fast alone, together slow: a path between them, not one node",
          Join(halves[0], ","), Join(halves[1], ",")));
    }
  }

  // The suspects not yet seen fast, each paired with the node seen fastest; where none is
  // known, every pair of them, and a node is slow when each of its pairs is and some pair is
  // not.
  void Pairs(const std::vector<std::string>& suspects) {
    std::vector<std::string> unknown;
    for (const std::string& n : suspects) {
      if (!Fast(n) && !Convicted(n)) unknown.push_back(n);
    }
    if (unknown.empty()) return;
    for (const std::string& node : unknown) {
      const std::optional<std::string> partner = FastestOtherThan(node);
      if (!partner) return AllPairs(suspects);
      const std::optional<GroupMeasurement> m = Measure({node, *partner});
      if (!m) return;
      if (Slow(*m)) suspected_.push_back({node, *partner, *m});
    }
  }

  // Slow beside one fast node may be the path between the two (a link between switches), not
  // the node: once every half has been narrowed (so that fast nodes of each side are known), a
  // second fast node never seen fast together with the first decides.
  void Confirm() {
    std::vector<Suspicion> suspected;
    suspected.swap(suspected_);
    for (const Suspicion& s : suspected) {
      if (Convicted(s.node)) continue;
      const std::optional<std::string> second = FastestOtherThan(s.node, s.partner);
      if (!second) {
        Convict(s.node, s.partner, s.measured);
        continue;
      }
      const std::optional<GroupMeasurement> again = Measure({s.node, *second});
      if (!again) return;
      if (Slow(*again)) {
        Convict(s.node, s.partner, s.measured);
      } else {
        cleared_.insert(s.node);
        between_.push_back(fmt::format(
            "{} is slow beside {} and fast beside {}: the path between {} and {}, not {}", s.node,
            s.partner, *second, s.node, s.partner, s.node));
      }
    }
  }

  // Every node not yet seen fast nor named, paired with the fastest: a group judged fast early,
  // against a lower reference, may hide a slow node.
  void Sweep(const std::vector<std::string>& group) {
    while (!bounded_) {
      std::vector<std::string> left;
      for (const std::string& n : group) {
        if (!Fast(n) && !Convicted(n)) left.push_back(n);
      }
      const size_t before = out_.measurements.size();
      Confirm();
      if (left.empty() || !FastestOtherThan(left.front())) return;
      Pairs(left);
      Confirm();
      if (out_.measurements.size() == before) return;
    }
  }

  // Every pair of `suspects`: for a group too small to halve, where no node is known fast.
  void AllPairs(const std::vector<std::string>& suspects) {
    std::vector<GroupMeasurement> pairs;
    for (size_t i = 0; i < suspects.size(); ++i) {
      for (size_t j = i + 1; j < suspects.size(); ++j) {
        const std::optional<GroupMeasurement> m = Measure({suspects[i], suspects[j]});
        if (!m) return;
        pairs.push_back(*m);
      }
    }
    if (std::ranges::none_of(pairs, [this](const GroupMeasurement& m) { return !Slow(m); })) {
      out_.notes.push_back(fmt::format(
          "no pair of {} is faster than another: nothing to tell a slow node from{}",
          Join(suspects, ","),
          options_.reference_gbs ? "" : " (a reference, such as the platform's figure, would)"));
      return;
    }
    // Each node in no fast pair, convicted by its pair with a node that is in one.
    for (const std::string& node : suspects) {
      if (Fast(node) || Convicted(node)) continue;
      for (const GroupMeasurement& m : pairs) {
        if (std::ranges::find(m.nodes, node) == m.nodes.end()) continue;
        const std::string& other = m.nodes[0] == node ? m.nodes[1] : m.nodes[0];
        if (!Fast(other)) continue;
        Convict(node, other, m);
        break;
      }
    }
  }

  // Faults between halves rather than in a node, as Narrow found them.
  const std::vector<std::string>& Between() const { return between_; }

 private:
  // The node seen fastest other than `node`; with `apart`, one never measured fast together
  // with `apart` (another side of the fabric), else any other.
  std::optional<std::string> FastestOtherThan(const std::string& node,
                                              const std::string& apart = {}) const {
    std::optional<std::string> out;
    std::optional<std::string> fallback;
    double best = 0;
    double fallback_best = 0;
    for (const auto& [n, bw] : best_of_) {
      if (n == node || n == apart || !Fast(n) || Convicted(n)) continue;
      if (!apart.empty() && FastTogether(n, apart)) {
        if (!fallback || bw > fallback_best) {
          fallback = n;
          fallback_best = bw;
        }
        continue;
      }
      if (!out || bw > best) {
        out = n;
        best = bw;
      }
    }
    return out ? out : fallback;
  }

  bool FastTogether(const std::string& a, const std::string& b) const {
    return std::ranges::any_of(out_.measurements, [&](const GroupMeasurement& m) {
      return !Slow(m) && std::ranges::find(m.nodes, a) != m.nodes.end() &&
             std::ranges::find(m.nodes, b) != m.nodes.end();
    });
  }

  void Convict(const std::string& node, const std::string& partner, const GroupMeasurement& m) {
    out_.slow.push_back({.node = node,
                         .busbw_gbs = m.busbw_gbs,
                         .partner = partner,
                         .why = m.busbw_gbs
                                    ? std::string("its pair with a fast node is slow")
                                    : "its pair with a fast node could not run: " + m.problem});
  }

  const MeasureGroup& measure_;
  const BadNodeOptions& options_;
  BadNodeVerdict& out_;
  std::optional<double> best_;
  std::map<std::string, double> best_of_;  // each node's best group figure
  struct Suspicion {
    std::string node;
    std::string partner;
    GroupMeasurement measured;
  };
  std::vector<Suspicion> suspected_;  // slow beside one fast node, to be confirmed
  std::vector<std::string> between_;
  std::set<std::string> cleared_;  // slow beside one fast node only: a path, not the node
  bool bounded_ = false;
};

}  // namespace

BadNodeVerdict FindBadNodes(const std::vector<std::string>& nodes, const MeasureGroup& measure,
                            const BadNodeOptions& options) {
  BadNodeVerdict out;
  std::vector<std::string> group = nodes;
  std::sort(group.begin(), group.end());
  group.erase(std::unique(group.begin(), group.end()), group.end());
  if (group.size() < 2) {
    out.notes.push_back("fewer than two nodes: nothing to compare");
    return out;
  }
  out.judged = group.size() > 2 || options.reference_gbs.has_value();
  Finder finder(measure, options, out);
  const std::optional<GroupMeasurement> whole = finder.Measure(group);
  if (!whole) return out;
  if (group.size() == 2) {
    // One pair: nothing to compare it with, and no third node to tell which of the two it is.
    out.reference_gbs = finder.Reference();
    out.notes.push_back(
        !options.reference_gbs ? "two nodes alone: one pair and nothing to compare it with (a "
                                 "reference, such as the platform's figure, would)"
        : finder.Slow(*whole)  ? "the pair is slow; which of the two needs a third node"
                               : "no node drags the group down");
    return out;
  }
  // Without a reference one figure is no verdict: the halves (or the pairs) give the comparison.
  if (!options.reference_gbs || finder.Slow(*whole)) {
    if (group.size() >= 4) {
      finder.Narrow(group, *whole);
    } else if (!options.reference_gbs) {
      finder.AllPairs(group);
    } else {
      finder.Pairs(group);
    }
    finder.Sweep(group);
  }
  out.reference_gbs = finder.Reference();
  for (const std::string& note : finder.Between()) out.notes.push_back(note);
  if (out.slow.empty() && out.notes.empty()) {
    out.notes.push_back(finder.Slow(*whole) ? "the group is slow and no node of it stands out"
                                            : "no node drags the group down");
  }
  return out;
}

json BadNodeVerdictJson(const BadNodeVerdict& verdict) {
  json slow = json::array();
  for (const SlowNode& s : verdict.slow) {
    slow.push_back({{"node", s.node},
                    {"busbw_gbs", s.busbw_gbs ? json(*s.busbw_gbs) : json(nullptr)},
                    {"partner", s.partner},
                    {"why", s.why}});
  }
  json measurements = json::array();
  for (const GroupMeasurement& m : verdict.measurements) {
    measurements.push_back({{"nodes", m.nodes},
                            {"busbw_gbs", m.busbw_gbs ? json(*m.busbw_gbs) : json(nullptr)},
                            {"problem", m.problem}});
  }
  return {
      {"schema", "cmax.nccl-bad-nodes/v1"},
      {"slow", slow},
      {"reference_busbw_gbs", verdict.reference_gbs ? json(*verdict.reference_gbs) : json(nullptr)},
      {"measurements", measurements},
      {"notes", verdict.notes}};
}

std::string BadNodeVerdictText(const BadNodeVerdict& verdict) {
  std::string out;
  for (const GroupMeasurement& m : verdict.measurements) {
    out += fmt::format(
        "  {:<40} {}\n", Join(m.nodes, ","),
        m.busbw_gbs ? fmt::format("{:.2f} GB/s", *m.busbw_gbs) : "failed: " + m.problem);
  }
  for (const SlowNode& s : verdict.slow) {
    out +=
        fmt::format("SLOW   {}: {} beside {} ({})\n", s.node,
                    s.busbw_gbs ? fmt::format("{:.2f} GB/s", *s.busbw_gbs) : "no figure", s.partner,
                    verdict.reference_gbs
                        ? fmt::format("{}; reference {:.2f} GB/s", s.why, *verdict.reference_gbs)
                        : s.why);
  }
  for (const std::string& n : verdict.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace cmax::net
