// `cmax audit minimums build`: tables made from CSAF and OSV advisories written for the tests
// from those schemas (tests/data/advisories), then read and graded as cmax reads its own.
#include "audit/minimums_build.hpp"

#include <unistd.h>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "audit/minimums.hpp"
#include "core/strings.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

const std::string kAdvisories = std::string(CMAX_TEST_DATA) + "/advisories";

WallTime At(const char* iso) {
  return *ParseIso8601(iso);
}

MinimumsBuild Built(const std::string& base = "") {
  sys::LocalFileSystem fs;
  auto built = BuildMinimumsFromFiles({kAdvisories}, base, At("2026-09-25T04:00:00Z"), fs);
  EXPECT_TRUE(built) << built.error().message;
  return built ? *built : MinimumsBuild{};
}

TEST(MinimumsBuild, TheHighestFixPerReleaseLineFromCsafAndOsv) {
  const MinimumsBuild built = Built();
  const json& c = built.table["components"];
  EXPECT_EQ(built.table["generated"], "2026-09-25T04:00:00Z");
  // Driver branches: the later bulletin raises 570 and 580, adds 590; 535 from an affected range
  // ("<535.288.01"), then a fixed one (">=535.309.01"); Windows and vGPU fixes are left out.
  EXPECT_EQ(c["nvidia-driver"]["select"], "major");
  EXPECT_EQ(c["nvidia-driver"]["minimums"], (json{{"535", "535.309.01"},
                                                  {"570", "570.211.01"},
                                                  {"580", "580.159.03"},
                                                  {"590", "590.48.01"}}));
  EXPECT_EQ(c["nvidia-driver"]["available"]["570"], "2026-05-19");
  EXPECT_EQ(c["nvidia-driver"]["cves"],
            (json{"CVE-2025-33217", "CVE-2025-33218", "CVE-2026-24101"}));
  EXPECT_EQ(c["nvidia-driver"]["advisories"].size(), 2U);
  // runc: one line per minor, rc-aware; a GIT range's commit is not a version. The 2024
  // advisory fixed 1.1 at 1.1.12, but the 2026 one affects everything below 1.2.8 with no fix
  // on 1.1: that line is left out, so a 1.1 runc is held to 1.2.8.
  EXPECT_EQ(c["runc"]["minimums"],
            (json{{"1.2", "1.2.8"}, {"1.3", "1.3.6"}, {"1.4", "1.4.3"}, {"1.5", "1.5.0-rc.3"}}));
  EXPECT_EQ(c["runc"]["unlisted"], "fail");
  EXPECT_EQ(c["runc"]["available"]["1.2"], "2026-08-04");
  // Docker: one minimum, the newest line's fix ("+incompatible" dropped).
  EXPECT_EQ(c["docker"]["minimums"], (json{{"*", "29.7.0"}}));
  EXPECT_EQ(c["nvidia-container-toolkit"]["minimums"], (json{{"*", "1.19.1"}}));
  EXPECT_EQ(c["dcgm"]["minimums"], (json{{"*", "4.5.3"}}));
  EXPECT_EQ(c["dcgm-exporter"]["minimums"], (json{{"*", "4.8.2"}}));
  EXPECT_EQ(c["connectx-firmware"]["minimums"], (json{{"28", "4702"}, {"40", "3008"}}));
  EXPECT_FALSE(c.contains("cuda-toolkit"));  // no advisory named it
  // Passed over, each with its reason: a mirror's metadata file (in a subfolder), a withdrawn
  // record, an advisory of nothing cmax grades, and the superseded runc line.
  const auto ignored = [&](const std::string& part) {
    return std::ranges::any_of(
        built.ignored, [&](const std::string& line) { return line.find(part) != line.npos; });
  };
  EXPECT_EQ(built.ignored.size(), 4U);
  EXPECT_TRUE(ignored("provider-metadata.json: neither a CSAF document nor an OSV record"));
  EXPECT_TRUE(ignored("runc-GHSA-wwww-xxxx-yyyy.osv.json: withdrawn"));
  EXPECT_TRUE(ignored("unrelated-GHSA-zzzz-yyyy-xxxx.osv.json: names no fixed version"));
  EXPECT_TRUE(ignored("runc 1.1: its fix 1.1.12 is still affected"));
  // The same fix in a later advisory (and its later revision) does not move its date.
  EXPECT_EQ(c["dcgm"]["available"]["*"], "2026-07-14");
  EXPECT_EQ(c["dcgm"]["advisories"].size(), 2U);

  // What is built is what cmax reads and grades with.
  auto table = MinimumTable::Parse(built.table.dump());
  ASSERT_TRUE(table) << table.error().message;
  const WallTime now = At("2026-09-26T00:00:00Z");
  EXPECT_EQ(GradeVersion(*table, "nvidia-driver", "570.211.01", now).status, CheckStatus::kPass);
  EXPECT_EQ(GradeVersion(*table, "nvidia-driver", "570.207.01", now).status, CheckStatus::kFail);
  EXPECT_EQ(GradeVersion(*table, "runc", "1.5.0-rc.2", now).status, CheckStatus::kFail);
  EXPECT_EQ(GradeVersion(*table, "runc", "1.1.14", now).status, CheckStatus::kFail);
  EXPECT_EQ(GradeVersion(*table, "connectx-firmware", "28.39.4702", now).status,
            CheckStatus::kPass);
  EXPECT_EQ(GradeVersion(*table, "cuda-toolkit", "13.1", now).status, CheckStatus::kUnknown);
}

