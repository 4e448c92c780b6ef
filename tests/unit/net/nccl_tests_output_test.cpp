// nccl-tests' output in its versions and wrappings: each NAME.txt in tests/data/nccl (written
// from nccl-tests' printf formats and the public samples the reference describes) gives
// NAME.expected.json; and the figures that matter, asserted by hand.
#include "net/nccl_tests_output.hpp"

#include <gtest/gtest.h>
#include <string>

#include "support/corpus.hpp"
#include "support/golden.hpp"

namespace cmax::net {
namespace {

std::string Read(const std::string& stem) {
  return testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/nccl/" + stem + ".txt");
}

class NcclTestsGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclTestsGolden, MatchesExpectedTables) {
  const NcclTestsOutput parsed = ParseNcclTestsOutput(Read(GetParam()));
  testing::ExpectGolden("nccl/" + GetParam() + ".expected.json",
                        NcclTestsOutputJson(parsed).dump(1) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Cases, NcclTestsGolden,
                         ::testing::ValuesIn(testing::GoldenStems("nccl", ".txt")),
                         [](const auto& test) { return test.param; });

TEST(NcclTestsGoldenFolder, EveryExpectationHasItsOutput) {
  testing::ExpectNoOrphanGoldens("nccl", ".txt", ".expected.json");
  EXPECT_GE(testing::GoldenStems("nccl", ".txt").size(), 9U);
}

// The figures are the peak and the largest size's bus bandwidth, never the footer's average
// (116 GB/s here, dragged down by the small sizes); %.1e and N/A are read.
TEST(NcclTestsOutput, PeakAndLargestSizeNotTheFootersAverage) {
  const NcclTestsOutput out = ParseNcclTestsOutput(Read("modern_all_reduce"));
  ASSERT_EQ(out.tables.size(), 1U);
  const NcclTable& t = out.tables[0];
  EXPECT_EQ(t.collective, "all_reduce_perf");
  EXPECT_EQ(t.tests_version, "2.19.6");
  EXPECT_EQ(t.ranks, 4);
  EXPECT_EQ(t.hosts, (std::vector<std::string>{"gpu-a-001", "gpu-a-002"}));
  ASSERT_EQ(t.rows.size(), 6U);
  EXPECT_EQ(t.rows.back().size_bytes, 17179869184U);
  EXPECT_EQ(t.rows.back().out_of_place.time_us, 1.0e5);
  EXPECT_FALSE(t.rows.back().in_place->wrong);  // N/A
  EXPECT_EQ(t.peak_busbw_gbs, 257.82);
  EXPECT_EQ(t.peak_size_bytes, 17179869184U);
  EXPECT_EQ(t.largest_size_busbw_gbs, 257.82);
  EXPECT_EQ(t.reported_avg_busbw, 116.0367);
  EXPECT_TRUE(t.concluded);
  EXPECT_EQ(t.out_of_bounds_ok, true);
  EXPECT_TRUE(out.problems.empty());
}

// Launchers' prefixes come off; NCCL's lines in between are read for its version and warnings,
// and are never rows; each process's table stays its own.
TEST(NcclTestsOutput, PrefixesAndNcclLinesAndTablesPerProcess) {
  const NcclTestsOutput srun = ParseNcclTestsOutput(Read("srun_prefixed_with_nccl_lines"));
  ASSERT_EQ(srun.tables.size(), 1U);
  EXPECT_EQ(srun.tables[0].source, "rank 0");
  EXPECT_EQ(srun.tables[0].nccl_version, "2.20.5+cuda12.4");
  EXPECT_EQ(srun.tables[0].rows.size(), 4U);
  EXPECT_EQ(srun.tables[0].peak_busbw_gbs, 487.26);
  ASSERT_EQ(srun.warnings.size(), 1U);
  EXPECT_NE(srun.warnings[0].find("Unable to find a libfabric provider"), std::string::npos);

  const NcclTestsOutput mpi = ParseNcclTestsOutput(Read("openmpi_tagged_and_timestamped"));
  ASSERT_EQ(mpi.tables.size(), 1U);
  EXPECT_EQ(mpi.tables[0].rows.size(), 3U);  // the timestamped rows too
  EXPECT_EQ(mpi.tables[0].rows[0].redop, "none");
  EXPECT_EQ(mpi.warnings.size(), 1U);

  const NcclTestsOutput each = ParseNcclTestsOutput(Read("per_process_tables"));
  ASSERT_EQ(each.tables.size(), 2U);
  EXPECT_EQ(each.tables[0].source, "rank 0");
  EXPECT_EQ(each.tables[1].source, "rank 1");
  EXPECT_EQ(each.tables[0].peak_busbw_gbs, 415.71);
  EXPECT_EQ(each.tables[1].peak_busbw_gbs, 417.08);
  EXPECT_TRUE(each.tables[0].concluded && each.tables[1].concluded);
}

// Older and newer columns: the `error` column without redop's neighbour root; per-iteration
// columns and a timestamp after each row.
TEST(NcclTestsOutput, OlderAndNewerColumns) {
  const NcclTestsOutput old = ParseNcclTestsOutput(Read("old_error_column"));
  ASSERT_EQ(old.tables.size(), 1U);
  const NcclRow& row = old.tables[0].rows.at(1);
  EXPECT_EQ(row.root, "");
  EXPECT_EQ(row.out_of_place.busbw_gbs, 30.37);
  EXPECT_EQ(row.out_of_place.wrong, 2e-07);
  EXPECT_EQ(row.in_place->busbw_gbs, 30.58);
  EXPECT_TRUE(old.tables[0].concluded);  // no start line, no closing one: the footer ends it
  EXPECT_TRUE(old.problems.empty()) << old.problems.front();

  const NcclTestsOutput wide = ParseNcclTestsOutput(Read("per_iteration_and_timestamps"));
  ASSERT_EQ(wide.tables.size(), 1U);
  ASSERT_EQ(wide.tables[0].rows.size(), 2U);
  EXPECT_EQ(wide.tables[0].rows[1].in_place->busbw_gbs, 49.11);
  EXPECT_EQ(wide.tables[0].rows[1].in_place->time_us, 21866);
  EXPECT_TRUE(wide.problems.empty()) << wide.problems.front();
}

// What went wrong is said, and nothing read before it is lost.
TEST(NcclTestsOutput, CutShortAndGarbageAreSaidAndTheRestKept) {
  const NcclTestsOutput cut = ParseNcclTestsOutput(Read("truncated"));
  ASSERT_EQ(cut.tables.size(), 1U);
  EXPECT_EQ(cut.tables[0].rows.size(), 3U);
  EXPECT_FALSE(cut.tables[0].rows.back().in_place);
  EXPECT_EQ(cut.tables[0].peak_busbw_gbs, 31.85);
  ASSERT_EQ(cut.problems.size(), 2U);
  EXPECT_NE(cut.problems[0].find("in-place half is missing"), std::string::npos);
  EXPECT_NE(cut.problems[1].find("has no footer: cut short after 268435456 bytes"),
            std::string::npos);

  const NcclTestsOutput runs = ParseNcclTestsOutput(Read("two_runs_in_one_file"));
  ASSERT_EQ(runs.tables.size(), 2U);
  EXPECT_EQ(runs.tables[1].collective, "reduce_scatter_perf");
  EXPECT_EQ(runs.tables[1].rows[0].type, "bfloat16");

  const NcclTestsOutput garbage = ParseNcclTestsOutput(Read("garbage_between_rows"));
  ASSERT_EQ(garbage.tables.size(), 1U);
  EXPECT_EQ(garbage.tables[0].rows.size(), 2U);  // 1024 and 8192
  EXPECT_EQ(garbage.problems.size(), 3U) << NcclTestsOutputJson(garbage).dump(1);

  // Two runs of a version with no start line: each its own table, with its own ranks.
  const std::string run =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#   Rank  0 Pid  10001 on     dgx-0{} device  0 [0x07] Tesla V100-SXM2-32GB\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw"
      "   busbw  error\n"
      "           8             2   float     sum    42.35    0.00    0.00  0e+00    41.50    0.00"
      "    0.00  0e+00\n"
      "# Avg bus bandwidth    : nan \n";
  std::string twice = run + run;
  twice.replace(twice.find("{}"), 2, "1");
  twice.replace(twice.find("{}"), 2, "2");
  const NcclTestsOutput two = ParseNcclTestsOutput(twice);
  ASSERT_EQ(two.tables.size(), 2U);
  EXPECT_EQ(two.tables[0].hosts, std::vector<std::string>{"dgx-01"});
  EXPECT_EQ(two.tables[1].hosts, std::vector<std::string>{"dgx-02"});
  EXPECT_EQ(two.tables[1].ranks, 1);
  EXPECT_FALSE(two.tables[0].reported_avg_busbw);  // nan: no figure
  EXPECT_TRUE(two.problems.empty()) << two.problems.front();

  EXPECT_TRUE(ParseNcclTestsOutput("").tables.empty());
  EXPECT_TRUE(ParseNcclTestsOutput("hello\n\n#\n").tables.empty());
}

// A figure no network measures (1e308 GB/s, a negative time) is a slip or a corrupt file: its
// row is left out and said, never a peak of 300 digits; so is a JSON result without a size.
// A -J file nested 50,000 levels (100 KB) crashed `nccl analyze` when it quoted the bad result;
// no nccl-tests file nests past a few levels.
TEST(NcclTestsOutput, JsonNestedPastAnyNcclTestsFileIsSaidNotRead) {
  const std::string deep =
      R"({"results": [{"x": )" + std::string(50000, '[') + std::string(50000, ']') + "}]}";
  const NcclTestsOutput out = ParseNcclTestsOutput(deep);
  EXPECT_TRUE(out.tables.empty());
  ASSERT_EQ(out.problems.size(), 1U);
  EXPECT_EQ(out.problems[0],
            "not nccl-tests JSON: nested deeper than 64 levels (its files nest 4)");
}

TEST(NcclTestsOutput, FiguresNoNetworkMeasuresAreLeftOutAndSaid) {
  std::string text = Read("json_file_v3");
  text.replace(text.find("\"bus_bw\": 22.09"), 15, "\"bus_bw\": 1e308");
  text.replace(text.find("{\"size\": 8, "), 11, "{\"size\": -8, ");
  const NcclTestsOutput json = ParseNcclTestsOutput(text);
  ASSERT_EQ(json.tables.size(), 1U);
  EXPECT_EQ(json.tables[0].rows.size(), 2U);
  ASSERT_EQ(json.problems.size(), 2U);
  EXPECT_NE(json.problems[0].find("without a size"), std::string::npos) << json.problems[0];
  EXPECT_NE(json.problems[1].find("size 1048576: a figure no network measures"), std::string::npos)
      << json.problems[1];
  EXPECT_LT(*json.tables[0].peak_busbw_gbs, 1000.0);

  std::string table = Read("modern_all_reduce");
  const size_t row = table.find("           8             2");
  ASSERT_NE(row, std::string::npos);
  const std::string first = table.substr(row, table.find('\n', row) - row);
  std::string slipped = first;
  slipped.replace(slipped.rfind(' ') + 1, std::string::npos, "-1");  // the last figure
  table.replace(row, first.size(), slipped);
  const NcclTestsOutput rows = ParseNcclTestsOutput(table);
  ASSERT_FALSE(rows.problems.empty());
  EXPECT_NE(rows.problems[0].find("a figure no network measures"), std::string::npos)
      << rows.problems[0];

  // A text row of a negative size is no row a run prints: said, where it was passed over.
  std::string negative = Read("modern_all_reduce");
  negative.replace(row, 12, "          -8");
  const NcclTestsOutput said = ParseNcclTestsOutput(negative);
  ASSERT_FALSE(said.problems.empty());
  EXPECT_NE(said.problems[0].find("a row whose size is not a number:"), std::string::npos)
      << said.problems[0];
  EXPECT_EQ(said.tables[0].rows.size(),
            ParseNcclTestsOutput(Read("modern_all_reduce")).tables[0].rows.size() - 1);
}

}  // namespace
}  // namespace cmax::net
