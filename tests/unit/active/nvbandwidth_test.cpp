// nvbandwidth's text read and judged: the hand-written outputs of tests/data/active/nvbandwidth
// (report and findings against the built-in H100 limits) against golden files, and the
// judgement's edges: the worst GPU named, every GPU below the limit listed, a cut matrix never
// a pass, a test a class has no limit for not asked.
#include "active/nvbandwidth.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "support/corpus.hpp"
#include "support/golden.hpp"

namespace cmax::active {
namespace {

constexpr const char* kFolder = "active/nvbandwidth";

std::string Input(const std::string& file) {
  const std::string name = file.find('.') == std::string::npos ? file + ".txt" : file;
  return testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/" + kFolder + "/" + name);
}

// The folder's inputs: text outputs (NAME.txt) and JSON documents (NAME.nvb.json).
std::vector<std::string> Inputs() {
  std::vector<std::string> files;
  for (const std::string& stem : testing::GoldenStems(kFolder, ".txt"))
    files.push_back(stem + ".txt");
  for (const std::string& stem : testing::GoldenStems(kFolder, ".nvb.json")) {
    files.push_back(stem + ".nvb.json");
  }
  return files;
}

std::string Stem(const std::string& file) {
  return file.substr(0, file.find('.'));
}

const GpuClass* H100() {
  return ActiveThresholds::Builtin().Find("h100-sxm");
}

nlohmann::json FindingsJson(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const Finding& f : findings) {
    out.push_back({{"check_id", f.check_id},
                   {"status", std::string(StatusName(f.status))},
                   {"observed", f.observed},
                   {"expected", f.expected},
                   {"message", f.message}});
  }
  return out;
}

class NvbandwidthGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NvbandwidthGolden, MatchesExpectedReportAndFindings) {
  const auto report = ParseNvbandwidth(Input(GetParam()));
  nlohmann::json out;
  if (report) {
    out = {
        {"report", NvbandwidthJson(*report)},
        {"findings", FindingsJson(JudgeBandwidth(*report, H100(), ActiveThresholds::Builtin()))}};
  } else {
    out = {{"error", report.error().message}};
  }
  testing::ExpectGolden(std::string(kFolder) + "/" + Stem(GetParam()) + ".expected.json",
                        out.dump(1) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Cases, NvbandwidthGolden, ::testing::ValuesIn(Inputs()),
                         [](const auto& test) {
                           std::string name = Stem(test.param);  // gtest names take no '-'
                           std::ranges::replace(name, '-', '_');
                           return name;
                         });

TEST(NvbandwidthGoldenFolder, EveryExpectationHasItsOutput) {
  std::vector<std::string> stems;
  for (const std::string& file : Inputs()) stems.push_back(Stem(file));
  std::ranges::sort(stems);
  EXPECT_EQ(std::ranges::adjacent_find(stems), stems.end()) << "a stem given as text and JSON";
  for (const std::string& stem : testing::GoldenStems(kFolder, ".expected.json")) {
    EXPECT_TRUE(std::ranges::binary_search(stems, stem)) << stem << " has no input";
  }
  EXPECT_GE(stems.size(), 9U);
}

TEST(Nvbandwidth, AHealthyNodePassesEveryTest) {
  const auto report = ParseNvbandwidthText(Input("h100-healthy"));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->version, "v0.4");
  EXPECT_EQ(report->driver_version, "550.54.15");
  ASSERT_EQ(report->devices.size(), 8U);
  EXPECT_EQ(report->devices[3], "NVIDIA H100 80GB HBM3 (00000000:5D:00)");
  ASSERT_EQ(report->tests.size(), 3U);
  EXPECT_EQ(report->tests[2].matrix.size(), 8U);
  EXPECT_FALSE(report->tests[2].matrix[4][4].has_value());  // N/A: a GPU with itself
  const auto findings = JudgeBandwidth(*report, H100(), ActiveThresholds::Builtin());
  ASSERT_EQ(findings.size(), 3U);
  for (const Finding& f : findings) EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
}

TEST(Nvbandwidth, TheSlowGpuAndTheSlowLinkAreNamed) {
  const auto report = ParseNvbandwidthText(Input("h100-gpu3-pcie-and-one-link"));
  ASSERT_TRUE(report) << report.error().message;
  const auto findings = JudgeBandwidth(*report, H100(), ActiveThresholds::Builtin());
  ASSERT_EQ(findings.size(), 3U);
  EXPECT_EQ(findings[0].status, CheckStatus::kFail);
  EXPECT_EQ(findings[0].message, "GPU 3 host to device: 31.2 GB/s, below 48 GB/s");
  EXPECT_EQ(findings[1].status, CheckStatus::kWarn);  // 49.8: within 5 % of 48
  EXPECT_EQ(findings[2].status, CheckStatus::kFail);
  EXPECT_EQ(findings[2].message,
            "GPU 2 -> GPU 5 device to device read: 290.4 GB/s, below 335 GB/s; 2 below it: "
            "GPU 2 -> GPU 5 (290.4), GPU 5 -> GPU 2 (301.1)");
}