TEST(MinimumsBuild, ABaseTableKeepsWhatNoAdvisoryRaises) {
  testing::TempDir dir;
  sys::LocalFileSystem fs;
  json base = json::parse(
      *fs.ReadFile(std::string(CMAX_TEST_DATA) + "/../../data/audit_minimums.json", 1 << 20));
  base["components"]["nvidia-driver"]["minimums"]["570"] = "570.300.01";  // above the advisory
  base["components"]["nvidia-driver"]["minimums"]["580"] = "580.100.01";  // below it
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("base.json"), base.dump(), 0600));
  const MinimumsBuild built = Built(dir.File("base.json"));
  const json& c = built.table["components"];
  EXPECT_EQ(c["nvidia-driver"]["minimums"]["570"], "570.300.01");
  EXPECT_EQ(c["nvidia-driver"]["minimums"]["580"], "580.159.03");
  EXPECT_EQ(c["cuda-toolkit"]["minimums"]["*"], "13.1");  // the base's, untouched
  // The base's runc 1.1 line is superseded as the built one is: 1.1.14 is still affected.
  EXPECT_FALSE(c["runc"]["minimums"].contains("1.1")) << c["runc"];
  auto table = MinimumTable::Parse(built.table.dump());
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_EQ(GradeVersion(*table, "runc", "1.1.14", At("2026-09-26T00:00:00Z")).status,
            CheckStatus::kFail);
}

// An advisory's CVE ids and addresses are printed by --show-minimums and linked from failed
// checks: one that is not a CVE id or a web address of one line is not taken, and the fix is.
TEST(MinimumsBuild, AnAdvisorysTextThatIsNoCveOrAddressIsLeftOut) {
  sys::LocalFileSystem fs;
  json osv = json::parse(*fs.ReadFile(kAdvisories + "/runc-GHSA-aaaa-bbbb-cccc.osv.json", 1 << 20));
  osv["aliases"] = {"CVE-2026-22222", "CVE-2026-1\x1b[31mRED\nrunc 1.9 >= 9.9.9", "CVE-1"};
  osv["references"] = {{{"type", "ADVISORY"}, {"url", "https://x/\x1b]0;pwned\x07\nFAKE LINE"}},
                       {{"type", "ADVISORY"}, {"url", "file:///etc/shadow"}}};
  osv["id"] = "GHSA-\x1b[2J";
  osv["published"] = "2026-13-99T00:00:00Z";  // no such day: the fix is taken undated
  auto built = BuildMinimums({{"hostile.osv.json", osv.dump()}}, At("2026-09-25T00:00:00Z"));
  ASSERT_TRUE(built) << built.error().message;
  const json& runc = built->table["components"]["runc"];
  EXPECT_EQ(runc["cves"], json({"CVE-2026-22222"})) << runc;
  EXPECT_EQ(runc["advisories"], json::array()) << runc;  // the OSV page of a hostile id neither
  EXPECT_EQ(runc["minimums"]["1.2"], "1.2.8") << runc;
  EXPECT_FALSE(runc.contains("available") && runc["available"].contains("1.2")) << runc;
  EXPECT_TRUE(MinimumTable::Parse(built->table.dump()));
}

