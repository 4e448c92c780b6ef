// The curve analysis on synthetic curves with known dips, cliffs, switch-point kinks, drops with
// the node count and platform shortfalls; the platforms file's strict reader; and the analysis
// of every nccl-tests variant in tests/data/nccl as text (tests/data/nccl_analysis/NAME.golden).
#include "net/nccl_analysis.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <vector>

#include "support/corpus.hpp"
#include "support/golden.hpp"

namespace cmax::net {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;

// A table of `collective` over `hosts` hosts of 8 ranks each: busbw by size.
NcclTable Table(const std::string& collective, int hosts,
                const std::vector<std::pair<uint64_t, double>>& busbw) {
  NcclTable table{.collective = collective + "_perf", .ranks = 8 * hosts};
  for (int h = 0; h < hosts; ++h) table.hosts.push_back("node-" + std::to_string(h));
  for (const auto& [size, bw] : busbw) {
    NcclRow row{.size_bytes = size, .count = size / 4, .type = "float"};
    row.out_of_place.busbw_gbs = bw;
    table.rows.push_back(row);
  }
  table.concluded = true;
  return table;
}

// Sizes from 1 KiB doubling, one per figure.
std::vector<std::pair<uint64_t, double>> Doubling(const std::vector<double>& figures,
                                                  uint64_t first = kKiB) {
  std::vector<std::pair<uint64_t, double>> out;
  uint64_t size = first;
  for (const double f : figures) {
    out.emplace_back(size, f);
    size *= 2;
  }
  return out;
}

NcclAnalysis Analyze(std::vector<NcclTable> tables, NcclAnalysisOptions options = {},
                     std::vector<NcclTuning> tuning = {}) {
  NcclInput input{.name = "run.log"};
  input.output.tables = std::move(tables);
  input.output.tuning = std::move(tuning);
  return AnalyzeNccl({input}, options);
}

TEST(NcclAnalysis, ASmoothCurveHasNoDip) {
  const auto a = Analyze({Table(
      "all_reduce", 2, Doubling({0.1, 0.3, 1, 4, 15, 60, 180, 300, 360, 370, 372, 371, 372}))});
  ASSERT_EQ(a.curves.size(), 1U);
  EXPECT_TRUE(a.dips.empty());
  EXPECT_FALSE(a.Faulty());
  EXPECT_EQ(a.curves[0].peak_gbs, 372);
  EXPECT_EQ(a.curves[0].largest_gbs, 372);
  EXPECT_EQ(a.curves[0].largest_size_bytes, 4096 * kKiB);
  // Within the tolerance of the best so far is no dip (371 after 372).
}

TEST(NcclAnalysis, ADipIsLocatedWithItsDepthAndWhereItEnds) {
  // 32.57 -> 19.10 GB/s at 64 MiB and 128 MiB, back at 256 MiB (the shape of aws-ofi-nccl #65).
  const auto a = Analyze({Table("all_reduce", 2,
                                {{8 * kMiB, 20.0},
                                 {16 * kMiB, 28.0},
                                 {32 * kMiB, 32.57},
                                 {64 * kMiB, 19.10},
                                 {128 * kMiB, 21.0},
                                 {256 * kMiB, 31.0},
                                 {512 * kMiB, 33.0}})});
  ASSERT_EQ(a.dips.size(), 1U);
  const NcclDip& d = a.dips[0];
  EXPECT_EQ(d.kind, NcclDipKind::kDip);
  EXPECT_EQ(d.best_size_bytes, 32 * kMiB);
  EXPECT_EQ(d.first_size_bytes, 64 * kMiB);
  EXPECT_EQ(d.last_size_bytes, 128 * kMiB);
  EXPECT_EQ(d.at_size_bytes, 64 * kMiB);
  EXPECT_NEAR(d.depth_pct, 41.36, 0.01);
  EXPECT_TRUE(a.Faulty());
  // No tuning lines: said, since a kink cannot be told from a dip.
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes.back().find("NCCL_DEBUG_SUBSYS=TUNING"), std::string::npos);
}

TEST(NcclAnalysis, ACollapseThatNeverComesBackIsACliff) {
  // 29.5 GB/s at 32 MiB, then about 5 from 64 MiB on (the shape of NVIDIA/nccl #1453).
  const auto a = Analyze({Table("all_reduce", 4,
                                {{8 * kMiB, 20.0},
                                 {16 * kMiB, 26.0},
                                 {32 * kMiB, 29.5},
                                 {64 * kMiB, 5.2},
                                 {128 * kMiB, 5.0},
                                 {256 * kMiB, 5.1}})});
  ASSERT_EQ(a.dips.size(), 1U);
  EXPECT_EQ(a.dips[0].kind, NcclDipKind::kCliff);
  EXPECT_EQ(a.dips[0].at_size_bytes, 128 * kMiB);
  EXPECT_EQ(a.dips[0].last_size_bytes, 256 * kMiB);
}

