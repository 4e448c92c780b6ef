// nccl-tests' output as the CPU stand-in writes it: numbers as getFloatStr gives them, the bus
// bandwidth factors, a whole run written then read back by the parser unchanged, and its
// curves told from NCCL's.
#include "net/nccl_tests_format.hpp"

#include <gtest/gtest.h>

#include "net/nccl_analysis.hpp"
#include "net/nccl_tests_output.hpp"
#include "support/corpus.hpp"

namespace cmax::net {
namespace {

std::string ReadData(const std::string& stem) {
  return testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/nccl/" + stem + ".txt");
}

TEST(NcclTestsFormat, NumbersNarrowTheirPrecisionToFit) {
  EXPECT_EQ(NcclTestsNumber(0.004, 6), "  0.00");
  EXPECT_EQ(NcclTestsNumber(487.26, 6), "487.26");
  EXPECT_EQ(NcclTestsNumber(1234.56, 6), "1234.6");
  EXPECT_EQ(NcclTestsNumber(66132.4, 7), "66132.4");
  EXPECT_EQ(NcclTestsNumber(123456.7, 6), "123457");
  EXPECT_EQ(NcclTestsNumber(12345678.0, 7), "1.2e+07");
  EXPECT_EQ(NcclTestsNumber(12345678.0, 6), " 1e+07");
}

TEST(NcclTestsFormat, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor("all_reduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor("all_gather", 4), 0.75);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor("reduce_scatter", 2), 0.5);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor("alltoall", 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor("broadcast", 64), 1.0);
  EXPECT_DOUBLE_EQ(*BusBandwidthFactor("all_reduce", 1), 0.0);
  EXPECT_FALSE(BusBandwidthFactor("hypercube", 8));
  EXPECT_FALSE(BusBandwidthFactor("all_reduce", 0));
  EXPECT_TRUE(SizeIsTotalOverRanks("all_gather"));
  EXPECT_FALSE(SizeIsTotalOverRanks("all_reduce"));
}

TEST(NcclTestsFormat, AWrittenRunReadsBackUnchanged) {
  NcclTestsRunHeader head{.collective = "all_reduce",
                          .version = "cmax-mpi-perf-1",
                          .min_bytes = 1024,
                          .max_bytes = 2048,
                          .warmup_iters = 1,
                          .iters = 5};
  head.ranks = {{0, 100, "ns-1", "CPU"}, {1, 200, "ns-2", "CPU"}};
  std::string text = NcclTestsHead(head);
  text += NcclTestsRow({.size_bytes = 1024,
                        .count = 256,
                        .out_of_place = {.time_us = 9.75, .algbw_gbs = 0.11, .busbw_gbs = 0.11},
                        .in_place = {.time_us = 8.42, .algbw_gbs = 0.12, .busbw_gbs = 0.12}});
  text += NcclTestsRow(
      {.size_bytes = 2048,
       .count = 512,
       .out_of_place = {.time_us = 123456789.0, .algbw_gbs = 0.0, .busbw_gbs = 0},
       .in_place = {.time_us = 9.0, .algbw_gbs = 0.23, .busbw_gbs = 0.23, .wrong = 3}});
  text += NcclTestsFoot("all_reduce", 3, 0.115);
  const NcclTestsOutput out = ParseNcclTestsOutput(text);
  EXPECT_TRUE(out.problems.empty()) << out.problems.front();
  ASSERT_EQ(out.tables.size(), 1U) << text;
  const NcclTable& t = out.tables[0];
  EXPECT_EQ(t.tests_version, "cmax-mpi-perf-1");
  EXPECT_EQ(t.collective, "all_reduce_perf");
  EXPECT_EQ(t.ranks, 2);
  EXPECT_EQ(t.hosts, (std::vector<std::string>{"ns-1", "ns-2"}));
  EXPECT_TRUE(t.concluded);
  EXPECT_EQ(t.out_of_bounds_ok, false);
  ASSERT_EQ(t.rows.size(), 2U);
  EXPECT_EQ(t.rows[0].count, 256U);
  EXPECT_EQ(t.rows[0].redop, "sum");
  EXPECT_EQ(t.rows[0].root, "-1");
  EXPECT_EQ(t.rows[0].out_of_place.time_us, 9.75);
  EXPECT_EQ(t.rows[0].in_place->busbw_gbs, 0.12);
  EXPECT_EQ(t.rows[1].out_of_place.time_us, 1.2e8);  // written as %.1e
  EXPECT_EQ(t.rows[1].in_place->wrong, 3);
  EXPECT_EQ(t.reported_avg_busbw, 0.115);
  EXPECT_TRUE(t.cpu_stand_in);  // its version line says so

  // Its curves carry no NCCL choices: no note about tuning lines or 2-node trees.
  NcclInput two{.name = "2n", .output = out};
  NcclInput four{.name = "4n", .output = out};
  four.output.tables[0].hosts = {"ns-1", "ns-2", "ns-3", "ns-4"};
  for (NcclRow& row : four.output.tables[0].rows) {
    row.out_of_place.busbw_gbs = 0.01;
    row.in_place->busbw_gbs = 0.01;
  }
  const NcclAnalysis analysis = AnalyzeNccl({two, four}, {});
  ASSERT_EQ(analysis.scaling.size(), 1U) << NcclAnalysisText(analysis, false);
  for (const std::string& note : analysis.notes) {
    EXPECT_EQ(note.find("NCCL"), std::string::npos) << note;
    EXPECT_EQ(note.find("2-node"), std::string::npos) << note;
  }
  EXPECT_FALSE(ParseNcclTestsOutput(ReadData("modern_all_reduce")).tables[0].cpu_stand_in);
}

}  // namespace
}  // namespace cmax::net
