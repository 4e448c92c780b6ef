#include "train/trace_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <utility>

#include "core/strings.hpp"

namespace cmax::train {
namespace {

using Span = std::pair<int64_t, int64_t>;

constexpr double kNs = 1e-9;

// HTA's merge_kernel_intervals: sorted by start, an interval joins the group while it starts
// no later than the group's end.
std::vector<Span> Merge(std::vector<Span> spans) {
  std::ranges::sort(spans);
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

int64_t Length(const std::vector<Span>& merged) {
  int64_t total = 0;
  for (const Span& s : merged) total += s.second - s.first;
  return total;
}

int64_t IntersectionLength(const std::vector<Span>& a, const std::vector<Span>& b) {
  int64_t total = 0;
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first);
    const int64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::ranges::sort(v);
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::optional<int> RankFromFileName(const std::string& file) {
  // TorchTitan's rank<R>_trace.json(.gz), HTA's rank-<R>.json, and the like.
  static const std::regex kRank(R"((?:^|[^A-Za-z])rank[-_]?(\d{1,7})(?:[^0-9]|$))",
                                std::regex::icase);
  const size_t slash = file.rfind('/');
  const std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  std::smatch m;
  if (!std::regex_search(base, m, kRank)) return std::nullopt;
  return std::stoi(m[1].str());
}

std::string StepRanges(const std::vector<int64_t>& steps) {
  if (steps.empty()) return "none";
  if (steps.size() == 1) return std::to_string(steps.front());
  return fmt::format("{}-{}", steps.front(), steps.back());
}

std::string Pct(double v) {
  return fmt::format("{:.0f}%", v);
}

}  // namespace

std::optional<double> TimeBreakdown::OverlapPct() const {
  if (communication_s <= 0) return std::nullopt;
  return 100.0 * overlap_s / communication_s;
}

TimeBreakdown BreakDown(const std::vector<GpuInterval>& events) {
  TimeBreakdown out;
  if (events.empty()) return out;
  std::vector<Span> all;
  std::vector<Span> compute;
  std::vector<Span> communication;
  std::vector<Span> memory;
  std::array<std::vector<Span>, kCollectiveKinds> by_kind;
  all.reserve(events.size());
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  for (const GpuInterval& e : events) {
    const Span s{e.start_ns, e.end_ns};
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
    all.push_back(s);
    switch (e.kind) {
      case KernelKind::kCompute: compute.push_back(s); break;
      case KernelKind::kCommunication:
        communication.push_back(s);
        by_kind[static_cast<size_t>(e.collective)].push_back(s);
        break;
      case KernelKind::kMemory: memory.push_back(s); break;
      case KernelKind::kOther: break;
    }
  }
  const std::vector<Span> compute_merged = Merge(std::move(compute));
  const std::vector<Span> communication_merged = Merge(std::move(communication));
  out.span_s = static_cast<double>(last - first) * kNs;
  out.busy_s = static_cast<double>(Length(Merge(std::move(all)))) * kNs;
  out.idle_s = std::max(0.0, out.span_s - out.busy_s);
  out.compute_s = static_cast<double>(Length(compute_merged)) * kNs;
  out.communication_s = static_cast<double>(Length(communication_merged)) * kNs;
  out.memory_s = static_cast<double>(Length(Merge(std::move(memory)))) * kNs;
  out.overlap_s =
      static_cast<double>(IntersectionLength(communication_merged, compute_merged)) * kNs;
  out.exposed_communication_s = std::max(0.0, out.communication_s - out.overlap_s);
  for (size_t k = 0; k < by_kind.size(); ++k) {
    if (by_kind[k].empty()) continue;
    const std::vector<Span> merged = Merge(std::move(by_kind[k]));
    const int64_t length = Length(merged);
    out.communication_by_kind_s[k] = static_cast<double>(length) * kNs;
    out.exposed_by_kind_s[k] =
        static_cast<double>(length - IntersectionLength(merged, compute_merged)) * kNs;
  }
  return out;
}

double BusBandwidthFactor(CollectiveKind kind, int ranks) {
  if (ranks <= 1) return kind == CollectiveKind::kAllReduce ? 0 : 1;
  const double n = ranks;
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (n - 1) / n;
    default: return 1;
  }
}

std::string RankRanges(std::vector<int> ranks) {
  std::ranges::sort(ranks);
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

RankAnalysis AnalyzeRank(std::string file, const KinetoTrace& trace, const RankOptions& options) {
  RankAnalysis out;
  out.trace_rank = trace.rank;
  out.world_size = trace.world_size;
  RankFigures& f = out.figures;
  f.file = std::move(file);
  f.bytes = trace.bytes;
  f.events = trace.events;
  f.skipped = trace.skipped;
  f.skipped_steps = trace.skipped_steps;
  f.ended_early = trace.ended_early;
  f.end_reason = trace.end_reason;

  std::vector<StepMark> steps = trace.steps;
  std::ranges::sort(steps, {}, &StepMark::start_ns);
  std::set<int64_t> seen;
  std::erase_if(steps, [&](const StepMark& s) { return !seen.insert(s.step).second; });
  std::vector<Launch> launches = trace.launches;
  std::ranges::sort(launches, {}, &Launch::correlation);
  const auto launched_at = [&](int64_t correlation) -> std::optional<int64_t> {
    if (correlation < 0) return std::nullopt;
    const auto at = std::ranges::lower_bound(launches, correlation, {}, &Launch::correlation);
    if (at == launches.end() || at->correlation != correlation) return std::nullopt;
    return at->ts_ns;
  };

  // HTA's window: the steps but the last, and the GPU events launched in the trace before it.
  const bool windowed = steps.size() >= 2 && !launches.empty() && !options.include_last_step;
  std::vector<GpuInterval> kept;
  std::vector<CollectiveCall> collectives;
  if (windowed) {
    const int64_t cutoff = steps.back().start_ns;
    f.left_out_step = steps.back().step;
    steps.pop_back();
    kept.reserve(trace.gpu.size());
    for (const GpuInterval& g : trace.gpu) {
      const std::optional<int64_t> launch = launched_at(g.correlation);
      if (launch && *launch < cutoff) {
        kept.push_back(g);
      } else {
        ++f.left_out_events;
      }
    }
    // Collectives are kept by the same rule: the kernels' times identify them.
    std::set<std::pair<int64_t, int64_t>> times;
    for (const GpuInterval& g : kept) {
      if (g.kind == KernelKind::kCommunication) times.emplace(g.start_ns, g.end_ns);
    }
    for (const CollectiveCall& c : trace.collectives) {
      if (times.contains({c.start_ns, c.end_ns})) collectives.push_back(c);
    }
  }
  const std::vector<GpuInterval>& gpu = windowed ? kept : trace.gpu;
  if (windowed) {
    out.collectives = std::move(collectives);
  } else {
    out.collectives = trace.collectives;
  }
  std::ranges::sort(out.collectives, {}, &CollectiveCall::start_ns);
  f.whole = BreakDown(gpu);
  f.gpu_events = gpu.size();
  f.collectives = out.collectives.size();
  for (const GpuInterval& g : gpu) {
    f.first_gpu_ns = std::min(f.first_gpu_ns.value_or(g.start_ns), g.start_ns);
  }
  for (const StepMark& s : steps) f.steps.push_back(s.step);
  std::ranges::sort(f.steps);
  if (steps.empty()) return out;

  // Steps: a kernel belongs to the step its launch fell in (the host's ProfilerStep#N mark;
  // the GPU runs behind the host, so the kernel's own time would put it in the next step).
  std::map<int64_t, std::vector<GpuInterval>> by_step;
  for (const GpuInterval& g : gpu) {
    const std::optional<int64_t> launch = launched_at(g.correlation);
    if (!launch) continue;
    auto after = std::ranges::upper_bound(steps, *launch, {}, &StepMark::start_ns);
    if (after == steps.begin()) continue;
    const StepMark& step = *std::prev(after);
    if (*launch >= step.end_ns) continue;
    by_step[step.step].push_back(g);
  }
  for (auto& [step, events] : by_step) out.steps.emplace_back(step, BreakDown(events));
  return out;
}

TraceFigures CombineRanks(std::vector<RankAnalysis> ranks, const TraceReportOptions& options) {
  TraceFigures out;
  // Numbers: the trace's, else the file name's, else the next free one.
  std::set<int> taken;
  std::vector<RankAnalysis> kept;
  std::vector<size_t> unnumbered;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankAnalysis& r = ranks[i];
    std::optional<int> number = r.trace_rank;
    r.figures.rank_source = "trace";
    if (!number) {
      number = RankFromFileName(r.figures.file);
      r.figures.rank_source = "file name";
    }
    if (!number) {
      unnumbered.push_back(i);
      continue;
    }
    if (!taken.insert(*number).second) {
      out.notes.push_back(fmt::format("{} is a second trace of rank {}: left out",
                                      SanitizeUtf8(r.figures.file), *number));
      continue;
    }
    r.figures.rank = *number;
    kept.push_back(std::move(r));
  }
  int next = 0;
  for (size_t i : unnumbered) {
    while (taken.contains(next)) ++next;
    RankAnalysis& r = ranks[i];
    r.figures.rank = next;
    r.figures.rank_source = "order";
    taken.insert(next);
    out.notes.push_back(
        fmt::format("{} names no rank (no distributedInfo, no rank<N> in its name): called rank {}",
                    SanitizeUtf8(r.figures.file), next));
    kept.push_back(std::move(r));
  }
  std::ranges::sort(kept, {}, [](const RankAnalysis& r) { return r.figures.rank; });
  for (const RankAnalysis& r : kept) {
    if (r.world_size && !out.world_size) out.world_size = r.world_size;
    if (r.figures.ended_early) {
      out.notes.push_back(fmt::format("rank {} ({}): {}; the events before it are used",
                                      r.figures.rank, SanitizeUtf8(r.figures.file),
                                      r.figures.end_reason));
    }
    if (r.figures.skipped > 0) {
      out.notes.push_back(fmt::format("rank {}: {} GPU events without a usable time left out",
                                      r.figures.rank, r.figures.skipped));
    }
    if (r.figures.skipped_steps > 0) {
      out.notes.push_back(
          fmt::format("rank {}: {} profiler step marks without a usable time left out",
                      r.figures.rank, r.figures.skipped_steps));
    }
  }

  // The last steps left out, said once per step.
  std::map<int64_t, std::pair<std::vector<int>, size_t>> left_out;
  for (const RankAnalysis& r : kept) {
    if (!r.figures.left_out_step) continue;
    auto& [ranks_of, events] = left_out[*r.figures.left_out_step];
    ranks_of.push_back(r.figures.rank);
    events += r.figures.left_out_events;
  }
  for (const auto& [step, who] : left_out) {
    out.notes.push_back(fmt::format(
        "step {}, the trace's last, left out on rank{} {} as HTA leaves it (the profiler stops "
        "inside it), with {} GPU events not launched in the steps before it "
        "(--include-last-step keeps them)",
        step, who.first.size() == 1 ? "" : "s", RankRanges(who.first), who.second));
  }

  // Per rank and the means.
  std::vector<int> with_gpu;
  double overlap_sum = 0;
  size_t overlap_ranks = 0;
  for (const RankAnalysis& r : kept) {
    out.ranks.push_back(r.figures);
    const TimeBreakdown& w = r.figures.whole;
    if (r.figures.gpu_events == 0) continue;
    with_gpu.push_back(r.figures.rank);
    out.compute_pct += w.Pct(w.compute_s);
    out.exposed_communication_pct += w.Pct(w.exposed_communication_s);
    out.idle_pct += w.Pct(w.idle_s);
    if (auto o = w.OverlapPct()) {
      overlap_sum += *o;
      ++overlap_ranks;
    }
  }
  if (!with_gpu.empty()) {
    const auto n = static_cast<double>(with_gpu.size());
    out.compute_pct /= n;
    out.exposed_communication_pct /= n;
    out.idle_pct /= n;
  }
  if (overlap_ranks > 0) out.overlap_pct = overlap_sum / static_cast<double>(overlap_ranks);

  // Clocks: reported, never used across ranks.
  std::optional<int64_t> lo;
  std::optional<int64_t> hi;
  for (const RankAnalysis& r : kept) {
    if (!r.figures.first_gpu_ns) continue;
    lo = std::min(lo.value_or(*r.figures.first_gpu_ns), *r.figures.first_gpu_ns);
    hi = std::max(hi.value_or(*r.figures.first_gpu_ns), *r.figures.first_gpu_ns);
  }
  if (lo && hi && *hi - *lo > 1'000'000'000) {
    out.notes.push_back(fmt::format(
        "the ranks' first GPU events are {:.1f} s apart on their clocks: clocks differ or the "
        "traces are of different times; nothing here compares times across ranks",
        static_cast<double>(*hi - *lo) * kNs));
  }

  // Different steps on different ranks: their collectives are not the same ones.
  bool same_steps = true;
  const RankAnalysis* stepped = nullptr;
  for (const RankAnalysis& r : kept) {
    if (r.figures.steps.empty()) continue;
    if (stepped == nullptr) {
      stepped = &r;
      continue;
    }
    std::vector<int64_t> common;
    std::ranges::set_intersection(stepped->figures.steps, r.figures.steps,
                                  std::back_inserter(common));
    if (common.empty()) {
      same_steps = false;
      out.notes.push_back(fmt::format(
          "rank {}'s trace is of steps {}, rank {}'s of steps {}: traces of different steps are "
          "not matched across ranks (no straggler search)",
          stepped->figures.rank, StepRanges(stepped->figures.steps), r.figures.rank,
          StepRanges(r.figures.steps)));
      break;
    }
  }

  // Collectives by kind, over every rank.
  std::array<CollectiveFigures, kCollectiveKinds> kinds{};
  std::array<std::map<int, size_t>, kCollectiveKinds> group_sizes{};
  for (const RankAnalysis& r : kept) {
    for (const CollectiveCall& c : r.collectives) {
      CollectiveFigures& k = kinds[static_cast<size_t>(c.kind)];
      k.kind = c.kind;
      ++k.calls;
      const double seconds = static_cast<double>(c.end_ns - c.start_ns) * kNs;
      k.all_time_s += seconds;
      if (c.group_size) ++group_sizes[static_cast<size_t>(c.kind)][*c.group_size];
      if (c.bytes && seconds > 0) {
        ++k.calls_sized;
        k.bytes += *c.bytes;
        k.time_s += seconds;
        k.largest_bytes = std::max(k.largest_bytes.value_or(0), *c.bytes);
      }
    }
  }
  for (size_t i = 0; i < kinds.size(); ++i) {
    CollectiveFigures& k = kinds[i];
    if (k.calls == 0) continue;
    if (!group_sizes[i].empty()) {
      k.group_size = std::ranges::max_element(group_sizes[i], {}, [](const auto& kv) {
                       return kv.second;
                     })->first;
    }
    if (k.time_s > 0) {
      k.algbw_gbs = k.bytes / k.time_s / 1e9;
      const std::optional<int> n = k.group_size ? k.group_size : out.world_size;
      if (n) k.busbw_gbs = *k.algbw_gbs * BusBandwidthFactor(k.kind, *n);
    }
    out.collectives.push_back(k);
  }

  // Stragglers: the n-th collective of a kind in a process group is the same call on every
  // rank of it; whoever's kernel is the shortest arrived last.
  std::map<int, Straggler> by_rank;
  if (same_steps && kept.size() >= 2) {
    using Key = std::pair<std::string, CollectiveKind>;
    std::map<Key, std::map<int, std::vector<double>>> calls;
    for (const RankAnalysis& r : kept) {
      for (const CollectiveCall& c : r.collectives) {
        calls[{c.group, c.kind}][r.figures.rank].push_back(
            static_cast<double>(c.end_ns - c.start_ns) * kNs);
      }
    }
    bool uneven = false;
    for (const auto& [key, per_rank] : calls) {
      if (per_rank.size() < 2) continue;
      size_t most = 0;
      size_t least = SIZE_MAX;
      for (const auto& [rank, durations] : per_rank) {
        most = std::max(most, durations.size());
        least = std::min(least, durations.size());
      }
      uneven = uneven || most != least;
      for (size_t i = 0; i < most; ++i) {
        std::vector<std::pair<int, double>> at;
        for (const auto& [rank, durations] : per_rank) {
          if (i < durations.size()) at.emplace_back(rank, durations[i]);
        }
        if (at.size() < 2) continue;
        const auto shortest = std::ranges::min_element(at, {}, &std::pair<int, double>::second);
        double wait = 0;
        for (const auto& [rank, seconds] : at) {
          ++by_rank[rank].matched;
          wait += seconds - shortest->second;
        }
        wait /= static_cast<double>(at.size() - 1);
        if (wait <= 0) continue;
        Straggler& s = by_rank[shortest->first];
        ++s.last_in;
        s.wait_caused_s += wait;
      }
    }
    if (uneven) {
      out.notes.push_back(
          "the ranks' traces hold different numbers of some collective: calls are matched by "
          "their order as far as every rank has them");
    }
  }
  std::vector<double> spans;
  for (const RankFigures& r : out.ranks) {
    if (r.gpu_events > 0) spans.push_back(r.whole.span_s);
  }
  const double median_span = Median(spans);
  for (auto& [rank, s] : by_rank) {
    s.rank = rank;
    s.wait_pct_of_span = median_span > 0 ? 100 * s.wait_caused_s / median_span : 0;
    if (s.matched >= 3 &&
        static_cast<double>(s.last_in) >=
            options.straggler_share * static_cast<double>(s.matched) &&
        s.wait_pct_of_span >= options.straggler_wait_pct) {
      out.stragglers.push_back(s);
    }
  }
  std::ranges::sort(out.stragglers, std::greater{}, &Straggler::wait_caused_s);

  // The timeline: per step, over the ranks that have it.
  std::map<int64_t, std::vector<const TimeBreakdown*>> steps;
  for (const RankAnalysis& r : kept) {
    for (const auto& [step, breakdown] : r.steps) steps[step].push_back(&breakdown);
  }
  for (const auto& [step, breakdowns] : steps) {
    TimelineStep t{.step = step, .ranks = breakdowns.size()};
    for (const TimeBreakdown* b : breakdowns) {
      t.span_s = std::max(t.span_s, b->span_s);
      t.compute_pct += b->Pct(b->compute_s);
      t.exposed_communication_pct += b->Pct(b->exposed_communication_s);
      t.idle_pct += b->Pct(b->idle_s);
    }
    const auto n = static_cast<double>(breakdowns.size());
    t.compute_pct /= n;
    t.exposed_communication_pct /= n;
    t.idle_pct /= n;
    out.timeline.push_back(t);
  }

  // The verdict: what limits the job, in words.
  std::vector<std::string> limits;
  if (with_gpu.empty()) {
    out.verdict =
        kept.empty() ? "no trace to analyse" : "no GPU events in the traces (a CPU-only trace?)";
    return out;
  }
  std::array<double, kCollectiveKinds> exposed_by_kind{};
  for (const RankFigures& r : out.ranks) {
    for (size_t k = 0; k < exposed_by_kind.size(); ++k) {
      exposed_by_kind[k] += r.whole.exposed_by_kind_s[k];
    }
  }
  const auto worst =
      static_cast<size_t>(std::ranges::max_element(exposed_by_kind) - exposed_by_kind.begin());
  std::vector<int> exposed_ranks;
  double exposed_pct = 0;
  for (const RankFigures& r : out.ranks) {
    if (r.gpu_events == 0) continue;
    const double pct = r.whole.Pct(r.whole.exposed_by_kind_s[worst]);
    if (pct >= options.exposed_limit_pct) {
      exposed_ranks.push_back(r.rank);
      exposed_pct += pct;
    }
  }
  if (!exposed_ranks.empty()) {
    const bool every = exposed_ranks.size() == with_gpu.size();
    limits.push_back(
        fmt::format("{} of step time is exposed {} {}",
                    Pct(exposed_pct / static_cast<double>(exposed_ranks.size())),
                    CollectiveKindName(static_cast<CollectiveKind>(worst)),
                    every ? (with_gpu.size() == 1 ? fmt::format("on rank {}", with_gpu.front())
                                                  : std::string("on every rank"))
                          : fmt::format("on rank{} {}", exposed_ranks.size() == 1 ? "" : "s",
                                        RankRanges(exposed_ranks))));
  } else if (out.exposed_communication_pct >= options.exposed_limit_pct) {
    limits.push_back(fmt::format("{} of step time is exposed communication",
                                 Pct(out.exposed_communication_pct)));
  }
  std::vector<int> idle_ranks;
  double idle_pct = 0;
  for (const RankFigures& r : out.ranks) {
    if (r.gpu_events == 0) continue;
    const double pct = r.whole.Pct(r.whole.idle_s);
    if (pct >= options.idle_limit_pct) {
      idle_ranks.push_back(r.rank);
      idle_pct += pct;
    }
  }
  if (!idle_ranks.empty()) {
    limits.push_back(fmt::format(
        "the GPU is idle {} of the time on rank{} {} (waiting on the host: data loading, "
        "launches, synchronisation)",
        Pct(idle_pct / static_cast<double>(idle_ranks.size())), idle_ranks.size() == 1 ? "" : "s",
        RankRanges(idle_ranks)));
  }
  for (const Straggler& s : out.stragglers) {
    limits.push_back(fmt::format(
        "rank {} is a straggler: the last to arrive at {} of {} collectives, the others waiting "
        "{:.1f} ms for it ({} of the span)",
        s.rank, s.last_in, s.matched, s.wait_caused_s * 1e3, Pct(s.wait_pct_of_span)));
  }
  if (limits.empty()) {
    out.verdict =
        fmt::format("compute-bound: {} of GPU time computing, {} exposed communication, {} idle",
                    Pct(out.compute_pct), Pct(out.exposed_communication_pct), Pct(out.idle_pct));
  } else {
    out.verdict = limits.front();
    for (size_t i = 1; i < limits.size(); ++i) out.verdict += "; " + limits[i];
  }
  return out;
}

TraceFigures AnalyzeTraces(const std::vector<NamedTrace>& traces,
                           const TraceReportOptions& options) {
  std::vector<RankAnalysis> ranks;
  ranks.reserve(traces.size());
  for (const NamedTrace& t : traces) ranks.push_back(AnalyzeRank(t.file, t.trace, options.rank));
  return CombineRanks(std::move(ranks), options);
}

namespace {

nlohmann::json Optional(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json BreakdownJson(const TimeBreakdown& b) {
  nlohmann::json by_kind = nlohmann::json::object();
  for (size_t k = 0; k < b.communication_by_kind_s.size(); ++k) {
    if (b.communication_by_kind_s[k] <= 0) continue;
    by_kind[std::string(CollectiveKindName(static_cast<CollectiveKind>(k)))] = {
        {"communication_s", b.communication_by_kind_s[k]},
        {"exposed_s", b.exposed_by_kind_s[k]},
        {"exposed_pct", b.Pct(b.exposed_by_kind_s[k])}};
  }
  return {{"span_s", b.span_s},
          {"busy_s", b.busy_s},
          {"idle_s", b.idle_s},
          {"compute_s", b.compute_s},
          {"communication_s", b.communication_s},
          {"memory_s", b.memory_s},
          {"overlap_s", b.overlap_s},
          {"exposed_communication_s", b.exposed_communication_s},
          {"compute_pct", b.Pct(b.compute_s)},
          {"exposed_communication_pct", b.Pct(b.exposed_communication_s)},
          {"idle_pct", b.Pct(b.idle_s)},
          {"overlap_pct", Optional(b.OverlapPct())},
          {"by_collective", by_kind}};
}

}  // namespace

nlohmann::json TraceFiguresJson(const TraceFigures& f) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankFigures& r : f.ranks) {
    nlohmann::json j = BreakdownJson(r.whole);
    j["rank"] = r.rank;
    j["rank_source"] = r.rank_source;
    j["file"] = SanitizeUtf8(r.file);
    j["bytes"] = r.bytes;
    j["events"] = r.events;
    j["gpu_events"] = r.gpu_events;
    j["collectives"] = r.collectives;
    j["steps"] = r.steps;
    j["left_out_step"] =
        r.left_out_step ? nlohmann::json(*r.left_out_step) : nlohmann::json(nullptr);
    j["left_out_events"] = r.left_out_events;
    j["ended_early"] = r.ended_early;
    j["end_reason"] = r.ended_early ? nlohmann::json(r.end_reason) : nlohmann::json(nullptr);
    ranks.push_back(std::move(j));
  }
  nlohmann::json collectives = nlohmann::json::array();
  for (const CollectiveFigures& c : f.collectives) {
    collectives.push_back(
        {{"kind", CollectiveKindName(c.kind)},
         {"calls", c.calls},
         {"calls_sized", c.calls_sized},
         {"bytes", c.bytes},
         {"time_s", c.all_time_s},
         {"group_size", c.group_size ? nlohmann::json(*c.group_size) : nlohmann::json(nullptr)},
         {"algbw_gbs", Optional(c.algbw_gbs)},
         {"busbw_gbs", Optional(c.busbw_gbs)},
         {"largest_bytes", Optional(c.largest_bytes)}});
  }
  nlohmann::json stragglers = nlohmann::json::array();
  for (const Straggler& s : f.stragglers) {
    stragglers.push_back({{"rank", s.rank},
                          {"last_in", s.last_in},
                          {"matched", s.matched},
                          {"wait_caused_s", s.wait_caused_s},
                          {"wait_pct_of_span", s.wait_pct_of_span}});
  }
  nlohmann::json timeline = nlohmann::json::array();
  for (const TimelineStep& t : f.timeline) {
    timeline.push_back({{"step", t.step},
                        {"ranks", t.ranks},
                        {"span_s", t.span_s},
                        {"compute_pct", t.compute_pct},
                        {"exposed_communication_pct", t.exposed_communication_pct},
                        {"idle_pct", t.idle_pct}});
  }
  return {{"schema", "cmax.train-trace/v1"},
          {"verdict", f.verdict},
          {"world_size", f.world_size ? nlohmann::json(*f.world_size) : nlohmann::json(nullptr)},
          {"compute_pct", f.compute_pct},
          {"exposed_communication_pct", f.exposed_communication_pct},
          {"idle_pct", f.idle_pct},
          {"overlap_pct", Optional(f.overlap_pct)},
          {"ranks", ranks},
          {"collectives", collectives},
          {"stragglers", stragglers},
          {"timeline", timeline},
          {"notes", f.notes}};
}

