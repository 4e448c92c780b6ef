// The published JSON Schemas (docs/schema/) hold for what cmax writes: the report of a real
// audit of this host, of a Kubernetes audit against the stand-in API server, and every evidence
// fixture. Validated by Debian's python3-jsonschema (draft 2020-12), the validator a user of
// the schemas would reach for; a document broken on purpose must fail, or the check proves
// nothing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/fake_kube_api.hpp"
#include "support/free_port.hpp"
#include "support/golden.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kSchemas = std::string(CMAX_TEST_DATA) + "/../../docs/schema/";
const std::string kReport = kSchemas + "cmax.report.v1.schema.json";
const std::string kEvidence = kSchemas + "cmax.audit-evidence.v1.schema.json";
const std::string kRating = kSchemas + "cmax.rating.v1.schema.json";
const std::string kComparison = kSchemas + "cmax.comparison.v1.schema.json";
const std::string kRanking = kSchemas + "cmax.ranking.v1.schema.json";
const std::string kNcclAnalysis = kSchemas + "cmax.nccl-analysis.v1.schema.json";
const std::string kNcclSweep = kSchemas + "cmax.nccl-sweep.v1.schema.json";
const std::string kNcclBadNodes = kSchemas + "cmax.nccl-bad-nodes.v1.schema.json";
const std::string kNcclRecipe = kSchemas + "cmax.nccl-recipe.v1.schema.json";
const std::string kTrainLogs = kSchemas + "cmax.train-logs.v1.schema.json";
const std::string kTrainTrace = kSchemas + "cmax.train-trace.v1.schema.json";

class SchemaTest : public ::testing::Test {
 protected:
  // Empty when `document` is valid against `schema`, else the validator's first complaint.
  std::string Problems(const std::string& schema, const json& document) {
    const std::string path = dir_.File(fmt::format("doc{}.json", ++documents_));
    EXPECT_TRUE(fs_.WriteFileAtomic(path, document.dump(), 0600));
    const char* kValidate =
        "import json, sys\n"
        "from jsonschema import Draft202012Validator\n"
        "schema = json.load(open(sys.argv[1]))\n"
        "Draft202012Validator.check_schema(schema)\n"
        "errors = sorted(Draft202012Validator(schema).iter_errors(json.load(open(sys.argv[2]))),\n"
        "                key=lambda e: list(e.path))\n"
        "for e in errors[:3]: print('/'.join(map(str, e.path)), e.message)\n"
        "sys.exit(1 if errors else 0)\n";
    // Debian's interpreter and validator (python3-jsonschema), not whichever is first on PATH.
    auto r =
        runner_.Run({.argv = {"/usr/bin/python3", "-c", kValidate, schema, path}, .timeout = 60s});
    if (!r) return "could not run the validator: " + r.error().message;
    if (r->exit_code == 0) return "";
    return r->stdout_text + r->stderr_text;
  }
  json Cmax(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    const auto r =
        testing::RunCmaxWithoutMachineKubeconfig(runner_, dir_.Path(), args, std::move(env));
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 3) << r.stderr_text;
    return json::parse(r.stdout_text, nullptr, false);
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  int documents_ = 0;
};

// Every nccl-tests variant of the golden folder analysed at once (a kink, cut-short runs,
// curves of unknown nodes), against a platform.
TEST_F(SchemaTest, AnNcclAnalysis) {
  std::vector<std::string> args = {"nccl", "analyze", "--json", "--platform", "h100-nvlink"};
  for (const std::string& stem : testing::GoldenStems("nccl", ".txt")) {
    args.push_back(std::string(CMAX_TEST_DATA) + "/nccl/" + stem + ".txt");
  }
  const json analysis = Cmax(args);
  ASSERT_TRUE(analysis.is_object());
  ASSERT_FALSE(analysis["dips"].empty());
  EXPECT_EQ(Problems(kNcclAnalysis, analysis), "");
  json bad = analysis;
  bad["dips"][0]["kind"] = "wobble";
  EXPECT_NE(Problems(kNcclAnalysis, bad), "");
}

