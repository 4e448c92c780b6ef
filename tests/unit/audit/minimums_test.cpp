// The minimum-version table: grading a version by its component's kind of release line (a table
// of cases, on a table written here with values unlike the shipped one, so that nothing passes
// by being hard-coded), the grace period, the table's age, and a broken table refused.
#include "audit/minimums.hpp"

#include <functional>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/sha256.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

WallTime At(const char* iso) {
  return *ParseIso8601(iso);
}

const json kTable = {
    {"schema", "cmax.audit-minimums/v1"},
    {"generated", "2026-10-01T00:00:00Z"},
    {"grace_days", 3},
    {"max_age_days", 10},
    {"components",
     {{"nvidia-driver",
       {{"select", "major"}, {"minimums", {{"550", "550.90.01"}, {"570", "570.200.10"}}}}},
      {"runc",
       {{"select", "major.minor"},
        {"unlisted", "fail"},
        {"minimums", {{"1.1", "1.1.20"}, {"1.3", "1.3.9"}, {"1.5", "1.5.0-rc.4"}}}}},
      {"connectx-firmware", {{"select", "train"}, {"minimums", {{"28", "5000"}, {"32", "2000"}}}}},
      {"nvidia-container-toolkit",
       {{"select", "whole"},
        {"minimums", {{"*", "1.20.0"}}},
        {"available", {{"*", "2026-10-10"}}}}},
      {"amd-driver",
       {{"select", "model"},
        {"minimums",
         {{"MI210", "30.20"}, {"MI300X", "31.50"}, {"MI355X", "31.50"}, {"MI400", "32.00"}}},
        {"available", {{"MI355X", "2026-10-04"}, {"MI400", "2026-12-01"}}}}}}}};

TEST(GradeVersion, HoldsEachVersionToItsReleaseLine) {
  auto table = MinimumTable::Parse(kTable.dump());
  ASSERT_TRUE(table) << table.error().message;
  const WallTime now = At("2026-10-05T12:00:00Z");
  struct Case {
    const char* component;
    const char* observed;
    CheckStatus want;
    const char* minimum;
  };
  const std::vector<Case> cases = {
      // a driver branch: its own minimum; newer than every branch passes; others are unknown
      {"nvidia-driver", "570.200.10", CheckStatus::kPass, "570.200.10"},
      {"nvidia-driver", "570.211.01", CheckStatus::kPass, "570.200.10"},
      {"nvidia-driver", "570.86.15", CheckStatus::kFail, "570.200.10"},
      {"nvidia-driver", "550.90.01", CheckStatus::kPass, "550.90.01"},
      {"nvidia-driver", "550.54.15", CheckStatus::kFail, "550.90.01"},
      {"nvidia-driver", "595.10.01", CheckStatus::kPass, ""},
      {"nvidia-driver", "560.35.03", CheckStatus::kUnknown, ""},
      {"nvidia-driver", "535.309.01", CheckStatus::kUnknown, ""},
      // runc: per major.minor; a release candidate below its release; an unmaintained branch
      // is held to the next one
      {"runc", "1.3.9", CheckStatus::kPass, "1.3.9"},
      {"runc", "1.3.10", CheckStatus::kPass, "1.3.9"},
      {"runc", "1.3.8", CheckStatus::kFail, "1.3.9"},
      {"runc", "v1.1.20", CheckStatus::kPass, "1.1.20"},
      {"runc", "1.1.12-0ubuntu3", CheckStatus::kFail, "1.1.20"},
      {"runc", "1.1.20-0ubuntu1", CheckStatus::kPass, "1.1.20"},
      {"runc", "1.5.0-rc.4", CheckStatus::kPass, "1.5.0-rc.4"},
      {"runc", "1.5.0-rc.5", CheckStatus::kPass, "1.5.0-rc.4"},
      {"runc", "1.5.0", CheckStatus::kPass, "1.5.0-rc.4"},
      {"runc", "1.5.0-rc.3", CheckStatus::kFail, "1.5.0-rc.4"},
      {"runc", "1.2.99", CheckStatus::kFail, "1.3.9"},
      {"runc", "1.0.0", CheckStatus::kFail, "1.1.20"},
      {"runc", "1.6.0", CheckStatus::kPass, ""},
      // firmware: the train's patch
      {"connectx-firmware", "28.43.5000", CheckStatus::kPass, "5000"},
      {"connectx-firmware", "28.39.4999", CheckStatus::kFail, "5000"},
      {"connectx-firmware", "32.41.2100", CheckStatus::kPass, "2000"},
      {"connectx-firmware", "30.1.1", CheckStatus::kUnknown, ""},
      {"connectx-firmware", "40.1.1", CheckStatus::kPass, ""},
      // one minimum, with its fix not available yet: not in effect
      {"nvidia-container-toolkit", "1.19.9", CheckStatus::kPass, "1.20.0"},
      // a package epoch is not a newer release
      {"nvidia-driver", "1:570.86.15", CheckStatus::kFail, "570.200.10"},
      {"nvidia-driver", "1:570.211.01", CheckStatus::kPass, "570.200.10"},
      {"connectx-firmware", "28", CheckStatus::kUnknown, "5000"},
      {"connectx-firmware", "28.43", CheckStatus::kUnknown, "5000"},
      // what cannot be graded
      {"docker", "29.7.0", CheckStatus::kUnknown, ""},
      {"nvidia-driver", "not a version", CheckStatus::kUnknown, ""},
      {"nvidia-driver", "", CheckStatus::kUnknown, ""},
      {"runc", "1", CheckStatus::kUnknown, ""},
      {"runc", "runc version \"1.3.9\"", CheckStatus::kUnknown, ""},
  };
  for (const Case& c : cases) {
    const VersionGrade grade = GradeVersion(*table, c.component, c.observed, now);
    EXPECT_EQ(grade.status, c.want) << c.component << " " << c.observed << ": " << grade.reason;
    EXPECT_EQ(grade.minimum, c.minimum) << c.component << " " << c.observed;
    EXPECT_FALSE(grade.reason.empty());
  }
  EXPECT_NE(GradeVersion(*table, "runc", "1.2.99", now).reason.find("next maintained branch, 1.3"),
            std::string::npos);
}