std::string TraceFiguresText(const TraceFigures& f) {
  std::string out = f.verdict + "\n";
  if (!f.ranks.empty()) {
    out += fmt::format("\n{:>5} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}  {}\n", "rank", "span ms",
                       "compute", "comm", "overlap", "exposed", "idle", "file");
    for (const RankFigures& r : f.ranks) {
      const TimeBreakdown& w = r.whole;
      const std::optional<double> overlap = w.OverlapPct();
      out += fmt::format("{:>5} {:>9.2f} {:>7.1f}% {:>7.1f}% {:>8} {:>7.1f}% {:>7.1f}%  {}\n",
                         r.rank, w.span_s * 1e3, w.Pct(w.compute_s), w.Pct(w.communication_s),
                         overlap ? fmt::format("{:.1f}%", *overlap) : std::string("-"),
                         w.Pct(w.exposed_communication_s), w.Pct(w.idle_s), SanitizeUtf8(r.file));
    }
  }
  if (!f.collectives.empty()) {
    out += fmt::format("\n{:<15} {:>8} {:>12} {:>10} {:>6} {:>10}\n", "collective", "calls",
                       "bytes", "time ms", "ranks", "busbw GB/s");
    for (const CollectiveFigures& c : f.collectives) {
      out += fmt::format("{:<15} {:>8} {:>12.4g} {:>10.2f} {:>6} {:>10}\n",
                         CollectiveKindName(c.kind), c.calls, c.bytes, c.all_time_s * 1e3,
                         c.group_size ? std::to_string(*c.group_size) : std::string("-"),
                         c.busbw_gbs ? fmt::format("{:.2f}", *c.busbw_gbs) : std::string("-"));
    }
  }
  if (!f.timeline.empty()) {
    out += fmt::format("\n{:>8} {:>6} {:>9} {:>8} {:>8} {:>8}\n", "step", "ranks", "span ms",
                       "compute", "exposed", "idle");
    for (const TimelineStep& t : f.timeline) {
      out += fmt::format("{:>8} {:>6} {:>9.2f} {:>7.1f}% {:>7.1f}% {:>7.1f}%\n", t.step, t.ranks,
                         t.span_s * 1e3, t.compute_pct, t.exposed_communication_pct, t.idle_pct);
    }
  }
  for (const std::string& note : f.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace cmax::train