TEST(NcclAnalysis, AFallAtTheLastSizeAloneIsADipNotACliff) {
  const auto a = Analyze({Table("all_reduce", 2, Doubling({50, 100, 200, 300, 200}))});
  ASSERT_EQ(a.dips.size(), 1U);
  EXPECT_EQ(a.dips[0].kind, NcclDipKind::kDip);
}

// Wrong results make a curve's figures worthless; a run cut short is said; both are faults or
// unknowns, never a clean curve.
TEST(NcclAnalysis, WrongResultsAndRunsCutShortAreNotClean) {
  NcclTable wrong = Table("all_reduce", 2, Doubling({10, 20, 40, 80}));
  wrong.rows[2].out_of_place.wrong = 3;
  wrong.rows[2].in_place = NcclPlacement{.busbw_gbs = 40, .wrong = 1};
  const auto a = Analyze({wrong});
  ASSERT_EQ(a.curves.size(), 1U);
  EXPECT_EQ(a.curves[0].wrong_values, 4);
  EXPECT_EQ(a.curves[0].wrong_sizes, 1U);
  EXPECT_TRUE(a.Faulty());
  EXPECT_NE(NcclAnalysisText(a, false).find("WRONG  4 wrong value(s) at 1 size(s)"),
            std::string::npos);
  NcclTable failed = Table("all_reduce", 2, Doubling({10, 20, 40, 80}));
  failed.out_of_bounds_ok = false;
  EXPECT_TRUE(Analyze({failed}).Faulty());
  NcclTable cut = Table("all_reduce", 2, Doubling({10, 20, 40, 80}));
  cut.concluded = false;
  const auto c = Analyze({cut});
  EXPECT_FALSE(c.curves[0].concluded);
  EXPECT_NE(NcclAnalysisText(c, false).find("CUT    the run stops after 8 KiB"), std::string::npos);
}

TEST(NcclAnalysis, LatencyBoundWobblesAreNotDips) {
  // Halving at 2 and 8 KiB, where the best so far is under 5% of the peak.
  const auto a = Analyze(
      {Table("all_reduce", 2, Doubling({0.04, 0.02, 0.08, 0.04, 2, 30, 120, 300, 360, 370}))});
  EXPECT_TRUE(a.dips.empty());
  // The same with no floor: both are dips.
  const auto strict = Analyze(
      {Table("all_reduce", 2, Doubling({0.04, 0.02, 0.08, 0.04, 2, 30, 120, 300, 360, 370}))},
      {.floor_share = 0});
  EXPECT_EQ(strict.dips.size(), 2U);
}

TEST(NcclAnalysis, AFallAtNcclsSwitchPointIsAKinkWhenItComesBackSoon) {
  const auto table = Table("all_reduce", 1,
                           {{256 * kKiB, 25.5}, {512 * kKiB, 45.9}, {kMiB, 33.3}, {2 * kMiB, 122}});
  const std::vector<NcclTuning> tuning = {{"AllReduce", 256 * kKiB, "RING", "LL128"},
                                          {"AllReduce", 512 * kKiB, "RING", "LL128"},
                                          {"AllReduce", kMiB, "RING", "SIMPLE"},
                                          {"AllReduce", 2 * kMiB, "NVLS", "SIMPLE"}};
  const auto a = Analyze({table}, {}, tuning);
  ASSERT_EQ(a.dips.size(), 1U);
  EXPECT_EQ(a.dips[0].kind, NcclDipKind::kKink);
  EXPECT_EQ(a.dips[0].switch_from, "RING/LL128");
  EXPECT_EQ(a.dips[0].switch_to, "RING/SIMPLE");
  EXPECT_FALSE(a.Faulty());
  EXPECT_EQ(a.curves[0].points[3].choice, "NVLS/SIMPLE");

  // A fall at the switch deeper than 30% is a fault whatever NCCL chose.
  const auto deep =
      Analyze({Table("all_reduce", 1,
                     {{256 * kKiB, 25.5}, {512 * kKiB, 45.9}, {kMiB, 4.0}, {2 * kMiB, 122}})},
              {}, tuning);
  ASSERT_EQ(deep.dips.size(), 1U);
  EXPECT_EQ(deep.dips[0].kind, NcclDipKind::kDip);
  EXPECT_EQ(deep.dips[0].switch_to, "RING/SIMPLE");
  EXPECT_TRUE(deep.Faulty());

  // Another collective's choices say nothing of this one.
  const auto other = Analyze({table}, {}, {{"Broadcast", kMiB, "RING", "SIMPLE"}});
  EXPECT_EQ(other.dips[0].kind, NcclDipKind::kDip);

  // A switch after which the curve stays down for three sizes is a dip, the switch named.
  const auto stays = Analyze({Table("all_reduce", 1,
                                    {{256 * kKiB, 25.5},
                                     {512 * kKiB, 45.9},
                                     {kMiB, 33.3},
                                     {2 * kMiB, 34},
                                     {4 * kMiB, 35},
                                     {8 * kMiB, 122}})},
                             {}, tuning);
  ASSERT_EQ(stays.dips.size(), 1U);
  EXPECT_EQ(stays.dips[0].kind, NcclDipKind::kDip);
  EXPECT_EQ(stays.dips[0].switch_to, "RING/SIMPLE");
  EXPECT_TRUE(stays.Faulty());
}