// An OSV event's version is the whole of its text: "banana\nrunc 9.9.9" made a runc 9.9 line
// with minimum 9.9.9, and an epoch "9:1.2.8" would have failed every 1.2.x. Such a fix is said in
// the ignored lines, not taken and not lost unsaid; semver's pre-release and build parts are
// versions.
TEST(MinimumsBuild, AnOsvVersionIsTheWholeOfItsText) {
  sys::LocalFileSystem fs;
  const json osv =
      json::parse(*fs.ReadFile(kAdvisories + "/runc-GHSA-aaaa-bbbb-cccc.osv.json", 1 << 20));
  // The record's events with the first fix (1.2.8) written as `fixed`.
  const auto with_first_fix = [&osv](const std::string& fixed) {
    json doc = osv;
    for (json& event : doc["affected"][0]["ranges"][0]["events"]) {
      if (event.contains("fixed") && event["fixed"] == "1.2.8") event["fixed"] = fixed;
    }
    return doc.dump();
  };
  struct Case {
    std::string fixed;
    std::string minimum_1_2;  // empty: the fix is said among the ignored, and no 1.2 line
  };
  for (const Case& c : std::vector<Case>{{"banana\nrunc 9.9.9", ""},
                                         {"9:1.2.8", ""},
                                         {"1.2.8 (Linux)", ""},
                                         {"1..2", ""},
                                         {"v1.2.9", "1.2.9"},
                                         {"1.2.9+incompatible", "1.2.9"},
                                         {"1.2.9-beta.1", "1.2.9-beta.1"},
                                         {"1.2.9-rc.2+build.5", "1.2.9-rc.2"}}) {
    auto built =
        BuildMinimums({{"odd.osv.json", with_first_fix(c.fixed)}}, At("2026-09-25T00:00:00Z"));
    ASSERT_TRUE(built) << built.error().message;
    const json& minimums = built->table["components"]["runc"]["minimums"];
    const bool said = std::ranges::any_of(built->ignored, [&c](const std::string& line) {
      return line == "odd.osv.json: runc fixed in \"" + AsOneLine(c.fixed) +
                         "\", not a version cmax can compare";
    });
    if (c.minimum_1_2.empty()) {
      EXPECT_TRUE(said) << c.fixed << ": " << ::testing::PrintToString(built->ignored);
      EXPECT_FALSE(minimums.contains("1.2")) << c.fixed << ": " << minimums;
    } else {
      EXPECT_FALSE(said) << c.fixed;
      EXPECT_EQ(minimums.value("1.2", ""), c.minimum_1_2) << c.fixed << ": " << minimums;
    }
    EXPECT_FALSE(minimums.contains("9.9")) << c.fixed << ": " << minimums;
    EXPECT_EQ(minimums.value("1.3", ""), "1.3.6");
  }
  json bad_start = json::parse(with_first_fix("1.2.8"));
  bad_start["affected"][0]["ranges"][0]["events"][0]["introduced"] = "since forever";
  auto built = BuildMinimums({{"odd.osv.json", bad_start.dump()}}, At("2026-09-25T00:00:00Z"));
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_TRUE(std::ranges::any_of(built->ignored, [](const std::string& line) {
    return line ==
           "odd.osv.json: runc introduced in \"since forever\", not a version: its range "
           "is left out";
  })) << ::testing::PrintToString(built->ignored);
}

