// The audit catalogue: the built-in one is whole (every check of the public audit, once, in the
// profile it has there), a broken catalogue is refused with the check named, the listing and
// the README's table come from the same data.
#include "audit/catalogue.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "audit/catalogue_views.hpp"
#include "audit/grading.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

TEST(AuditCatalogue, TheBuiltinOneCoversThePublicAuditOnce) {
  const AuditCatalogue& catalogue = AuditCatalogue::Builtin();
  std::set<int> numbers;
  std::map<std::string, int> public_per_profile;
  for (const CheckSpec& check : catalogue.Checks()) {
    if (!check.public_check) continue;
    EXPECT_TRUE(numbers.insert(check.public_check->number).second) << check.id;
    ++public_per_profile[check.profile];
  }
  EXPECT_EQ(numbers.size(), 61U);
  EXPECT_EQ(*numbers.begin(), 1);
  EXPECT_EQ(*numbers.rbegin(), 61);
  // The public audit's profiles and how many of its checks each holds (its union of variants).
  const std::map<std::string, int> want = {
      {"versions", 10},     {"isolation", 10}, {"hardware", 8}, {"software", 9}, {"containers", 5},
      {"orchestration", 4}, {"networking", 5}, {"storage", 1},  {"health", 4},   {"access", 5}};
  EXPECT_EQ(public_per_profile, want);
  // What it collects or names but never grades, graded here.
  for (const char* own :
       {"health.xid-7d", "hardware.idle-gpu-temperature", "hardware.idle-gpu-power",
        "health.dcgm-diag", "orchestration.slurm-pmix", "orchestration.slurm-prolog-duration",
        "networking.ib-pkeys", "networking.ib-sm-key", "networking.ib-sa-key", "software.mofed",
        "software.hpcx", "hardware.cpu-governor", "software.resource-limits",
        "storage.default-storageclass", "networking.outbound-internet",
        "networking.nvshmem-readiness"}) {
    const auto it = std::find_if(catalogue.Checks().begin(), catalogue.Checks().end(),
                                 [&](const CheckSpec& c) { return c.id == own; });
    ASSERT_NE(it, catalogue.Checks().end()) << own;
    EXPECT_FALSE(it->public_check) << own;
  }
}

TEST(AuditCatalogue, SideEffectsAreDeclared) {
  // The read-only default rests on this: every check that changes something or reaches outside
  // says so, and nothing else does.
  std::set<std::string> with;
  for (const CheckSpec& check : AuditCatalogue::Builtin().Checks()) {
    if (!check.side_effect.empty()) with.insert(check.id);
  }
  // storage.rwx is read from the API (classes and Bound volumes), not by creating a claim.
  // access.ssh-between-nodes logs in to another node: a login is not read-only.
  // hardware.vboost asks sudo's policy (sudo -l runs nothing) instead of setting vboost.
  const std::set<std::string> want = {"containers.enroot-import", "health.dcgm-diag",
                                      "networking.outbound-internet", "access.ssh-between-nodes"};
  EXPECT_EQ(with, want);
}

TEST(AuditCatalogue, SelectsAProfileOrSecurity) {
  const AuditCatalogue& catalogue = AuditCatalogue::Builtin();
  auto security = catalogue.Select("security");
  ASSERT_TRUE(security);
  EXPECT_EQ(security->size(), 20U);
  for (const CheckSpec* check : *security) {
    EXPECT_TRUE(check->profile == "versions" || check->profile == "isolation") << check->id;
  }
  auto storage = catalogue.Select("storage");
  ASSERT_TRUE(storage);
  ASSERT_EQ(storage->size(), 2U);
  EXPECT_EQ(storage->front()->id, "storage.rwx");
  EXPECT_EQ(catalogue.Select("")->size(), catalogue.Checks().size());
  auto unknown = catalogue.Select("secuirty");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message.find("known: security, versions"), std::string::npos);
}