TEST(NcclAnalysis, AllGathersTuningBytesArePerRank) {
  // 16 ranks: nccl-tests' 16 MiB is NCCL's 1 MiB per rank.
  auto table =
      Table("all_gather", 2, {{4 * kMiB, 40}, {8 * kMiB, 60}, {16 * kMiB, 50}, {32 * kMiB, 70}});
  const auto a =
      Analyze({table}, {},
              {{"AllGather", 512 * kKiB, "RING", "LL128"}, {"AllGather", kMiB, "RING", "SIMPLE"}});
  EXPECT_EQ(a.curves[0].points[1].choice, "RING/LL128");
  EXPECT_EQ(a.curves[0].points[2].choice, "RING/SIMPLE");
  ASSERT_EQ(a.dips.size(), 1U);
  EXPECT_EQ(a.dips[0].kind, NcclDipKind::kKink);
}

TEST(NcclAnalysis, BandwidthThatFallsAsNodesAreAddedIsADrop) {
  const auto large = [](double bw) {
    return std::vector<std::pair<uint64_t, double>>{{256 * kMiB, bw * 0.8}, {kMiB * 1024, bw}};
  };
  const auto a = Analyze({Table("all_reduce", 1, large(470)), Table("all_reduce", 2, large(380)),
                          Table("all_reduce", 4, large(372)), Table("all_reduce", 8, large(250)),
                          Table("all_gather", 8, large(250))});
  // 1 node is NVLink alone: 470 -> 380 is no drop; 4 -> 8 is.
  ASSERT_EQ(a.scaling.size(), 1U);
  EXPECT_EQ(a.scaling[0].collective, "all_reduce");
  EXPECT_EQ(a.scaling[0].from_nodes, 4);
  EXPECT_EQ(a.scaling[0].to_nodes, 8);
  EXPECT_EQ(a.scaling[0].size_bytes, 1024 * kMiB);
  EXPECT_NEAR(a.scaling[0].drop_pct, 32.8, 0.1);
  EXPECT_TRUE(a.Faulty());
  // Compared only where the fewer nodes are past half their peak: a 2-node sweep to 1 GiB and an
  // 8-node one to 1 MiB share 1 MiB, latency-bound for the 2 nodes.
  const auto early = Analyze({Table("all_reduce", 2, {{kMiB, 40}, {1024 * kMiB, 380}}),
                              Table("all_reduce", 8, {{256 * kKiB, 10}, {kMiB, 20}})});
  EXPECT_TRUE(early.scaling.empty());
  EXPECT_TRUE(std::ranges::any_of(early.notes, [](const std::string& n) {
    return n.find("still under half their peak: not compared") != std::string::npos;
  }));
  // Hosts not listed: left out of the comparison, said.
  NcclTable unlisted = Table("all_reduce", 2, large(100));
  unlisted.hosts.clear();
  const auto b = Analyze({Table("all_reduce", 2, large(380)), unlisted});
  EXPECT_TRUE(b.scaling.empty());
  EXPECT_TRUE(std::ranges::any_of(b.notes, [](const std::string& n) {
    return n.find("hosts are not listed") != std::string::npos;
  }));
}