TEST(GradeVersion, ByModelTheWorstOfTheModelsPresentDecides) {
  auto table = MinimumTable::Parse(kTable.dump());
  ASSERT_TRUE(table) << table.error().message;
  const WallTime now = At("2026-10-05T12:00:00Z");
  using Models = std::vector<std::string>;
  struct Case {
    Models models;
    const char* observed;
    CheckStatus want;
    const char* minimum;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{"MI210"}, "30.20", CheckStatus::kPass, "30.20", "(MI210's)"},
      {{"MI210"}, "30.10", CheckStatus::kFail, "30.20", "below the minimum 30.20"},
      // two models: the higher minimum decides
      {{"MI210", "MI300X"}, "30.20", CheckStatus::kFail, "31.50", "(MI300X's)"},
      {{"MI300X", "MI210"}, "31.50", CheckStatus::kPass, "31.50", "at or above"},
      // a release before the 30.x numbering is older, not newer
      {{"MI300X"}, "6.4.2", CheckStatus::kFail, "31.50", "below"},
      // its fix became available yesterday: in the grace period
      {{"MI355X"}, "31.40", CheckStatus::kWarn, "31.50", "grace period"},
      // the worst grade of the models decides, whatever their order: a minimum in force that
      // is missed fails beside one in its grace period, or one whose fix is not out yet
      {{"MI355X", "MI300X"}, "31.40", CheckStatus::kFail, "31.50", "(MI300X's)"},
      {{"MI300X", "MI355X"}, "31.40", CheckStatus::kFail, "31.50", "(MI300X's)"},
      {{"MI400"}, "30.10", CheckStatus::kPass, "32.00", "not in effect"},
      {{"MI400", "MI210"}, "30.10", CheckStatus::kFail, "30.20", "(MI210's)"},
      {{"MI210", "MI210", "MI400"}, "31.60", CheckStatus::kPass, "32.00", "(MI400's)"},
      // a model the table does not list: never a pass, but a listed one can still fail
      {{"MI400X"}, "40.10", CheckStatus::kUnknown, "", "no minimum of amd-driver for MI400X"},
      {{"MI300X", "MI400X"}, "31.60", CheckStatus::kUnknown, "31.50", "no minimum for MI400X"},
      {{"MI300X", "MI400X"}, "31.10", CheckStatus::kFail, "31.50", "below"},
      {{}, "31.60", CheckStatus::kUnknown, "", "no model"},
      {{"MI300X"}, "latest", CheckStatus::kUnknown, "", "not a version"},
  };
  for (const Case& c : cases) {
    const VersionGrade grade =
        GradeVersionForModels(*table, "amd-driver", c.models, c.observed, now);
    EXPECT_EQ(grade.status, c.want) << c.observed << ": " << grade.reason;
    EXPECT_EQ(grade.minimum, c.minimum) << c.observed;
    EXPECT_NE(grade.reason.find(c.says), std::string::npos) << grade.reason;
  }
  // By model only with the models: the plain grade cannot place it, and a component of another
  // kind is not graded by model.
  EXPECT_EQ(GradeVersion(*table, "amd-driver", "31.60", now).status, CheckStatus::kUnknown);
  EXPECT_EQ(GradeVersionForModels(*table, "nvidia-driver", {"MI300X"}, "570.211.01", now).status,
            CheckStatus::kUnknown);
  EXPECT_NE(MinimumTableText(*table, now).find("amd-driver (by GPU model;"), std::string::npos);
}

