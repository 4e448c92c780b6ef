// What limits a training job, from its ranks' profiler traces (kineto_trace.hpp): per rank the
// GPU's compute, communication, exposed communication and idle time; per collective kind its
// calls, bytes and bus bandwidth; the straggler ranks; a per-step timeline; a verdict in words.
// Pure: traces in, figures out.
//
// Definitions (HTA's, so that the figures can be checked against it):
//   span      the last GPU event's end less the first's start;
//   busy      the union of every GPU event; idle = span - busy;
//   compute   the union of the compute kernels; communication likewise;
//   overlap   the time both run at once; overlap % = overlap / communication (HTA's
//             get_comm_comp_overlap); exposed communication = communication - overlap.
// A straggler is found from durations, never from timestamps across ranks (their clocks differ):
// in a collective everyone waits inside the kernel for the last to arrive, so the rank whose
// kernel is the shortest of a collective's is the one the others waited for.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "train/kineto_trace.hpp"

namespace cmax::train {

struct NamedTrace {
  std::string file;
  KinetoTrace trace;
};

struct TimeBreakdown {
  double span_s = 0;
  double busy_s = 0;
  double idle_s = 0;
  double compute_s = 0;
  double communication_s = 0;
  double memory_s = 0;
  double overlap_s = 0;
  double exposed_communication_s = 0;
  // Per collective kind: its union, and the part of it no compute covers.
  std::array<double, kCollectiveKinds> communication_by_kind_s{};
  std::array<double, kCollectiveKinds> exposed_by_kind_s{};

  double Pct(double part_s) const { return span_s > 0 ? 100.0 * part_s / span_s : 0; }
  // HTA's overlap percentage: of the communication time; none without communication.
  std::optional<double> OverlapPct() const;
};

// The breakdown of a set of GPU intervals (any order).
TimeBreakdown BreakDown(const std::vector<GpuInterval>& events);

struct RankFigures {
  int rank = 0;
  std::string rank_source;  // "trace" (distributedInfo), "file name", "order"
  std::string file;
  TimeBreakdown whole;
  uint64_t bytes = 0;  // read, uncompressed
  size_t events = 0;
  size_t gpu_events = 0;
  size_t collectives = 0;
  size_t skipped = 0;
  size_t skipped_steps = 0;
  std::optional<int64_t> first_gpu_ns;   // on the rank's own clock
  std::vector<int64_t> steps;            // the profiler steps analysed
  std::optional<int64_t> left_out_step;  // the last, left out (RankOptions)
  size_t left_out_events = 0;            // GPU events outside the window
  bool ended_early = false;
  std::string end_reason;
};

// One rank's trace reduced to what the whole job's figures need: its figures, its collectives
// (matched across ranks), its steps' breakdowns. The trace's intervals are not kept, so that
// the ranks of a large job need not all be in memory at once.
struct RankAnalysis {
  RankFigures figures;
  std::optional<int> trace_rank;  // distributedInfo's
  std::optional<int> world_size;
  std::vector<CollectiveCall> collectives;
  std::vector<std::pair<int64_t, TimeBreakdown>> steps;  // by step
};

// The rank's number: the trace's own, else "rank<N>" in its file name, else none (the caller
// numbers it by order).
//
// The window is HTA's: where the trace holds two profiler steps or more, the last is taken as
// cut short by the profiler's stop and left out (`include_last_step` keeps it), with every GPU
// event not launched by a host call before it (HTA keeps only kernels whose launch it has).
struct RankOptions {
  bool include_last_step = false;
};
RankAnalysis AnalyzeRank(std::string file, const KinetoTrace& trace,
                         const RankOptions& options = {});

struct CollectiveFigures {
  CollectiveKind kind = CollectiveKind::kOther;
  size_t calls = 0;                 // over every rank
  size_t calls_sized = 0;           // of which the trace gave the size
  double bytes = 0;                 // of the sized calls
  double time_s = 0;                // of the sized calls
  double all_time_s = 0;            // of every call
  std::optional<int> group_size;    // the most common
  std::optional<double> algbw_gbs;  // bytes / time, over the sized calls
  std::optional<double> busbw_gbs;  // algbw by nccl-tests' factor for the kind and group
  std::optional<double> largest_bytes;
};

struct Straggler {
  int rank = 0;
  size_t last_in = 0;           // collectives it arrived last at
  size_t matched = 0;           // collectives matched across ranks
  double wait_caused_s = 0;     // the others' mean wait in those collectives, summed
  double wait_pct_of_span = 0;  // of the median rank's span
};

struct TimelineStep {
  int64_t step = 0;
  size_t ranks = 0;
  double span_s = 0;       // the longest rank's
  double compute_pct = 0;  // means over the ranks, of each rank's span
  double exposed_communication_pct = 0;
  double idle_pct = 0;
};

struct TraceReportOptions {
  RankOptions rank;
  double exposed_limit_pct = 10;     // exposed communication above this limits the job
  double idle_limit_pct = 15;        // idle above this limits the job
  double straggler_share = 2.0 / 3;  // last to arrive at this share of collectives or more
  double straggler_wait_pct = 5;     // and the others' wait at least this % of the span
};

struct TraceFigures {
  std::vector<RankFigures> ranks;  // by rank
  std::vector<CollectiveFigures> collectives;
  std::vector<Straggler> stragglers;
  std::vector<TimelineStep> timeline;
  std::optional<int> world_size;  // distributedInfo's
  // Means over the ranks, % of span.
  double compute_pct = 0;
  double exposed_communication_pct = 0;
  double idle_pct = 0;
  std::optional<double> overlap_pct;  // HTA's, mean over the ranks with communication
  std::string verdict;
  std::vector<std::string> notes;  // traces cut short, ranks twice, steps that differ ...
};

TraceFigures CombineRanks(std::vector<RankAnalysis> ranks, const TraceReportOptions& options = {});
// AnalyzeRank of each, then CombineRanks.
TraceFigures AnalyzeTraces(const std::vector<NamedTrace>& traces,
                           const TraceReportOptions& options = {});

// nccl-tests' bus bandwidth factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
// all_to_all (n-1)/n; the rest 1.
double BusBandwidthFactor(CollectiveKind kind, int ranks);

// "0-3,8,10-15".
std::string RankRanges(std::vector<int> ranks);

// cmax.train-trace/v1.
nlohmann::json TraceFiguresJson(const TraceFigures& figures);
std::string TraceFiguresText(const TraceFigures& figures);

}  // namespace cmax::train
