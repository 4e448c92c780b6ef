// ib_write_bw's output read: the hand-written outputs of tests/data/active/ib_write_bw against
// their golden files, and the figures in Gb/s whatever unit perftest printed.
#include "active/ib_write_bw.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "support/corpus.hpp"
#include "support/golden.hpp"

namespace cmax::active {
namespace {

constexpr const char* kFolder = "active/ib_write_bw";

std::string Input(const std::string& stem) {
  return testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/" + kFolder + "/" + stem + ".txt");
}

class IbWriteBwGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(IbWriteBwGolden, MatchesExpectedReport) {
  const auto report = ParseIbWriteBw(Input(GetParam()));
  const nlohmann::json out =
      report ? IbWriteBwJson(*report) : nlohmann::json{{"error", report.error().message}};
  testing::ExpectGolden(std::string(kFolder) + "/" + GetParam() + ".expected.json",
                        out.dump(1) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Cases, IbWriteBwGolden,
                         ::testing::ValuesIn(testing::GoldenStems(kFolder, ".txt")),
                         [](const auto& test) {
                           std::string name = test.param;  // gtest names take no '-'
                           std::ranges::replace(name, '-', '_');
                           return name;
                         });

TEST(IbWriteBwGoldenFolder, EveryExpectationHasItsOutput) {
  testing::ExpectNoOrphanGoldens(kFolder, ".txt", ".expected.json");
  EXPECT_GE(testing::GoldenStems(kFolder, ".txt").size(), 5U);
}

TEST(IbWriteBw, FiguresInGbitsWhateverTheUnit) {
  const auto gbits = ParseIbWriteBw(Input("ndr-gbits"));
  ASSERT_TRUE(gbits) << gbits.error().message;
  EXPECT_EQ(gbits->device, "mlx5_0");
  EXPECT_EQ(gbits->link_type, "IB");
  EXPECT_EQ(gbits->connection, "RC");
  EXPECT_EQ(gbits->qps, 1);
  EXPECT_EQ(gbits->mtu, 4096);
  EXPECT_EQ(gbits->unit, "Gb/sec");
  ASSERT_EQ(gbits->rows.size(), 1U);
  EXPECT_DOUBLE_EQ(gbits->AverageGbits(), 392.14);

  // MB/sec is perftest's 2^20 bytes: 23551.90 MB/s is 197.57 Gb/s; the figure is the largest
  // size's, and the CPU warning between the header and the rows is kept, not a row.
  const auto mbytes = ParseIbWriteBw(Input("hdr-all-sizes-mbytes"));
  ASSERT_TRUE(mbytes) << mbytes.error().message;
  ASSERT_EQ(mbytes->rows.size(), 4U);
  EXPECT_EQ(mbytes->rows.back().bytes, 8388608U);
  EXPECT_NEAR(mbytes->AverageGbits(), 23551.90 * 1048576 * 8 / 1e9, 1e-9);
  EXPECT_NEAR(mbytes->AverageGbits(), 197.57, 0.01);
  ASSERT_EQ(mbytes->notes.size(), 1U);
  EXPECT_TRUE(mbytes->notes[0].starts_with("Conflicting CPU frequency"));

  const auto gdr = ParseIbWriteBw(Input("gpudirect-mib"));
  ASSERT_TRUE(gdr) << gdr.error().message;
  EXPECT_EQ(gdr->qps, 4);
  EXPECT_EQ(gdr->device, "mlx5_ib0");
  EXPECT_NEAR(gdr->AverageGbits(), 43987.02 * 1048576 * 8 / 1e9, 1e-9);
}

TEST(IbWriteBw, NoTableIsAnErrorThatSaysWhy) {
  const auto refused = ParseIbWriteBw(Input("connect-refused"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "ib_write_bw: Couldn't connect to 10.0.0.2:18515");
  const auto cut = ParseIbWriteBw(Input("cut-short"));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().message, "ib_write_bw: no result table in the output");
  const auto unit = ParseIbWriteBw(Input("unknown-unit"));
  ASSERT_FALSE(unit);
  EXPECT_NE(unit.error().message.find("KB/sec"), std::string::npos);
  EXPECT_FALSE(ParseIbWriteBw(""));
  EXPECT_FALSE(ParseIbWriteBw(std::string(5000, '\n')));
}

}  // namespace
}  // namespace cmax::active