TEST(GradeVersion, AFixGetsItsGracePeriodThenFails) {
  auto table = MinimumTable::Parse(kTable.dump());
  ASSERT_TRUE(table);
  const auto at = [&](const char* when) {
    return GradeVersion(*table, "nvidia-container-toolkit", "1.19.9", At(when));
  };
  EXPECT_EQ(at("2026-10-09T23:59:00Z").status, CheckStatus::kPass);  // not available yet
  EXPECT_EQ(at("2026-10-10T00:00:00Z").status, CheckStatus::kWarn);  // day 0 of the grace
  const VersionGrade in_grace = at("2026-10-12T12:00:00Z");
  EXPECT_EQ(in_grace.status, CheckStatus::kWarn);
  EXPECT_NE(in_grace.reason.find("a failure from 2026-10-13"), std::string::npos)
      << in_grace.reason;
  EXPECT_EQ(at("2026-10-13T00:00:00Z").status, CheckStatus::kFail);
  EXPECT_EQ(at("2026-10-13T00:00:00Z").minimum, "1.20.0");
  // After enforcement, an epoch does not lift a version over its minimum.
  EXPECT_EQ(GradeVersion(*table, "nvidia-container-toolkit", "5:1.19.9", At("2026-10-20T00:00:00Z"))
                .status,
            CheckStatus::kFail);
  EXPECT_EQ(GradeVersion(*table, "nvidia-container-toolkit", "5:1.20.1-1~ubuntu.22.04~jammy",
                         At("2026-10-20T00:00:00Z"))
                .status,
            CheckStatus::kPass);
}

TEST(MinimumTable, SaysWhenItIsOldOrFromTheFuture) {
  auto table = MinimumTable::Parse(kTable.dump());
  ASSERT_TRUE(table);
  EXPECT_EQ(table->AgeNotice(At("2026-10-11T00:00:00Z")), "");
  const std::string old = table->AgeNotice(At("2026-10-12T01:00:00Z"));
  EXPECT_NE(old.find("11 days old (generated 2026-10-01; older than 10 days)"), std::string::npos)
      << old;
  const WallTime before = At("2026-09-29T00:00:00Z");
  EXPECT_NE(table->AgeNotice(before).find("dated in the future (2026-10-01)"), std::string::npos);
  // A table from the future grades nothing.
  const VersionGrade grade = GradeVersion(*table, "nvidia-driver", "570.211.01", before);
  EXPECT_EQ(grade.status, CheckStatus::kUnknown);
  EXPECT_EQ(table->Sha256(), Sha256Hex(kTable.dump()));
}

TEST(MinimumTable, TheBuiltinOneIsThePublicTablesValues) {
  const MinimumTable& table = MinimumTable::Builtin();
  EXPECT_EQ(FormatIso8601(table.Generated()).substr(0, 10), "2026-09-25");
  EXPECT_EQ(table.Sha256().size(), 64U);
  // Every component a check grades has its minimums; the parser refuses any other.
  for (const std::string_view component : kGradedComponents) {
    EXPECT_NE(table.Find(component), nullptr) << component;
  }
  EXPECT_EQ(table.Components().size(), kGradedComponents.size());
  const WallTime now = At("2026-09-28T00:00:00Z");
  EXPECT_EQ(GradeVersion(table, "nvidia-driver", "580.159.03", now).status, CheckStatus::kPass);
  EXPECT_EQ(GradeVersion(table, "nvidia-driver", "580.95.05", now).status, CheckStatus::kFail);
  EXPECT_EQ(GradeVersion(table, "runc", "1.1.12", now).status, CheckStatus::kFail);
  EXPECT_EQ(GradeVersion(table, "cuda-toolkit", "12.8", now).status, CheckStatus::kFail);
  EXPECT_EQ(GradeVersion(table, "cuda-toolkit", "13.1", now).status, CheckStatus::kPass);
  // AMD-SB-6034: driver 31.40 for the nine Instinct models it names.
  EXPECT_EQ(GradeVersionForModels(table, "amd-driver", {"MI300X"}, "31.40", now).status,
            CheckStatus::kPass);
  EXPECT_EQ(GradeVersionForModels(table, "amd-driver", {"MI250X", "MI250"}, "30.20", now).status,
            CheckStatus::kFail);
}

