// What limits a job, from traces the test writes with known compute, communication and overlap
// (the exposed time worked out by hand beside each), a straggler planted in one rank, ranks
// whose clocks differ, traces of different steps, a rank twice; and golden files: each
// tests/data/train/trace/NAME.trace.json gives NAME.expected.json.
#include "train/trace_analysis.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "support/corpus.hpp"
#include "support/golden.hpp"
#include "support/kineto_writer.hpp"
#include "support/temp_dir.hpp"
#include "train/trace_run.hpp"

namespace cmax::train {
namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;

KinetoTrace Read(const std::string& text) {
  StringByteSource input(text);
  auto trace = ReadKinetoTrace(input);
  EXPECT_TRUE(trace) << trace.error().message;
  return trace ? *trace : KinetoTrace{};
}

GpuInterval Interval(int64_t start_us, int64_t end_us, KernelKind kind,
                     CollectiveKind collective = CollectiveKind::kOther) {
  return {
      .start_ns = start_us * kUs, .end_ns = end_us * kUs, .kind = kind, .collective = collective};
}

// compute [0,100) [150,250); all_reduce [80,120) [200,240) (µs):
//   span 250; busy [0,120)+[150,250) = 220, idle 30; compute 200; communication 80;
//   overlap [80,100) + [200,240) = 60; exposed 20; HTA's overlap 60/80 = 75%.
TEST(TraceBreakdown, ExposedCommunicationWorkedOutByHand) {
  const auto c = KernelKind::kCompute;
  const auto m = KernelKind::kCommunication;
  const auto ar = CollectiveKind::kAllReduce;
  const TimeBreakdown b = BreakDown({Interval(200, 240, m, ar), Interval(0, 100, c),
                                     Interval(150, 250, c), Interval(80, 120, m, ar)});
  EXPECT_NEAR(b.span_s, 250e-6, 1e-12);
  EXPECT_NEAR(b.busy_s, 220e-6, 1e-12);
  EXPECT_NEAR(b.idle_s, 30e-6, 1e-12);
  EXPECT_NEAR(b.compute_s, 200e-6, 1e-12);
  EXPECT_NEAR(b.communication_s, 80e-6, 1e-12);
  EXPECT_NEAR(b.overlap_s, 60e-6, 1e-12);
  EXPECT_NEAR(b.exposed_communication_s, 20e-6, 1e-12);
  EXPECT_NEAR(*b.OverlapPct(), 75.0, 1e-9);
  EXPECT_NEAR(b.exposed_by_kind_s[static_cast<size_t>(ar)], 20e-6, 1e-12);
}

// Overlapping kernels of one class are counted once (HTA merges them), on two streams of each;
// a memcpy is busy time but neither compute nor communication.
//   compute [0,50) [20,80) -> [0,80) = 80; all_gather [60,90), reduce_scatter [70,130)
//   -> comm [60,130) = 70; overlap [60,80) = 20; exposed 50: all_gather [80,90) = 10,
//   reduce_scatter [80,130) = 50; memcpy [140,150); span 150, busy 80+50+10 = 140, idle 10.
TEST(TraceBreakdown, OverlappingKernelsCountOnceAndKindsApart) {
  const auto c = KernelKind::kCompute;
  const auto m = KernelKind::kCommunication;
  const TimeBreakdown b = BreakDown({Interval(0, 50, c), Interval(20, 80, c),
                                     Interval(60, 90, m, CollectiveKind::kAllGather),
                                     Interval(70, 130, m, CollectiveKind::kReduceScatter),
                                     Interval(140, 150, KernelKind::kMemory)});
  EXPECT_NEAR(b.compute_s, 80e-6, 1e-12);
  EXPECT_NEAR(b.communication_s, 70e-6, 1e-12);
  EXPECT_NEAR(b.overlap_s, 20e-6, 1e-12);
  EXPECT_NEAR(b.exposed_communication_s, 50e-6, 1e-12);
  EXPECT_NEAR(b.exposed_by_kind_s[static_cast<size_t>(CollectiveKind::kAllGather)], 10e-6, 1e-12);
  EXPECT_NEAR(b.exposed_by_kind_s[static_cast<size_t>(CollectiveKind::kReduceScatter)], 50e-6,
              1e-12);
  EXPECT_NEAR(b.memory_s, 10e-6, 1e-12);
  EXPECT_NEAR(b.idle_s, 10e-6, 1e-12);
  EXPECT_FALSE(BreakDown({Interval(0, 10, c)}).OverlapPct());
}

// One rank's trace of `steps` profiler steps of 10 ms. In each (GPU times from the step's start):
// a GEMM [0.5, 0.5+compute) ms and a collective [0.5+comm_at, +comm) ms on its own stream.
struct RankPlan {
  int rank = 0;
  int world = 4;
  int64_t first_step = 10;
  int steps = 4;
  int64_t skew_ns = 0;  // this rank's clock ahead of the others'
  int64_t compute_ns = 6 * kMs;
  int64_t comm_at_ns = 5 * kMs;
  int64_t comm_ns = 2 * kMs;
  std::string kernel = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  std::string c10d = "allreduce";
  double nelems = 1 << 24;  // bf16: 32 MiB
  bool named_rank = true;
};

std::string RankTrace(const RankPlan& p) {
  testing::KinetoWriter w(4458676416788066 + p.skew_ns);
  w.Begin(p.named_rank ? std::optional<int>(p.rank) : std::nullopt, p.world);
  for (int s = 0; s < p.steps; ++s) {
    const int64_t t0 = s * 10 * kMs;
    w.Step(p.first_step + s, t0, 10 * kMs);
    w.CpuOp("aten::mm", t0 + 50 * kUs, 40 * kUs);
    w.Gemm(t0 + 100 * kUs, t0 + 500 * kUs, p.compute_ns);
    w.Collective(p.kernel, p.c10d, t0 + 150 * kUs, t0 + 500 * kUs + p.comm_at_ns, p.comm_ns,
                 p.nelems, p.nelems, "BFloat16", p.world, 20);
  }
  w.End();
  return w.text;
}

// Per step: compute [0.5,6.5), comm [5.5,7.5): overlap 1 ms, exposed 1 ms, span 7 ms; steps 10
// ms apart. Of the 4 steps the last is left out (HTA's window): 3 steps span 27 ms, compute 18,
// communication 6, exposed 3, idle 2 gaps of 3 ms = 6. With it: 37 ms, 24, 8, 4, 9.
TEST(TraceFigures, OneRankByHandAndItsTimeline) {
  const std::string text = RankTrace({.rank = 0, .world = 1});
  const TraceFigures f = AnalyzeTraces({{"rank0_trace.json", Read(text)}});
  ASSERT_EQ(f.ranks.size(), 1U);
  const TimeBreakdown& w = f.ranks[0].whole;
  EXPECT_NEAR(w.span_s, 27e-3, 1e-9);
  EXPECT_NEAR(w.compute_s, 18e-3, 1e-9);
  EXPECT_NEAR(w.communication_s, 6e-3, 1e-9);
  EXPECT_NEAR(w.exposed_communication_s, 3e-3, 1e-9);
  EXPECT_NEAR(w.idle_s, 6e-3, 1e-9);
  EXPECT_NEAR(*w.OverlapPct(), 50.0, 1e-6);
  EXPECT_EQ(f.ranks[0].steps, (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(f.ranks[0].left_out_step, 13);
  EXPECT_EQ(f.ranks[0].left_out_events, 2U);
  ASSERT_EQ(f.timeline.size(), 3U);
  EXPECT_EQ(f.timeline[0].step, 10);
  EXPECT_NEAR(f.timeline[0].span_s, 7e-3, 1e-9);
  EXPECT_NEAR(f.timeline[0].exposed_communication_pct, 100.0 / 7, 1e-6);
  EXPECT_NEAR(f.timeline[0].idle_pct, 0, 1e-9);
  // 32 MiB per call in 2 ms: algbw 16.8 GB/s.
  ASSERT_EQ(f.collectives.size(), 1U);
  EXPECT_EQ(f.collectives[0].calls, 3U);
  EXPECT_NEAR(*f.collectives[0].algbw_gbs, (1 << 24) * 2 / 2e-3 / 1e9, 1e-6);
  // 3/27 exposed: over the 10% limit; 6/27 idle: over 15%.
  EXPECT_EQ(f.verdict,
            "11% of step time is exposed all_reduce on rank 0; the GPU is idle 22% of the time "
            "on rank 0 (waiting on the host: data loading, launches, synchronisation)");
  // The last step kept, and limits above the figures: compute-bound.
  const TraceFigures all = AnalyzeTraces(
      {{"rank0_trace.json", Read(text)}},
      {.rank = {.include_last_step = true}, .exposed_limit_pct = 12, .idle_limit_pct = 25});
  const TimeBreakdown& a = all.ranks[0].whole;
  EXPECT_NEAR(a.span_s, 37e-3, 1e-9);
  EXPECT_NEAR(a.compute_s, 24e-3, 1e-9);
  EXPECT_NEAR(a.exposed_communication_s, 4e-3, 1e-9);
  EXPECT_NEAR(a.idle_s, 9e-3, 1e-9);
  EXPECT_EQ(all.timeline.size(), 4U);
  EXPECT_EQ(all.verdict,
            "compute-bound: 65% of GPU time computing, 11% exposed communication, 24% idle");
}

TEST(TraceFigures, BusBandwidthByNcclTestsFactors) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kAllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(CollectiveKind::kBroadcast, 8), 1.0);
  std::vector<NamedTrace> traces;
  for (int r = 0; r < 4; ++r) traces.push_back({"", Read(RankTrace({.rank = r}))});
  const TraceFigures f = AnalyzeTraces(traces);
  ASSERT_EQ(f.collectives.size(), 1U);
  EXPECT_EQ(f.collectives[0].calls, 12U);  // 4 ranks, 3 steps each
  EXPECT_EQ(f.collectives[0].group_size, 4);
  EXPECT_NEAR(*f.collectives[0].busbw_gbs, (1 << 24) * 2 / 2e-3 / 1e9 * 1.5, 1e-6);
  EXPECT_TRUE(f.stragglers.empty());  // everyone's kernel as long: no one waited
}

// Rank 2 computes 5 ms longer before each all_reduce; on every rank the collective ends when
// rank 2 arrives, so the others' kernels last 5 ms longer than rank 2's. Rank 1's clock is 10 s
// ahead: nothing changes but a note.
TEST(TraceFigures, APlantedStragglerIsFoundWhateverTheClocks) {
  std::vector<NamedTrace> traces;
  for (int r = 0; r < 4; ++r) {
    RankPlan p{.rank = r, .steps = 8};
    if (r == 2) {
      p.compute_ns = 7 * kMs;
      p.comm_at_ns = 7 * kMs;
      p.comm_ns = 1 * kMs;  // arrives last: the kernel is only the transfer
    } else {
      p.comm_ns = 3 * kMs;  // [5.5, 8.5): waits from 5.5 to 7.5 for rank 2, then the transfer
    }
    if (r == 1) p.skew_ns = 10'000 * kMs;
    traces.push_back({"rank" + std::to_string(r) + "_trace.json.gz", Read(RankTrace(p))});
  }
  const TraceFigures f = AnalyzeTraces(traces);
  ASSERT_EQ(f.stragglers.size(), 1U) << f.verdict;
  EXPECT_EQ(f.stragglers[0].rank, 2);
  EXPECT_EQ(f.stragglers[0].last_in, 7U);  // 8 steps, the last left out
  EXPECT_EQ(f.stragglers[0].matched, 7U);
  EXPECT_NEAR(f.stragglers[0].wait_caused_s, 7 * 2e-3, 1e-9);
  EXPECT_NE(f.verdict.find("rank 2 is a straggler"), std::string::npos) << f.verdict;
  bool clock_note = false;
  for (const std::string& n : f.notes) clock_note |= n.find("10.0 s apart") != std::string::npos;
  EXPECT_TRUE(clock_note);
}

// 16 ranks: 8-15 run their all-to-all after compute (nothing hides it), 0-7 under it.
TEST(TraceFigures, TheVerdictNamesTheExposedCollectiveAndItsRanks) {
  std::vector<NamedTrace> traces;
  for (int r = 0; r < 16; ++r) {
    RankPlan p{.rank = r,
               .world = 16,
               .kernel = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
               .c10d = "all_to_allv"};
    if (r >= 8) {
      p.compute_ns = 4 * kMs;
      p.comm_at_ns = 4 * kMs;
      p.comm_ns = 3 * kMs;  // step [0.5, 7.5): 3 of 7 ms exposed, 43%
    } else {
      p.comm_at_ns = 1 * kMs;
      p.comm_ns = 2 * kMs;  // inside compute
    }
    traces.push_back({"rank" + std::to_string(r) + ".json", Read(RankTrace(p))});
  }
  const TraceFigures f = AnalyzeTraces(traces);
  EXPECT_NE(f.verdict.find("of step time is exposed all_to_all on ranks 8-15"), std::string::npos)
      << f.verdict;
  // A rank 8-15's 3 steps: span 27 ms, exposed 3 x 3 = 9 ms: 33%.
  EXPECT_EQ(f.verdict.rfind("33%", 0), 0U) << f.verdict;
  EXPECT_EQ(f.ranks[3].whole.exposed_communication_s, 0);
}

TEST(TraceFigures, TracesOfDifferentStepsAreNotMatchedAcrossRanks) {
  std::vector<NamedTrace> traces;
  for (int r = 0; r < 3; ++r) {
    RankPlan p{.rank = r};
    if (r == 1) {
      p.first_step = 20;
      p.comm_ns = 1 * kMs;  // would look like a straggler if matched with the others
    }
    traces.push_back({"rank" + std::to_string(r) + ".json", Read(RankTrace(p))});
  }
  const TraceFigures f = AnalyzeTraces(traces);
  EXPECT_TRUE(f.stragglers.empty());
  std::string notes;
  for (const std::string& n : f.notes) notes += n + "\n";
  EXPECT_NE(notes.find("rank 1's of steps 20-22"), std::string::npos) << notes;
  EXPECT_NE(notes.find("step 13, the trace's last, left out on ranks 0,2"), std::string::npos)
      << notes;
}

TEST(TraceFigures, RanksFromTheTraceTheFileNameOrTheirOrderAndATraceTwice) {
  std::vector<NamedTrace> traces;
  traces.push_back({"a.json", Read(RankTrace({.rank = 1}))});
  traces.push_back({"b.json", Read(RankTrace({.rank = 1}))});
  traces.push_back({"x/iteration_10/rank5_trace.json.gz", Read(RankTrace({.named_rank = false}))});
  traces.push_back({"anonymous.json", Read(RankTrace({.named_rank = false}))});
  const TraceFigures f = AnalyzeTraces(traces);
  ASSERT_EQ(f.ranks.size(), 3U);
  EXPECT_EQ(f.ranks[0].rank, 0);
  EXPECT_EQ(f.ranks[0].rank_source, "order");
  EXPECT_EQ(f.ranks[1].rank, 1);
  EXPECT_EQ(f.ranks[1].file, "a.json");
  EXPECT_EQ(f.ranks[2].rank, 5);
  EXPECT_EQ(f.ranks[2].rank_source, "file name");
  std::string notes;
  for (const std::string& n : f.notes) notes += n + "\n";
  EXPECT_NE(notes.find("b.json is a second trace of rank 1"), std::string::npos) << notes;
  EXPECT_NE(notes.find("anonymous.json names no rank"), std::string::npos) << notes;
}

TEST(TraceFigures, IdleGpusAndNoGpuAtAll) {
  const TraceFigures idle = AnalyzeTraces({{"r.json", Read(RankTrace({.rank = 0,
                                                                      .world = 1,
                                                                      .compute_ns = 1 * kMs,
                                                                      .comm_at_ns = 0,
                                                                      .comm_ns = 1 * kMs}))}});
  EXPECT_NE(idle.verdict.find("the GPU is idle"), std::string::npos) << idle.verdict;
  StringByteSource cpu_only(
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2}]})");
  const TraceFigures none = AnalyzeTraces({{"cpu.json", *ReadKinetoTrace(cpu_only)}});
  EXPECT_EQ(none.verdict, "no GPU events in the traces (a CPU-only trace?)");
}