// One good check, changed in one way per row: each change is refused, naming what is wrong.
TEST(AuditCatalogue, RefusesABrokenCatalogue) {
  const json good_check = {{"id", "access.sudo"},
                           {"title", "Users have sudo"},
                           {"profile", "access"},
                           {"targets", {"slurm", "vm"}},
                           {"severity", "CONFIG"},
                           {"evidence", {"access.sudo"}},
                           {"predicate", "sudo -n true succeeds"},
                           {"remediation", "Give sudo."},
                           {"reproduce", "sudo -n true"},
                           {"links", {"https://example.org/sudo"}},
                           {"public",
                            {{"number", 52},
                             {"key", "access.sudoAvailable"},
                             {"relation", "same"},
                             {"difference", "the same question"}}}};
  const json good = {{"schema", "cmax.audit-catalogue/v1"},
                     {"profiles", {{{"name", "access"}, {"title", "Access"}}}},
                     {"checks", {good_check}}};
  ASSERT_TRUE(AuditCatalogue::Parse(good.dump()))
      << AuditCatalogue::Parse(good.dump()).error().message;
  struct Row {
    std::string change;
    json document;
    std::string says;
  };
  const auto with_check = [&](const std::function<void(json&)>& change) {
    json doc = good;
    change(doc["checks"][0]);
    return doc;
  };
  std::vector<Row> rows = {
      {"schema",
       [&] {
         json d = good;
         d["schema"] = "cmax.audit-catalogue/v2";
         return d;
       }(),
       "schema"},
      {"unknown root key",
       [&] {
         json d = good;
         d["chekcs"] = 1;
         return d;
       }(),
       "checks"},
      {"no profiles",
       [&] {
         json d = good;
         d["profiles"] = json::array();
         return d;
       }(),
       "profiles"},
      {"profile named security",
       [&] {
         json d = good;
         d["profiles"].push_back({{"name", "security"}, {"title", "x"}});
         return d;
       }(),
       "'security' is taken"},
      {"unknown check key", with_check([](json& c) { c["severty"] = "CONFIG"; }),
       "did you mean 'severity'"},
      {"no title", with_check([](json& c) { c.erase("title"); }), "\"title\""},
      {"empty reproduce", with_check([](json& c) { c["reproduce"] = ""; }), "\"reproduce\""},
      {"unknown profile", with_check([](json& c) { c["profile"] = "acess"; }), "profile 'acess'"},
      {"id outside its profile", with_check([](json& c) { c["id"] = "health.sudo"; }),
       "'access.NAME'"},
      {"unknown severity", with_check([](json& c) { c["severity"] = "HIGH"; }), "severity 'HIGH'"},
      {"unknown target", with_check([](json& c) {
         c["targets"] = {"slurm", "k8s"};
       }),
       "target 'k8s'"},
      {"target twice", with_check([](json& c) {
         c["targets"] = {"vm", "vm"};
       }),
       "twice"},
      {"no targets", with_check([](json& c) { c["targets"] = json::array(); }), "\"targets\""},
      {"no evidence", with_check([](json& c) { c.erase("evidence"); }), "\"evidence\""},
      {"a link that is not a URL", with_check([](json& c) { c["links"] = {"see the docs"}; }),
       "not an http(s) URL"},
      {"public number out of range", with_check([](json& c) { c["public"]["number"] = 62; }),
       "[1, 61]"},
      {"public without key", with_check([](json& c) { c["public"].erase("key"); }), "\"key\""},
      {"a check that is not an object", with_check([](json& c) { c = "access.sudo"; }),
       "not an object"},
      {"duplicate id",
       [&] {
         json d = good;
         d["checks"].push_back(good_check);
         d["checks"][1]["public"]["number"] = 1;
         return d;
       }(),
       "id is taken"},
      {"duplicate public number",
       [&] {
         json d = good;
         json c = good_check;
         c["id"] = "access.sudo2";
         d["checks"].push_back(c);
         return d;
       }(),
       "public number 52 is taken"},
  };
  for (const Row& row : rows) {
    auto parsed = AuditCatalogue::Parse(row.document.dump());
    ASSERT_FALSE(parsed) << row.change;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << row.change;
    EXPECT_NE(parsed.error().message.find(row.says), std::string::npos)
        << row.change << ": " << parsed.error().message;
  }
  EXPECT_FALSE(AuditCatalogue::Parse("not json"));
  EXPECT_FALSE(AuditCatalogue::Parse("[]"));
  // Whoever edits data/audit_catalogue.json is told where it stops being JSON.
  auto broken =
      AuditCatalogue::Parse("{\n  \"schema\": \"cmax.audit-catalogue/v1\",\n  \"checks\": [,]\n}");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("not JSON: at line 3"), std::string::npos)
      << broken.error().message;
}