TEST(NcclAnalysis, AgainstThePlatformsFigure) {
  const NcclPlatform* h100 = NcclPlatforms::Builtin().Find("h100-nvlink");
  ASSERT_NE(h100, nullptr);
  const auto sweep = [](double peak) {
    return std::vector<std::pair<uint64_t, double>>{
        {256 * kMiB, peak * 0.9}, {1024 * kMiB, peak * 0.98}, {8192 * kMiB, peak}};
  };
  const auto good = Analyze({Table("all_reduce", 1, sweep(480))}, {.platform = h100});
  ASSERT_EQ(good.platform.size(), 1U);
  EXPECT_FALSE(good.platform[0].short_of);
  EXPECT_EQ(good.platform[0].expected_gbs, 460);
  EXPECT_NEAR(good.platform[0].ratio, 480.0 / 460, 1e-9);
  EXPECT_FALSE(good.Faulty());
  // A downed NVLink lane or a stale NCCL_P2P_DISABLE: more than 10% below.
  const auto slow = Analyze({Table("all_reduce", 1, sweep(400))}, {.platform = h100});
  EXPECT_TRUE(slow.platform[0].short_of);
  EXPECT_TRUE(slow.Faulty());
  // all_gather has its own figure; a 2-node curve has no figure on a one-node platform.
  const auto other = Analyze(
      {Table("all_gather", 1, sweep(365)), Table("all_reduce", 2, sweep(380))}, {.platform = h100});
  ASSERT_EQ(other.platform.size(), 1U);
  EXPECT_EQ(other.platform[0].expected_gbs, 360);
  EXPECT_NE(other.notes.front().find("h100-nvlink gives no figure"), std::string::npos);
  // Two GPUs of a node are not the platform's eight; a sweep that stops at 256 MiB has not
  // reached the sizes the figure is for. Neither is compared, both said.
  NcclTable two = Table("all_reduce", 1, sweep(150));
  two.ranks = 2;
  const auto partial = Analyze(
      {two, Table("all_reduce", 1, {{64 * kMiB, 300}, {128 * kMiB, 350}, {256 * kMiB, 380}})},
      {.platform = h100});
  EXPECT_TRUE(partial.platform.empty());
  ASSERT_EQ(partial.notes.size(), 2U);
  EXPECT_NE(partial.notes[0].find("not 8 GPUs on each node"), std::string::npos);
  EXPECT_NE(partial.notes[1].find("the sweep stops at 256 MiB"), std::string::npos);
}

TEST(NcclAnalysis, TablesWithoutRowsAreLeftOutAndProblemsKept) {
  NcclInput input{.name = "cut.log"};
  input.output.tables = {NcclTable{.collective = "all_reduce_perf"}};
  input.output.problems = {"table 1 (all_reduce_perf) has no rows"};
  input.output.warnings = {"node:1:1 [0] NCCL WARN something"};
  const auto a = AnalyzeNccl({input}, {});
  EXPECT_TRUE(a.curves.empty());
  EXPECT_EQ(a.problems, std::vector<std::string>{"cut.log: table 1 (all_reduce_perf) has no rows"});
  EXPECT_EQ(a.warnings.size(), 1U);
}

TEST(NcclAnalysis, SizesForPeople) {
  EXPECT_EQ(SizeText(8), "8 B");
  EXPECT_EQ(SizeText(512 * kKiB), "512 KiB");
  EXPECT_EQ(SizeText(16 * kMiB * 1024), "16 GiB");
  EXPECT_EQ(SizeText(1000), "1000 B");
  EXPECT_EQ(SizeText(3 * kMiB + 1), "3145729 B");
}

TEST(NcclPlatforms, TheBuiltInOnesAreWhole) {
  const NcclPlatforms& builtin = NcclPlatforms::Builtin();
  EXPECT_GE(builtin.All().size(), 6U);
  for (const NcclPlatform& p : builtin.All()) {
    EXPECT_FALSE(p.expected.empty()) << p.name;
    for (const NcclExpectation& e : p.expected) EXPECT_FALSE(e.basis.empty()) << p.name;
  }
  const NcclPlatform* ib = builtin.Find("ib-ndr-400g-8rail");
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->Find("all_reduce", 1), nullptr);
  ASSERT_NE(ib->Find("all_gather", 64), nullptr);
  EXPECT_EQ(ib->Find("alltoall", 64), nullptr);  // one NIC and the pattern bound it, not the rails
  EXPECT_EQ(ib->Find("sendrecv", 2), nullptr);
  EXPECT_EQ(builtin.Find("nope"), nullptr);
}