// A time no int64 of nanoseconds holds (1e308 us) leaves its event out, and a note says how many.
TEST(TraceFigures, EventsWithoutAUsableTimeAreLeftOutAndCounted) {
  StringByteSource input(
      R"({"traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 100, "dur": 50, "args": {"stream": 7}},)"
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 200, "dur": 1e308, "args": {"stream": 7}},)"
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 90, "dur": 1e308},)"
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1e308, "dur": 5, "args": {"stream": 7}},)"
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "dur": 5, "args": {"stream": 7}},)"
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "ts": 1e308, "dur": 9},)"
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 300, "dur": 50, "args": {"stream": 7}}]})");
  auto trace = ReadKinetoTrace(input);
  ASSERT_TRUE(trace) << trace.error().message;
  const TraceFigures f = AnalyzeTraces({{"rank0.json", *trace}});
  ASSERT_EQ(f.ranks.size(), 1U);
  EXPECT_EQ(f.ranks[0].gpu_events, 2U);
  const auto noted = [&f](std::string_view text) {
    return std::ranges::any_of(
        f.notes, [text](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(noted("rank 0: 3 GPU events without a usable time left out"));
  EXPECT_TRUE(noted("rank 0: 2 profiler step marks without a usable time left out"));
}

// Ctrl-C while one trace is read stops the read at its next buffer, not at the file's end: an
// endless trace through a FIFO is given up within a few MB of the stop (it read on forever).
TEST(TraceRun, AStopIsHeardInsideOneTrace) {
  testing::TempDir dir;
  const std::string fifo = dir.File("rank0_trace.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::signal(SIGPIPE, SIG_IGN);
  std::atomic<size_t> written{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    std::string events;
    for (int i = 0; i < 10000; ++i) {
      events += R"({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": 2, )"
                R"("args": {"stream": 7}},)";
    }
    const std::string head = R"({"traceEvents": [)";
    size_t sent = 0;
    bool ok = ::write(fd, head.data(), head.size()) > 0;
    // Up to 1 GB; the reader closing its end (EPIPE) ends it first.
    while (ok && sent < (size_t{1} << 30)) {
      const ssize_t n = ::write(fd, events.data(), events.size());
      ok = n > 0;
      sent += ok ? static_cast<size_t>(n) : 0;
      written = sent;
      if (sent > (size_t{4} << 20)) stop = true;  // Ctrl-C, once 4 MB are on their way
    }
    ::close(fd);
  });
  std::vector<TraceFileProblem> unreadable;
  auto figures = ReadAndAnalyzeTraces({.files = {fifo}, .jobs = 1}, &unreadable,
                                      [&stop] { return stop.load(); });
  const size_t at_stop = written.load();
  writer.join();
  ASSERT_FALSE(figures);
  EXPECT_EQ(figures.error().code, ErrorCode::kInterrupted);
  EXPECT_LT(at_stop, size_t{64} << 20) << "the whole stream was read";
}

TEST(TraceFigures, RankRangesAreCompact) {
  EXPECT_EQ(RankRanges({8, 9, 10, 11, 12, 13, 14, 15}), "8-15");
  EXPECT_EQ(RankRanges({3, 0, 1, 7, 9, 10}), "0-1,3,7,9-10");
  EXPECT_EQ(RankRanges({4}), "4");
  EXPECT_EQ(RankRanges({}), "");
}

// Golden traces: written by hand in the reference's shapes.
class TraceGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TraceGolden, MatchesExpectedFigures) {
  const std::string text = testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/train/trace/" +
                                              GetParam() + ".trace.json");
  const TraceFigures f = AnalyzeTraces({{GetParam() + ".trace.json", Read(text)}});
  testing::ExpectGolden("train/trace/" + GetParam() + ".expected.json",
                        TraceFiguresJson(f).dump(1) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Cases, TraceGolden,
                         ::testing::ValuesIn(testing::GoldenStems("train/trace", ".trace.json")),
                         [](const auto& test) { return test.param; });

TEST(TraceGoldenFolder, EveryExpectationHasItsTrace) {
  testing::ExpectNoOrphanGoldens("train/trace", ".trace.json", ".expected.json");
  EXPECT_GE(testing::GoldenStems("train/trace", ".trace.json").size(), 3U);
}

}  // namespace
}  // namespace cmax::train