TEST(Nvbandwidth, ItsJsonIsReadWithEachTestsStatus) {
  const auto v08 = ParseNvbandwidth(Input("v08-one-slow-link.nvb.json"));
  ASSERT_TRUE(v08) << v08.error().message;
  EXPECT_EQ(v08->version, "v0.8");
  EXPECT_EQ(v08->driver_version, "570.124.06");
  ASSERT_EQ(v08->devices.size(), 8U);
  EXPECT_EQ(v08->devices[0], "NVIDIA H100 80GB HBM3 (00000000:18:00): (node001)");
  ASSERT_EQ(v08->tests.size(), 3U);
  EXPECT_FALSE(v08->tests[2].matrix[3][3].has_value());  // "N/A"
  auto findings = JudgeBandwidth(*v08, H100(), ActiveThresholds::Builtin());
  ASSERT_EQ(findings.size(), 3U);
  EXPECT_EQ(findings[0].status, CheckStatus::kPass);
  EXPECT_EQ(findings[2].status, CheckStatus::kFail);
  EXPECT_EQ(findings[2].message,
            "GPU 6 -> GPU 1 device to device read: 301.1 GB/s, below 335 GB/s");

  // Died during device to host: that test never finished, and the assertion says why.
  const auto died = ParseNvbandwidth(Input("died-during-a-test.nvb.json"));
  ASSERT_TRUE(died) << died.error().message;
  findings = JudgeBandwidth(*died, H100(), ActiveThresholds::Builtin());
  ASSERT_EQ(findings.size(), 3U);
  EXPECT_EQ(findings[0].status, CheckStatus::kPass);
  EXPECT_EQ(findings[1].status, CheckStatus::kUnknown);
  EXPECT_NE(findings[1].message.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << findings[1].message;
  EXPECT_EQ(findings[2].message, "device to device read: not in nvbandwidth's output");

  // A test listed "Running" then "Error": the last word stands, once.
  const auto twice = ParseNvbandwidth(Input("error-listed-twice.nvb.json"));
  ASSERT_TRUE(twice) << twice.error().message;
  ASSERT_EQ(twice->tests.size(), 3U);
  EXPECT_EQ(twice->tests[2].error, "nvbandwidth said \"Error\"");

  const auto unknown = ParseNvbandwidth(Input("waived-and-unknown-test.nvb.json"));
  ASSERT_TRUE(unknown) << unknown.error().message;
  ASSERT_EQ(unknown->tests.size(), 4U);
  EXPECT_TRUE(unknown->tests[2].waived);
  EXPECT_EQ(unknown->tests[3].error, "nvbandwidth does not know this test");

  const struct {
    const char* text;
    const char* says;
  } refused[] = {
      {"{}", "not its JSON document"},
      {R"({"nvbandwidth": 3})", "not its JSON document"},
      {R"({"nvbandwidth": {"error": "Specified list of testcase prefixes did not match any testcases"}})",
       "did not match any testcases"},
      {R"({"nvbandwidth": {"testcases": [{"status": "Passed"}]}})", "no test in the document"},
  };
  for (const auto& c : refused) {
    const auto r = ParseNvbandwidth(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
}

TEST(Nvbandwidth, WhatWasNotMeasuredIsNeverAPass) {
  const auto waived = ParseNvbandwidthText(Input("p2p-waived"));
  ASSERT_TRUE(waived);
  auto findings = JudgeBandwidth(*waived, H100(), ActiveThresholds::Builtin());
  ASSERT_EQ(findings.size(), 3U);
  EXPECT_EQ(findings[2].status, CheckStatus::kUnknown);
  EXPECT_NE(findings[2].message.find("waived"), std::string::npos);

  const auto cut = ParseNvbandwidthText(Input("cut-inside-matrix"));
  ASSERT_TRUE(cut);
  ASSERT_EQ(cut->tests.back().matrix.size(), 4U);  // the cut row's "38" is not taken
  findings = JudgeBandwidth(*cut, H100(), ActiveThresholds::Builtin());
  ASSERT_EQ(findings.size(), 3U);
  EXPECT_EQ(findings[1].status, CheckStatus::kPass);  // D2H finished before the cut
  EXPECT_EQ(findings[2].status, CheckStatus::kUnknown);
  EXPECT_NE(findings[2].message.find("the output stops inside its matrix"), std::string::npos);

  const auto error = ParseNvbandwidthText(Input("cuda-error"));
  ASSERT_TRUE(error);
  findings = JudgeBandwidth(*error, H100(), ActiveThresholds::Builtin());
  ASSERT_EQ(findings.size(), 3U);
  EXPECT_EQ(findings[0].status, CheckStatus::kUnknown);
  EXPECT_NE(findings[0].message.find("CUDA_ERROR_NO_DEVICE"), std::string::npos);
  EXPECT_EQ(findings[1].message, "device to host: not in nvbandwidth's output");

  // A GPU the table does not know: every figure UNKNOWN, none judged by another part's limit.
  const auto healthy = ParseNvbandwidthText(Input("h100-healthy"));
  findings = JudgeBandwidth(*healthy, nullptr, ActiveThresholds::Builtin());
  for (const Finding& f : findings) EXPECT_EQ(f.status, CheckStatus::kUnknown);
  // A100 has no P2P limit: an absent P2P test is not asked of it.
  const auto a100 = ActiveThresholds::Builtin().Find("a100-sxm");
  findings = JudgeBandwidth(*error, a100, ActiveThresholds::Builtin());
  EXPECT_EQ(findings.size(), 2U);

  EXPECT_FALSE(ParseNvbandwidthText(Input("not-nvbandwidth")));
  EXPECT_FALSE(ParseNvbandwidthText(""));
}

}  // namespace
}  // namespace cmax::active