TEST(ShowCatalogue, ListsOneCheckPerLineUnderItsProfile) {
  const AuditCatalogue& catalogue = AuditCatalogue::Builtin();
  auto text = ShowCatalogue(catalogue, {.profile = "security"});
  ASSERT_TRUE(text) << text.error().message;
  std::istringstream lines(*text);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  ASSERT_EQ(all.size(), 2U + 20U + 1U);  // two profile lines, twenty checks, the count
  EXPECT_EQ(all[0].rfind("versions (10 checks): ", 0), 0U) << all[0];
  EXPECT_EQ(all[1].rfind("  versions.nvidia-driver ", 0), 0U) << all[1];
  EXPECT_NE(all[1].find("VERSION"), std::string::npos);
  EXPECT_EQ(all[11].rfind("isolation (10 checks): ", 0), 0U) << all[11];
  EXPECT_EQ(all.back(), "20 checks: 20 of the public cmax audit, 0 of cmax's own");
  // Targets when a check does not apply everywhere; side effects marked.
  EXPECT_NE(text->find("kubernetes-nodes-proxy"), std::string::npos);
  EXPECT_NE(text->find("[kubernetes]"), std::string::npos);
  auto hardware = ShowCatalogue(catalogue, {.profile = "hardware", .verbose = true});
  ASSERT_TRUE(hardware);
  auto health = ShowCatalogue(catalogue, {.profile = "health", .verbose = true});
  ASSERT_TRUE(health);
  EXPECT_NE(health->find("(side effect)"), std::string::npos);
  EXPECT_NE(health->find("side effect: runs an active GPU diagnostic"), std::string::npos);
  EXPECT_NE(hardware->find("reproduce: ldconfig -p | grep libgdrapi"), std::string::npos);
  EXPECT_NE(hardware->find("public audit: #16 gpus.gdrcopy.installed"), std::string::npos);
  EXPECT_FALSE(ShowCatalogue(catalogue, {.profile = "nope"}));
  EXPECT_FALSE(ShowCatalogue(catalogue, {.format = "yaml"}));
  EXPECT_FALSE(ShowCatalogue(catalogue, {.profile = "storage", .format = "markdown"}));
}

TEST(ShowCatalogue, JsonIsACatalogueAgain) {
  const AuditCatalogue& catalogue = AuditCatalogue::Builtin();
  for (const std::string profile : {"", "security", "access"}) {
    auto text = ShowCatalogue(catalogue, {.profile = profile, .format = "json"});
    ASSERT_TRUE(text);
    auto again = AuditCatalogue::Parse(*text);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->Checks().size(), catalogue.Select(profile)->size());
    auto relisted = ShowCatalogue(*again, {.format = "json"});
    EXPECT_EQ(*relisted, *text) << profile;
  }
}

// The README's check table is the catalogue's: a check added, removed or retitled without
// regenerating it fails here (scripts/audit_table.sh --update rewrites it).
TEST(ShowCatalogue, TheReadmeTableIsTheCatalogues) {
  std::ifstream file(std::string(CMAX_TEST_DATA) + "/../../README.md");
  ASSERT_TRUE(file) << "README.md not found";
  std::stringstream readme;
  readme << file.rdbuf();
  const std::string text = readme.str();
  const std::string begin = "<!-- audit-checks:begin -->\n";
  const std::string end = "<!-- audit-checks:end -->";
  const size_t from = text.find(begin);
  const size_t to = text.find(end);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const std::string block = text.substr(from + begin.size(), to - from - begin.size());
  EXPECT_EQ(block, CatalogueMarkdown(AuditCatalogue::Builtin()))
      << "README.md's audit check table is stale: run scripts/audit_table.sh --update";
}

TEST(ShowCatalogue, TheCoverageDocIsTheCatalogues) {
  std::ifstream file(std::string(CMAX_TEST_DATA) + "/../../docs/AUDIT_COVERAGE.md");
  ASSERT_TRUE(file) << "docs/AUDIT_COVERAGE.md not found";
  std::stringstream doc;
  doc << file.rdbuf();
  EXPECT_EQ(doc.str(), CoverageMarkdown(AuditCatalogue::Builtin()))
      << "docs/AUDIT_COVERAGE.md is stale: run scripts/audit_table.sh --update";
}

// Every public check says how cmax covers it; one cmax cannot grade yet says "not yet".
TEST(AuditCatalogue, EveryPublicCheckSaysHowItIsCovered) {
  const std::vector<std::string> rules = GradableChecks();
  size_t covered = 0;
  for (const CheckSpec& check : AuditCatalogue::Builtin().Checks()) {
    if (!check.public_check) continue;
    ++covered;
    EXPECT_FALSE(check.public_check->difference.empty()) << check.id;
    const bool graded = std::ranges::find(rules, check.id) != rules.end();
    // A check with a side effect is graded when --allow-side-effects takes it.
    if (!graded) {
      EXPECT_EQ(check.public_check->relation, "not yet") << check.id;
    }
  }
  EXPECT_EQ(covered, 61U);
  // A relation outside the four is refused.
  const std::string bad = R"({"schema": "cmax.audit-catalogue/v1",
    "profiles": [{"name": "versions", "title": "V"}],
    "checks": [{"id": "versions.x", "title": "x", "profile": "versions",
      "targets": ["slurm"], "severity": "VERSION", "evidence": ["a"], "predicate": "p",
      "remediation": "r", "reproduce": "c", "links": ["https://x"],
      "public": {"number": 1, "key": "k", "relation": "better", "difference": "d"}}]})";
  auto parsed = AuditCatalogue::Parse(bad);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("relation"), std::string::npos) << parsed.error().message;
}

}  // namespace
}  // namespace cmax::audit