TEST(NcclPlatforms, RefusesWhatIsWrongAndSaysWhat) {
  const auto doc = [](const std::string& entry) {
    return R"({"schema": "cmax.nccl-platforms/v1", "platforms": [{"name": "p", "title": "t",
               "gpus_per_node": 8, "expected": [)" +
           entry + "]}]}";
  };
  const std::string good =
      R"({"collective": "*", "min_nodes": 2, "busbw_gbs": 100, "basis": "measured"})";
  ASSERT_TRUE(NcclPlatforms::Parse(doc(good)));
  const std::map<std::string, std::string> table = {
      {"not json", "nccl platforms: not JSON: at line 1, column 2"},
      {"[1, 2]", "nccl platforms: not a JSON object (the text is a JSON array)"},
      {R"({"schema": "other", "platforms": []})", "\"schema\" must be"},
      {R"({"schema": "cmax.nccl-platforms/v1", "platforms": []})", "must be a list, not empty"},
      {R"({"schema": "cmax.nccl-platforms/v1", "platform": []})", "did you mean 'platforms'"},
      {doc(R"({"collective": "*", "busbw_gbs": 0, "basis": "b"})"), "\"busbw_gbs\" must be"},
      {doc(R"({"collective": "*", "busbw_gbs": "fast", "basis": "b"})"), "\"busbw_gbs\" must be"},
      {doc(R"({"collective": "*", "busbw_gbs": 1, "basis": "b", "min_nodes": 4, "max_nodes": 2})"),
       "max_nodes 2 is below min_nodes 4"},
      {doc(R"({"collective": "*", "busbw_gbs": 1, "basis": "b", "min_nodes": -1})"),
       "\"min_nodes\" must be a whole number"},
      {doc(R"({"collective": "*", "busbw_gbs": 1})"), "\"basis\" must be a non-empty string"},
      {doc(R"({"collective": "*", "busbw_gbs": 1, "basis": "b", "busbw": 2})"),
       "unknown key 'busbw'"},
      {R"({"schema": "cmax.nccl-platforms/v1", "platforms": [{"name": "p", "title": "t",
          "gpus_per_node": 8, "expected": [)" +
           good + R"(]}, {"name": "p", "title": "t",
          "gpus_per_node": 8, "expected": [)" +
           good + "]}]}",
       "platform 'p' is listed twice"},
      {R"({"schema": "cmax.nccl-platforms/v1", "platforms": [{"name": "p", "title": "t",
          "gpus_per_node": 0, "expected": [)" +
           good + "]}]}",
       "\"gpus_per_node\" must be a whole number"},
      // A collective nccl-tests has not would never match a curve; a name --platform cannot
      // take (a space, an escape) could never be chosen.
      {doc(R"({"collective": "bogus", "busbw_gbs": 1, "basis": "b"})"),
       "\"collective\" bogus is none of nccl-tests'"},
      {R"({"schema": "cmax.nccl-platforms/v1", "platforms": [{"name": "bad name", "title": "t",
          "gpus_per_node": 8, "expected": [)" +
           good + "]}]}",
       "must be a word of letters, digits and ._-"},
      // `nccl platforms` prints titles and bases on lines of their own.
      {R"({"schema": "cmax.nccl-platforms/v1", "platforms": [{"name": "p",
          "title": "x\u001b[31m\nh100-fake all_reduce 1 node 9999 GB/s",
          "gpus_per_node": 8, "expected": [)" +
           good + "]}]}",
       "\"title\" must be one printable line"},
      {doc(R"({"collective": "*", "busbw_gbs": 1, "basis": "b\nforged"})"),
       "\"basis\" must be one printable line"},
  };
  for (const auto& [text, want] : table) {
    const auto parsed = NcclPlatforms::Parse(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_NE(parsed.error().message.find(want), std::string::npos)
        << parsed.error().message << " / " << want;
  }
}

class NcclAnalysisGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclAnalysisGolden, EveryVariantAnalysed) {
  const std::string text =
      testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/nccl/" + GetParam() + ".txt");
  const NcclAnalysis a =
      AnalyzeNccl({{.name = GetParam() + ".txt", .output = ParseNcclTestsOutput(text)}},
                  {.platform = NcclPlatforms::Builtin().Find("h100-nvlink")});
  testing::ExpectGolden("nccl_analysis/" + GetParam() + ".golden", NcclAnalysisText(a, true));
}

INSTANTIATE_TEST_SUITE_P(Cases, NcclAnalysisGolden,
                         ::testing::ValuesIn(testing::GoldenStems("nccl", ".txt")),
                         [](const auto& test) { return test.param; });

TEST(NcclAnalysisGoldenFolder, EveryGoldenHasItsInput) {
  const auto inputs = testing::GoldenStems("nccl", ".txt");
  for (const std::string& stem : testing::GoldenStems("nccl_analysis", ".golden")) {
    EXPECT_TRUE(std::ranges::binary_search(inputs, stem))
        << stem << ".golden has no nccl/" << stem << ".txt";
  }
}

}  // namespace
}  // namespace cmax::net
