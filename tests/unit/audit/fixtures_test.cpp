// Whole hosts graded: evidence fixtures of healthy and broken H100, H200, B200 and GB200 nodes
// on Slurm and Kubernetes (tests/data/audit_fixtures/*.evidence.json, in the shapes the
// collectors write), each with the expected status and observation of every check of the
// catalogue beside it (*.golden). CMAX_UPDATE_GOLDEN=1 rewrites them: review the diff as code.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "audit/catalogue.hpp"
#include "audit/grading.hpp"
#include "audit/minimums.hpp"
#include "support/golden.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

constexpr const char* kFolder = "audit_fixtures";

class AuditFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(AuditFixture, EveryCheckAsExpected) {
  sys::LocalFileSystem fs;
  auto text = fs.ReadFile(
      fmt::format("{}/{}/{}.evidence.json", CMAX_TEST_DATA, kFolder, GetParam()), 1 << 20);
  ASSERT_TRUE(text) << text.error().message;
  const json fixture = json::parse(*text);
  auto target = ParseTarget(fixture.at("target").get<std::string>());
  ASSERT_TRUE(target) << target.error().message;
  AuditEvidence evidence;
  for (const auto& [key, value] : fixture.at("evidence").items()) evidence[key] = value;
  auto checks = AuditCatalogue::Builtin().Select("");
  ASSERT_TRUE(checks);
  // A day after the built-in table's date: past its grace periods, within its 10 days.
  const std::vector<Finding> findings = GradeChecks(*checks, evidence,
                                                    {.target = *target,
                                                     .minimums = &MinimumTable::Builtin(),
                                                     .now = *ParseIso8601("2026-09-26T12:00:00Z")});
  ASSERT_EQ(findings.size(), checks->size());
  std::string out;
  for (const Finding& f : findings) {
    // An evidence shape a rule did not expect is a fixture (or collector) bug, never a grade.
    EXPECT_EQ(f.message.find("unexpected shape"), std::string::npos) << f.check_id << f.message;
    out += fmt::format("{:<44} {:<7} {}\n", f.check_id, StatusName(f.status),
                       f.observed.empty() ? f.message : f.observed);
  }
  testing::ExpectGolden(fmt::format("{}/{}.golden", kFolder, GetParam()), out);
}

INSTANTIATE_TEST_SUITE_P(Hosts, AuditFixture,
                         ::testing::ValuesIn(testing::GoldenStems(kFolder, ".evidence.json")),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(AuditFixtures, NoGoldenWithoutItsEvidence) {
  testing::ExpectNoOrphanGoldens(kFolder, ".evidence.json", ".golden");
}

}  // namespace
}  // namespace cmax::audit