// This machine's files, counting what is read.
class CountingFileSystem final : public sys::FileSystem {
 public:
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const override {
    ++reads;
    return local_.ReadFile(path, max_bytes);
  }
  bool Exists(const std::string& path) const override { return local_.Exists(path); }
  bool IsDirectory(const std::string& path) const override { return local_.IsDirectory(path); }
  bool IsRegularFile(const std::string& path) const override { return local_.IsRegularFile(path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) const override {
    return local_.ListDir(path);
  }
  Result<std::string> ReadLink(const std::string& path) const override {
    return local_.ReadLink(path);
  }
  Result<void> WriteFileAtomic(const std::string& path, std::string_view data,
                               mode_t mode) override {
    return local_.WriteFileAtomic(path, data, mode);
  }
  Result<void> WriteOutputFile(const std::string& path, std::string_view data,
                               mode_t mode) override {
    return local_.WriteOutputFile(path, data, mode);
  }
  Result<void> CreateDirs(const std::string& path, mode_t mode) override {
    return local_.CreateDirs(path, mode);
  }
  Result<void> RemoveFile(const std::string& path) override { return local_.RemoveFile(path); }
  mutable size_t reads = 0;

 private:
  sys::LocalFileSystem local_;
};

// A mirror's folder is walked once: a link back to a folder above is not followed (`ln -s . a`
// made it read every file up to 10,000 times), and a FIFO named *.json is passed over instead
// of waited on.
TEST(MinimumsBuild, AFolderIsWalkedOnceAndOnlyItsFilesRead) {
  CountingFileSystem fs;
  testing::TempDir dir;
  const std::string mirror = dir.File("mirror");
  ASSERT_TRUE(fs.CreateDirs(mirror + "/2026", 0755));
  const std::string runc = "runc-GHSA-aaaa-bbbb-cccc.osv.json";
  ASSERT_TRUE(fs.WriteFileAtomic(mirror + "/2026/" + runc,
                                 *fs.ReadFile(kAdvisories + "/" + runc, 1 << 20), 0644));
  ASSERT_EQ(::symlink(".", (mirror + "/again").c_str()), 0);
  ASSERT_EQ(::symlink("..", (mirror + "/2026/up").c_str()), 0);
  ASSERT_EQ(::mkfifo((mirror + "/2026/waiting.json").c_str(), 0644), 0);
  fs.reads = 0;
  auto built = BuildMinimumsFromFiles({mirror}, "", At("2026-09-25T00:00:00Z"), fs);
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_EQ(fs.reads, 1U);  // the one advisory, once
  EXPECT_FALSE(built->used.empty());
}

TEST(MinimumsBuild, BadInputIsAnErrorNamingIt) {
  const WallTime now = At("2026-09-25T00:00:00Z");
  const auto refused = [&](std::vector<AdvisoryDocument> docs, const std::string& says) {
    auto built = BuildMinimums(docs, now);
    ASSERT_FALSE(built) << says;
    EXPECT_NE(built.error().message.find(says), std::string::npos) << built.error().message;
  };
  refused({{"a.json", "not json"}}, "a.json: not JSON: at line 1, column 2: syntax error");
  // Bytes that are not UTF-8 say so (they were "not a JSON object").
  refused({{"u.json", "{\"id\": \"GHSA-\xff\"}"}}, "u.json: not JSON: ");
  refused({{"u.json", "{\"id\": \"GHSA-\xff\"}"}}, "UTF-8");
  refused({{"b.json", "[1, 2]"}}, "b.json: not a JSON object");
  refused({{"c.json", R"({"title": "x"})"}}, "c.json: neither a CSAF document");
  refused({{"d.json", R"({"id": "GHSA-1", "affected": []})"}}, "no advisory names a fixed version");
  // Hostile shapes: every field of the wrong type is passed over, never thrown on.
  refused({{"e.json",
            R"({"document": 1, "vulnerabilities": [{"product_status": {"fixed": [1, null, "x"]}}],
                "product_tree": {"branches": [{"branches": "no", "product": 3}]}})"}},
          "no advisory names a fixed version");
  refused({{"f.json", R"({"id": 5, "affected": [{"package": [], "ranges": {"events": 1}}]})"}},
          "no advisory names a fixed version");
  sys::LocalFileSystem fs;
  auto missing = BuildMinimumsFromFiles({"/nonexistent/x.json"}, "", now, fs);
  EXPECT_FALSE(missing);
  testing::TempDir dir;
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("bad.json"), R"({"schema": "nope"})", 0600));
  auto bad_base = BuildMinimumsFromFiles({kAdvisories}, dir.File("bad.json"), now, fs);
  ASSERT_FALSE(bad_base);
  EXPECT_NE(bad_base.error().message.find("bad.json"), std::string::npos);
  // A folder with no advisory in it says so, naming it (not "no advisory file given").
  ASSERT_TRUE(fs.CreateDirs(dir.File("empty/2026"), 0755));
  auto empty = BuildMinimumsFromFiles({dir.File("empty")}, "", now, fs);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message,
            "no advisory file (*.json) in " + dir.File("empty") + " or any folder below it");
  EXPECT_EQ(BuildMinimumsFromFiles({}, "", now, fs).error().message, "no advisory file given");
}

}  // namespace
}  // namespace cmax::audit
