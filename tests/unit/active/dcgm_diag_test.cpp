// `dcgmi diag -j` read into tests and per-GPU results: the documents of tests/data/dcgm_diag
// (DCGM 3 and 4 shapes, written by hand from DCGM's key names) against golden files, and the
// shapes it refuses or reads around.
#include "active/dcgm_diag.hpp"

#include <algorithm>
#include <filesystem>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "support/corpus.hpp"
#include "support/golden.hpp"

namespace cmax::active {
namespace {

std::string Input(const std::string& stem) {
  return testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/dcgm_diag/" + stem + ".json");
}

// Every document of the folder: its report, or the error, against
// active/dcgm_diag/NAME.expected.json.
class DcgmDiagGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DcgmDiagGolden, MatchesExpectedReport) {
  const auto report = ParseDcgmDiagJson(Input(GetParam()));
  const nlohmann::json out = report
                                 ? DiagReportJson(*report)
                                 : nlohmann::json{{"error", report.error().message},
                                                  {"code", static_cast<int>(report.error().code)}};
  testing::ExpectGolden("active/dcgm_diag/" + GetParam() + ".expected.json", out.dump(1) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Cases, DcgmDiagGolden,
                         ::testing::ValuesIn(testing::GoldenStems("dcgm_diag", ".json")),
                         [](const auto& test) {
                           std::string name = test.param;  // gtest names take no '-'
                           std::ranges::replace(name, '-', '_');
                           return name;
                         });

// Every table of the folder (dcgmi diag without -j), into the same report, against
// active/dcgm_diag/NAME.expected.json.
class DcgmDiagTextGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DcgmDiagTextGolden, MatchesExpectedReport) {
  const std::string text =
      testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/dcgm_diag/" + GetParam() + ".txt");
  const auto report = ParseDcgmDiag(text);  // by its first character: the table's reader
  const nlohmann::json out = report
                                 ? DiagReportJson(*report)
                                 : nlohmann::json{{"error", report.error().message},
                                                  {"code", static_cast<int>(report.error().code)}};
  testing::ExpectGolden("active/dcgm_diag/" + GetParam() + ".expected.json", out.dump(1) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Cases, DcgmDiagTextGolden,
                         ::testing::ValuesIn(testing::GoldenStems("dcgm_diag", ".txt")),
                         [](const auto& test) {
                           std::string name = test.param;
                           std::ranges::replace(name, '-', '_');
                           return name;
                         });

TEST(DcgmDiagGoldenFolder, EveryExpectationHasItsDocument) {
  std::vector<std::string> inputs = testing::GoldenStems("dcgm_diag", ".json");
  ASSERT_GE(inputs.size(), 4U);
  const auto tables = testing::GoldenStems("dcgm_diag", ".txt");
  ASSERT_GE(tables.size(), 4U);
  inputs.insert(inputs.end(), tables.begin(), tables.end());
  std::ranges::sort(inputs);
  for (const std::string& stem : testing::GoldenStems("active/dcgm_diag", ".expected.json")) {
    EXPECT_TRUE(std::ranges::binary_search(inputs, stem)) << stem << " has no document";
  }
}

// The two readers agree: DCGM 4's memory test failing on GPU 2, read from its table, names the
// GPU and DCGM's words joined back from their 45-character pieces.
TEST(DcgmDiagText, PiecesJoinBackAndEachGpuHasItsResult) {
  const auto four = ParseDcgmDiagText(
      testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/dcgm_diag/dcgm4-level2-fail.txt"));
  ASSERT_TRUE(four) << four.error().message;
  EXPECT_EQ(four->version, "4.2.3");
  ASSERT_EQ(four->tests.size(), 3U);
  const DiagTest& memory = four->tests[1];
  EXPECT_EQ(memory.category, "Hardware");
  EXPECT_EQ(memory.status, DiagStatus::kFail);
  ASSERT_EQ(memory.results.size(), 4U);
  EXPECT_EQ(memory.results[2].gpus, std::vector<int>{2});
  EXPECT_EQ(memory.results[2].status, DiagStatus::kFail);
  ASSERT_EQ(memory.results[2].warnings.size(), 1U);
  EXPECT_EQ(memory.results[2].warnings[0],
            "A memory mismatch was detected on GPU 2, but no error was reported by CUDA or the "
            "driver. Reset the GPU and run the test again.");
  EXPECT_EQ(four->tests[2].category, "Integration");  // DCGM 4: Hardware before Integration

  const auto three = ParseDcgmDiagText(
      testing::SlurpFile(std::string(CMAX_TEST_DATA) + "/dcgm_diag/dcgm3-level3-fail.txt"));
  ASSERT_TRUE(three) << three.error().message;
  EXPECT_EQ(three->version, "3.3.9");
  EXPECT_EQ(three->worst, DiagStatus::kFail);
  // "Pass - All" on the four GPUs the metadata lists.
  EXPECT_EQ(three->tests[9].name, "PCIe");
  EXPECT_EQ(three->tests[9].results[0].gpus, (std::vector<int>{0, 1, 2, 3}));
  // The deployment's note goes with the section's checks, none failed: the last one.
  EXPECT_NE(three->tests[8].results.at(0).info.find("nvidia-smi -i <gpuId> -pm 1"),
            std::string::npos);
  ASSERT_EQ(three->problems.size(), 2U);
  EXPECT_EQ(three->problems[0],
            "GPU Memory: GPU 1: GPU 1 Pending page retirements detected on the GPU; the GPU "
            "should be reset. Drain it and reset it before running jobs.");
}

TEST(DcgmDiag, ResultsPerGpuInBothShapes) {
  const auto four = ParseDcgmDiagJson(Input("dcgm4-level1-fail"));
  ASSERT_TRUE(four) << four.error().message;
  EXPECT_EQ(four->version, "4.2.3");
  EXPECT_EQ(four->worst, DiagStatus::kFail);
  ASSERT_EQ(four->tests.size(), 2U);
  const DiagTest& memory = four->tests[1];
  EXPECT_EQ(memory.category, "Hardware");
  EXPECT_EQ(memory.status, DiagStatus::kFail);
  ASSERT_EQ(memory.results.size(), 2U);
  EXPECT_EQ(memory.results[1].gpus, std::vector<int>{3});
  ASSERT_EQ(four->problems.size(), 2U);
  EXPECT_EQ(four->problems[1],
            "memory: GPU 3: Pending page retirements together with a DBE were detected on GPU 3.");

  const auto three = ParseDcgmDiagJson(Input("dcgm3-level1-fail"));
  ASSERT_TRUE(three) << three.error().message;
  EXPECT_EQ(three->version, "3.3.5");
  EXPECT_EQ(three->worst, DiagStatus::kFail);
  ASSERT_EQ(three->problems.size(), 1U);
  EXPECT_TRUE(three->problems[0].starts_with("Page Retirement/Row Remap: GPU 5: "))
      << three->problems[0];
}

TEST(DcgmDiag, DcgmThreeThreeKeepsItsVersionBesideTheRoot) {
  const auto r = ParseDcgmDiagJson(Input("dcgm3-top-level-version"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, "3.3.9");
  ASSERT_EQ(r->tests.size(), 3U);
  EXPECT_EQ(r->tests[1].results[0].gpus, std::vector<int>{0});
  ASSERT_EQ(r->tests[1].results[0].warnings.size(), 1U);  // under "warnings", DCGM 3's slip
  EXPECT_EQ(r->tests[1].results[0].warnings[0], "Persistence mode for GPU 0 is disabled.");
  EXPECT_EQ(r->tests[2].results.size(), 2U);  // the null result left out
  EXPECT_EQ(r->problems.back(),
            "Targeted Power: GPU 1: Max power of 512.3 did not reach desired power minimum for "
            "GPU 1");
}

TEST(DcgmDiag, OddShapesAreReadAroundOrRefusedInWords) {
  // gpu_ids as a list or "0,1", an entity that is not a GPU, a summary-less test, a status
  // word this reader does not know, warnings as plain strings, info as a list.
  const auto odd = ParseDcgmDiagJson(R"({"DCGM GPU Diagnostic": {"test_categories": [
    {"category": "Hardware", "tests": [
      {"name": "pcie", "results": [{"gpu_ids": "0,1", "status": "Pass"},
                                   {"gpu_ids": [2, 3], "status": "Warn", "warnings": ["PCIe replays"]}]},
      {"name": "nvlink", "results": [{"entity_group": "LINK", "entity_id": 7, "status": "Fail",
                                      "info": ["link 7 down", "check the cable"]}]},
      {"name": "odd", "results": [{"status": "Quantum"}]},
      {"name": "empty"}, 17, "x"]},
    {"category": "no tests here"}]}})");
  ASSERT_TRUE(odd) << odd.error().message;
  ASSERT_EQ(odd->tests.size(), 4U);
  EXPECT_EQ(odd->tests[0].results[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(odd->tests[0].results[1].gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(odd->tests[0].status, DiagStatus::kWarn);
  EXPECT_TRUE(odd->tests[1].results[0].gpus.empty());  // a link is not a GPU
  EXPECT_EQ(odd->tests[2].status, DiagStatus::kOther);
  EXPECT_EQ(odd->worst, DiagStatus::kFail);
  ASSERT_EQ(odd->problems.size(), 2U);
  EXPECT_EQ(odd->problems[0], "pcie: GPU 2,3: PCIe replays");
  EXPECT_EQ(odd->problems[1], "nvlink: link 7 down; check the cable");

  const struct {
    const char* text;
    ErrorCode code;
    const char* says;
  } refused[] = {
      {"", ErrorCode::kCorrupt, "not a JSON document"},
      {"[1, 2]", ErrorCode::kCorrupt, "not a JSON document"},
      {R"({"other": {}})", ErrorCode::kCorrupt, "no \"DCGM Diagnostic\""},
      {R"({"DCGM Diagnostic": {"test_categories": 3}})", ErrorCode::kCorrupt, "no test_categories"},
      {R"({"DCGM Diagnostic": {"test_categories": []}})", ErrorCode::kCorrupt, "no test in"},
      {R"({"DCGM Diagnostic": {"runtime_error": "GPU 2 is running a compute process"}})",
       ErrorCode::kUnavailable, "could not run: GPU 2 is running a compute process"},
  };
  for (const auto& c : refused) {
    const auto r = ParseDcgmDiagJson(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().code, c.code) << c.text;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace cmax::active