// `cmax nccl sweep` and `find-bad-node` under the real mpirun on this machine ("localhost" and
// "127.0.0.1" are two hosts to it), with stand-in nccl-tests binaries (shell scripts, named as
// such): one prints a table, one fails as nccl-tests does.
TEST_F(SchemaTest, AnNcclSweepAndABadNodeSearch) {
  const std::string tests = dir_.File("nccl-tests");
  ASSERT_TRUE(fs_.CreateDirs(tests, 0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(tests + "/all_reduce_perf",
                                  "#!/bin/sh\n# A stand-in for nccl-tests' all_reduce_perf.\ncat " +
                                      std::string(CMAX_TEST_DATA) + "/nccl/modern_all_reduce.txt\n",
                                  0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(
      tests + "/alltoall_perf",
      "#!/bin/sh\n# A stand-in for nccl-tests' alltoall_perf, failing.\necho 'Test NCCL failure "
      "common.cu:1' >&2\nexit 3\n",
      0755));
  const std::vector<std::string> where = {"--hosts",         "localhost,127.0.0.1",
                                          "--nccl-tests",    tests,
                                          "--gpus-per-node", "1",
                                          "--step-timeout",  "60"};
  std::vector<std::string> args = {"nccl", "sweep", "--json", "--out", dir_.File("sweep")};
  args.insert(args.end(), where.begin(), where.end());
  const json sweep = Cmax(args);
  ASSERT_TRUE(sweep.is_object());
  ASSERT_EQ(sweep["steps"].size(), 4U) << sweep.dump();
  EXPECT_TRUE(sweep["steps"][2]["problem"].is_string()) << sweep["steps"][2].dump();
  EXPECT_EQ(Problems(kNcclSweep, sweep), "");
  EXPECT_EQ(Problems(kNcclAnalysis, sweep["analysis"]), "");
  json bad = sweep;
  bad["steps"][0]["variant"] = "fast";
  EXPECT_NE(Problems(kNcclSweep, bad), "");

  args = {"nccl", "find-bad-node", "--json", "--out", dir_.File("find")};
  args.insert(args.end(), where.begin(), where.end());
  const json search = Cmax(args);
  ASSERT_TRUE(search.is_object());
  ASSERT_FALSE(search["measurements"].empty()) << search.dump();
  EXPECT_EQ(Problems(kNcclBadNodes, search), "");
  bad = search;
  bad["measurements"][0]["busbw_gbs"] = "fast";
  EXPECT_NE(Problems(kNcclBadNodes, bad), "");
}

// `cmax nccl recipe` on this machine, with a tuning override and a selection of no device in
// its environment.
TEST_F(SchemaTest, AnNcclRecipeVerdict) {
  const json verdict = Cmax({"nccl", "recipe", "--json", "--recipe", "azure-nd-v5"},
                            {"NCCL_ALGO=Ring", "NCCL_SOCKET_IFNAME==no-such-interface"});
  ASSERT_TRUE(verdict.is_object());
  ASSERT_GE(verdict["items"].size(), 3U) << verdict.dump();
  EXPECT_EQ(verdict["items"][0]["status"], "defeats");
  EXPECT_EQ(verdict["environment"]["NCCL_ALGO"], "Ring");
  EXPECT_EQ(Problems(kNcclRecipe, verdict), "");
  json bad = verdict;
  bad["items"][0]["status"] = "fine";
  EXPECT_NE(Problems(kNcclRecipe, bad), "");
}

// `cmax train log` over every TorchTitan log of the golden folder: steady, failed, hung, NaN,
// warm-up only, resumed.
TEST_F(SchemaTest, TrainingLogFigures) {
  std::vector<std::string> args = {"train",       "log",
                                   "--json",      "--exit-zero",
                                   "--reference", "llama3_8b-h100-8gpu-fsdp-ac-selective"};
  for (const char* stem :
       {"run_train_rank0_coloured", "older_wps_release", "fp8_mfu_not_available",
        "oom_on_rank3_torchrun_report", "nccl_watchdog_hang_srun", "loss_becomes_nan",
        "warmup_only_then_killed", "resumed_from_checkpoint"}) {
    args.push_back(std::string(CMAX_TEST_DATA) + "/train/" + stem + ".log");
  }
  const json figures = Cmax(args);
  ASSERT_TRUE(figures.is_object());
  ASSERT_EQ(figures["files"].size(), 8U) << figures.dump();
  EXPECT_EQ(Problems(kTrainLogs, figures), "");
  EXPECT_TRUE(figures["files"][0]["reference"].is_object()) << figures["files"][0].dump();
  json bad = figures;
  bad["files"][3]["first_error"]["kind"] = "bad luck";
  EXPECT_NE(Problems(kTrainLogs, bad), "");
}

// Every golden trace at once (ranks by order where they name none), one not a trace among them.
TEST_F(SchemaTest, ProfilerTraceFigures) {
  std::vector<std::string> args = {"train", "trace", "--json", "--exit-zero"};
  for (const char* stem :
       {"a100_ddp_nccl_2_17_rank0", "h100_moe_all_to_all_exposed", "cut_off_mid_event"}) {
    args.push_back(std::string(CMAX_TEST_DATA) + "/train/trace/" + stem + ".trace.json");
  }
  args.push_back(std::string(CMAX_TEST_DATA) + "/train/run_train_rank0_coloured.log");
  const json figures = Cmax(args);
  ASSERT_TRUE(figures.is_object());
  ASSERT_EQ(figures["ranks"].size(), 2U) << figures.dump();  // rank 0 twice: one left out
  ASSERT_EQ(figures["unreadable"].size(), 1U) << figures.dump();
  EXPECT_EQ(Problems(kTrainTrace, figures), "");
  json bad = figures;
  bad["collectives"][0]["kind"] = "gossip";
  EXPECT_NE(Problems(kTrainTrace, bad), "");
}

TEST_F(SchemaTest, ALocalAuditsReportAndEvidence) {
  const json report = Cmax({"audit", "--json"});
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(Problems(kReport, report), "");
  EXPECT_EQ(Problems(kEvidence, report["evidence"]), "");
  // With a side effect taken (one connection to a loopback port nothing listens on): its log
  // and evidence too.
  const json taken = Cmax({"audit", "--json", "--allow-side-effects", "--egress-target",
                           "127.0.0.1:" + std::to_string(testing::FreePort())});
  ASSERT_TRUE(taken.contains("evidence") && taken["evidence"].contains("audit.side_effects"))
      << taken.dump();
  EXPECT_EQ(Problems(kEvidence, taken["evidence"]), "");
  // cmax run's report too: the same envelope.
  const json run = Cmax({"run", "--json", "--no-html"});
  EXPECT_EQ(Problems(kReport, run), "");
  EXPECT_EQ(Problems(kEvidence, run["evidence"]), "") << "the audit phase's evidence";
  // Its rating, and `cmax rate`'s with an attestation.
  EXPECT_EQ(Problems(kRating, run["evidence"]["rating"]), "");
  const json rated = Cmax({"rate", "--json", "--attestation",
                           std::string(CMAX_TEST_DATA) + "/../../data/attestation.example.yaml"});
  ASSERT_TRUE(rated.is_object());
  EXPECT_EQ(Problems(kRating, rated), "");
  json bad_rating = rated;
  bad_rating["items"][0]["coverage"] = 1.5;
  EXPECT_NE(Problems(kRating, bad_rating), "");
  // What moved between the audit and the run: a comparison.
  const json compared = Cmax({"compare", report["run"]["id"].dump(), "latest", "--json"});
  ASSERT_TRUE(compared.is_object());
  EXPECT_EQ(Problems(kComparison, compared), "");

  // Providers ranked: two runs recorded for each of three providers' names.
  for (const char* provider : {"Alpha", "Beta", "Gamma"}) {
    ASSERT_TRUE(Cmax({"--provider", provider, "audit", "--json"}).is_object());
  }
  const json ranked = Cmax({"rate", "--providers", "--json"});
  ASSERT_TRUE(ranked.is_object());
  EXPECT_EQ(Problems(kRanking, ranked), "");
  ASSERT_EQ(ranked["providers"].size(), 3U);
  for (const json& provider : ranked["providers"]) {
    EXPECT_EQ(Problems(kRating, provider["rating"]), "") << provider["provider"];
  }
  json bad_ranking = ranked;
  bad_ranking["providers"][0]["rank"] = 0;
  EXPECT_NE(Problems(kRanking, bad_ranking), "");

  // Broken on purpose: each must be caught.
  json bad = report;
  bad["findings"][0]["status"] = "MAYBE";
  EXPECT_NE(Problems(kReport, bad), "");
  json bad_evidence = report["evidence"];
  bad_evidence["gpu.driver.version"] = 580;
  EXPECT_NE(Problems(kEvidence, bad_evidence).find("gpu.driver.version"), std::string::npos);
  bad_evidence = report["evidence"];
  bad_evidence["audit.node.gpu1"] = {{"node", "gpu1"},
                                     {"evidence", {{"host.limits.nofile", true}}}};
  EXPECT_NE(Problems(kEvidence, bad_evidence), "") << "a node's evidence is held to the schema";
}

// The schema leaves room for keys a later cmax adds, so it cannot itself notice a key this one
// writes but never declared: this does, for every key of a real audit.
TEST_F(SchemaTest, EveryEvidenceKeyWrittenIsDeclared) {
  auto text = fs_.ReadFile(kEvidence, 1 << 20);
  ASSERT_TRUE(text);
  const json schema = json::parse(*text);
  json evidence = Cmax({"audit", "--json", "--allow-side-effects", "--egress-target",
                        "127.0.0.1:" + std::to_string(testing::FreePort())})["evidence"];
  for (const std::string& stem : testing::GoldenStems("audit_fixtures", ".evidence.json")) {
    auto fixture = fs_.ReadFile(
        fmt::format("{}/audit_fixtures/{}.evidence.json", CMAX_TEST_DATA, stem), 1 << 20);
    ASSERT_TRUE(fixture) << stem;
    evidence.update(json::parse(*fixture)["evidence"]);
  }
  for (const auto& [key, value] : evidence.items()) {
    if (key.starts_with("audit.node.")) continue;  // patternProperties
    EXPECT_TRUE(schema["properties"].contains(key)) << key << " is written but not declared";
  }
}

TEST_F(SchemaTest, AKubernetesAuditsReportAndEvidence) {
  testing::FakeKubeApi api;
  api.AddNode("gpu1", {{"nvidia.com/gpu.present", "true"},
                       {"nvidia.com/cuda.driver-version.full", "580.159.03"}});
  api.configz["gpu1"] = {{"kubeletconfig", {{"cpuManagerPolicy", "static"}}}};
  ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("token"), "token-1", 0600));
  const json report = Cmax({"audit", "--kubernetes", "--yes", "--json", "--kube-api", api.Url(),
                            "--kube-token-file", dir_.File("token")});
  ASSERT_TRUE(report.is_object());
  ASSERT_TRUE(report["evidence"].contains("audit.node.gpu1"));
  EXPECT_EQ(Problems(kReport, report), "");
  EXPECT_EQ(Problems(kEvidence, report["evidence"]), "");
}

TEST_F(SchemaTest, EveryEvidenceFixture) {
  for (const std::string& stem : testing::GoldenStems("audit_fixtures", ".evidence.json")) {
    auto text = fs_.ReadFile(
        fmt::format("{}/audit_fixtures/{}.evidence.json", CMAX_TEST_DATA, stem), 1 << 20);
    ASSERT_TRUE(text) << stem;
    EXPECT_EQ(Problems(kEvidence, json::parse(*text)["evidence"]), "") << stem;
  }
}

}  // namespace
}  // namespace cmax
