// `dcgmi diag -r N -j` (and its table without -j, dcgm_diag_text.cpp): DCGM's diagnostic read
// into its tests and each test's result per GPU.
// Two shapes (tests/data/dcgm_diag/README.md): DCGM 3's "DCGM GPU Diagnostic" (results with
// "gpu_ids", a version inside) and DCGM 4's "DCGM Diagnostic" (results per entity_group and
// entity_id, a test_summary per test, the version under "metadata"). A diagnostic that could
// not start says so in "runtime_error". Pure.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax::active {

// DCGM's words, in order of how bad they are; kOther for a word this reader does not know.
enum class DiagStatus { kPass, kSkip, kNotRun, kOther, kWarn, kFail };
std::string_view DiagStatusName(DiagStatus status);  // "pass", "skip", "not run", ...

struct DiagResult {
  std::vector<int> gpus;  // empty: the node (a software check with no entity)
  DiagStatus status = DiagStatus::kOther;
  std::vector<std::string> warnings;  // DCGM's own words, as given
  std::string info;
};

struct DiagTest {
  std::string category;                    // "Deployment", "Hardware", "Integration", "Stress"
  std::string name;                        // "memory", "pcie", "Page Retirement/Row Remap"
  DiagStatus status = DiagStatus::kOther;  // the summary's, else the worst result's
  std::vector<DiagResult> results;
};

struct DiagReport {
  std::string version;  // DCGM's, "" where the document does not say
  std::vector<DiagTest> tests;
  DiagStatus worst = DiagStatus::kPass;
  // Tests that failed or warned, "memory: GPU 3: Pending page retirements ...", first word
  // of each.
  std::vector<std::string> problems;
};

// A test that failed or warned in words: "memory: GPU 3: Pending page retirements ...", the
// first result of the test's status with DCGM's first warning (or its info).
std::string DiagProblem(const DiagTest& test);

// kCorrupt when the text is not one of the two documents (or holds no test); kUnavailable,
// with DCGM's words, when the diagnostic reports it could not run (a GPU in use, no
// hostengine).
Result<DiagReport> ParseDcgmDiagJson(std::string_view text);

// dcgmi diag's table, as it prints it without -j (tests/data/dcgm_diag/README.md): 78-column
// rows, a 25-character name cell and a 46-character result cell, messages cut into 45-character
// pieces on the rows below. DCGM 3.3 ("Pass - All", "Fail - GPU: 0", "Pass - GPUs: 1, 2",
// capitalised names, Integration before Hardware) and DCGM 4 (a test's word, then a "GPU0:
// Pass" row a GPU, messages labelled "Warning: GPU0"). kUnavailable with DCGM's words for its
// "Error: ..." line instead of a table; kCorrupt for a table cut short or none at all.
Result<DiagReport> ParseDcgmDiagText(std::string_view text);
// Either, by the first character that is not a space ('{': JSON).
Result<DiagReport> ParseDcgmDiag(std::string_view text);

// The report as evidence: {"version", "worst", "problems", "tests": [{"category", "name",
// "status", "results": [{"gpus", "status", "warnings", "info"}]}]}.
nlohmann::json DiagReportJson(const DiagReport& report);

}  // namespace cmax::active