TEST(MinimumTable, RefusesABrokenTable) {
  struct Row {
    std::string change;
    json document;
    std::string says;
  };
  const auto changed = [](const std::function<void(json&)>& change) {
    json doc = kTable;
    change(doc);
    return doc;
  };
  const std::vector<Row> rows = {
      {"schema", changed([](json& d) { d["schema"] = "v2"; }), "schema"},
      {"unknown key", changed([](json& d) { d["grace_dys"] = 1; }), "did you mean 'grace_days'"},
      {"bad date", changed([](json& d) { d["generated"] = "yesterday"; }), "\"generated\""},
      {"negative grace", changed([](json& d) { d["grace_days"] = -1; }), "grace_days"},
      {"no components", changed([](json& d) { d["components"] = json::object(); }),
       "\"components\""},
      {"unknown select",
       changed([](json& d) { d["components"]["nvidia-driver"]["select"] = "minor"; }),
       "\"select\""},
      {"an unlisted model that fails",
       changed([](json& d) { d["components"]["amd-driver"]["unlisted"] = "fail"; }),
       "cannot be fail"},
      {"a model not as hardware names it",
       changed([](json& d) { d["components"]["amd-driver"]["minimums"]["mi300x"] = "31.0"; }),
       "selector 'mi300x' does not fit"},
      {"unknown unlisted",
       changed([](json& d) { d["components"]["nvidia-driver"]["unlisted"] = "pass"; }),
       "\"unlisted\""},
      {"selector of another kind",
       changed([](json& d) { d["components"]["runc"]["minimums"]["1"] = "1.0.0"; }),
       "selector '1' does not fit"},
      {"minimum not a version",
       changed([](json& d) { d["components"]["nvidia-driver"]["minimums"]["550"] = "latest"; }),
       "not a version"},
      {"train minimum not a number",
       changed([](json& d) { d["components"]["connectx-firmware"]["minimums"]["28"] = "28.1.1"; }),
       "not a number"},
      {"availability of no minimum", changed([](json& d) {
         d["components"]["nvidia-container-toolkit"]["available"] = {{"1.2", "2026-01-01"}};
       }),
       "has no minimum"},
      {"availability not a date", changed([](json& d) {
         d["components"]["nvidia-container-toolkit"]["available"]["*"] = "soon";
       }),
       "YYYY-MM-DD"},
      {"a selector not written as a version's is",
       changed([](json& d) { d["components"]["runc"]["minimums"]["1.05"] = "1.5.1"; }),
       "selector '1.05' does not fit"},
      {"select not a string",
       changed([](json& d) { d["components"]["nvidia-driver"]["select"] = 5; }), "\"select\""},
      // What --show-minimums prints and a failed check links: never a terminal's escape, a
      // second line, or an address that is not the web's.
      {"a CVE with an escape and a forged line", changed([](json& d) {
         d["components"]["runc"]["cves"] = {"CVE-2026-1\x1b[31m\nrunc 1.9 >= 9.9.9"};
       }),
       "?runc 1.9 >= 9.9.9', which is not a CVE id"},
      {"a CVE id cut short",
       changed([](json& d) { d["components"]["runc"]["cves"] = {"CVE-26-1"}; }),
       "which is not a CVE id"},
      {"an advisory that is no web address",
       changed([](json& d) { d["components"]["runc"]["advisories"] = {"javascript:alert(1)"}; }),
       "which is not an http(s) address"},
      {"an advisory with a line break", changed([](json& d) {
         d["components"]["runc"]["advisories"] = {"https://x/\x1b]0;pwned\x07\nFAKE"};
       }),
       "which is not an http(s) address"},
      {"a component no check grades (misspelt)", changed([](json& d) {
         d["components"]["nvidia_driver"] = d["components"]["nvidia-driver"];
       }),
       "no check grades a component named 'nvidia_driver' (did you mean 'nvidia-driver'?)"},
      {"unknown component key",
       changed([](json& d) { d["components"]["nvidia-container-toolkit"]["minimum"] = "1.0"; }),
       "did you mean 'minimums'"},
  };
  for (const Row& row : rows) {
    auto parsed = MinimumTable::Parse(row.document.dump());
    ASSERT_FALSE(parsed) << row.change;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << row.change;
    EXPECT_NE(parsed.error().message.find(row.says), std::string::npos)
        << row.change << ": " << parsed.error().message;
  }
  EXPECT_FALSE(MinimumTable::Parse("{"));
}

}  // namespace
}  // namespace cmax::audit
