// The audit's side effects (--allow-side-effects): nothing happens unless allowed; the GPU
// diagnostic runs only on a node whose GPUs are idle (or with --force) and only when the node's
// deadline leaves time; one connection to the named host; each one taken is logged with its undo.
// The programs are answered by FakeProcessRunner (a stand-in) and the connection by a lambda; the
// real connection is tested in tests/integration/audit_side_effects_test.cpp.
#include "audit/side_effects.hpp"

#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

#include "support/fake_process_runner.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string Fixture(const std::string& name) {
  sys::LocalFileSystem fs;
  auto text =
      fs.ReadFile(std::string(CMAX_TEST_DATA) + "/dcgm_diag/" + name, sys::kDefaultReadLimit);
  EXPECT_TRUE(text) << name;
  return text ? *text : "";
}

TEST(ParseEgressTarget, TakesHostAndPortAndRefusesTheRest) {
  const auto ok = [](const char* text, const char* host, uint16_t port) {
    const auto t = ParseEgressTarget(text);
    ASSERT_TRUE(t) << text << ": " << t.error().message;
    EXPECT_EQ(t->host, host) << text;
    EXPECT_EQ(t->port, port) << text;
  };
  ok("example.com", "example.com", 443);
  ok("example.com:80", "example.com", 80);
  ok("192.0.2.7:8443", "192.0.2.7", 8443);
  ok("[2001:db8::1]:443", "2001:db8::1", 443);
  ok("[2001:db8::1]", "2001:db8::1", 443);
  for (const char* bad : {"", ":443", "example.com:", "example.com:0", "example.com:65536",
                          "example.com:http", "2001:db8::1", "[2001:db8::1", "[::1]x", "a b",
                          "http://example.com", "user@example.com", "exa\x01mple"}) {
    EXPECT_FALSE(ParseEgressTarget(bad)) << bad;
  }
}

TEST(ParseDcgmDiag, ReadsEachTestsOutcomeInDcgm3And4Shapes) {
  const auto pass = ParseDcgmDiag(Fixture("dcgm4-level1-pass.json"));
  ASSERT_TRUE(pass) << pass.error().message;
  EXPECT_EQ((*pass)["tests"], 3);
  EXPECT_EQ((*pass)["passed"], 2);
  EXPECT_EQ((*pass)["skipped"], 1);
  EXPECT_TRUE((*pass)["failed"].empty());
  EXPECT_EQ((*pass)["version"], "4.2.3");

  const auto fail = ParseDcgmDiag(Fixture("dcgm4-level1-fail.json"));
  ASSERT_TRUE(fail) << fail.error().message;
  EXPECT_EQ((*fail)["failed"],
            json::array({"memory: GPU 3: Pending page retirements together with a DBE were "
                         "detected on GPU 3."}));
  ASSERT_EQ((*fail)["warned"].size(), 1U);
  EXPECT_TRUE((*fail)["warned"][0].get<std::string>().starts_with(
      "software: GPU 0: Persistence mode for GPU 0 is disabled"));

  const auto old = ParseDcgmDiag(Fixture("dcgm3-level1-fail.json"));
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ((*old)["tests"], 8);
  EXPECT_EQ((*old)["passed"], 6);
  EXPECT_EQ((*old)["version"], "3.3.5");
  EXPECT_EQ((*old)["failed"],
            json::array({"Page Retirement/Row Remap: GPU 5: GPU 5 had uncorrectable memory "
                         "errors and row remapping failed."}));

  const auto refused = ParseDcgmDiag(Fixture("dcgm4-runtime-error.json"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("A GPU is in use"), std::string::npos);
  for (const char* bad : {"", "Error: unable to connect to host engine", "[]", "{}",
                          R"({"DCGM Diagnostic": {"test_categories": 3}})",
                          R"({"DCGM Diagnostic": {"test_categories": []}})",
                          R"({"DCGM Diagnostic": {"test_categories": [{"tests": [7, null]}]}})"}) {
    EXPECT_FALSE(ParseDcgmDiag(bad)) << bad;
  }
}

// Options for every check that takes a side effect.
SideEffectOptions Every(SideEffectOptions options) {
  options.checks = {"health.dcgm-diag", "networking.outbound-internet", "containers.enroot-import"};
  return options;
}

// A GPU node as the read-only collectors left it: a driver, dcgmi on PATH, NVML's idleness.
struct Node {
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;
  AuditEvidence evidence;
  int connections = 0;
  Result<void> answer;
  std::vector<std::string> removed;
  // The folder sys::MakeTempDir would make (its name a stand-in for mkdtemp's).
  Result<std::string> scratch_dir = std::string("/tmp/cmax-audit-enroot-Ab12Cd");
  WallTime now = *ParseIso8601("2026-12-02T12:00:00Z");

  explicit Node(std::vector<json> idle = {true, true}) {
    fs.AddFile("/usr/bin/dcgmi", "");
    runner.AnswerStdout("dcgmi diag", Fixture("dcgm4-level1-fail.json"), 226);
    evidence["gpu.driver.version"] = "580.159.03";
    json gpus = json::array();
    for (size_t i = 0; i < idle.size(); ++i) gpus.push_back({{"gpu", i}, {"idle", idle[i]}});
    evidence["gpu.idle.temperature_c"] = gpus;
  }
  SideEffectIo Io() {
    return {.fs = &fs,
            .runner = &runner,
            .path = "/usr/bin",
            .timeout = 3s,
            .connect =
                [this](const std::string&, uint16_t, Duration) {
                  ++connections;
                  return answer;
                },
            .now = [this] { return now; },
            .make_scratch_dir = [this] { return scratch_dir; },
            .remove_file = [this](const std::string& path) -> Result<void> {
              removed.push_back(path);
              return {};
            },
            .remove_dir = [this](const std::string& dir) -> Result<void> {
              removed.push_back(dir + "/");
              return {};
            }};
  }
};

TEST(TakeSideEffects, NothingHappensUnlessAllowed) {
  Node node;
  TakeSideEffects(Every({.allowed = false, .force = true, .egress_target = "example.com"}),
                  node.Io(), node.evidence);
  EXPECT_TRUE(node.runner.calls.empty());
  EXPECT_EQ(node.connections, 0);
  EXPECT_FALSE(node.evidence.contains("audit.side_effects"));
  EXPECT_FALSE(node.evidence.contains("health.dcgm.diag_r1"));
  EXPECT_FALSE(node.evidence.contains("network.egress.target"));
  // Allowed, but the user has pressed Ctrl-C: none is started.
  SideEffectIo io = node.Io();
  io.interrupted = [] { return true; };
  TakeSideEffects(Every({.allowed = true, .egress_target = "example.com"}), io, node.evidence);
  EXPECT_TRUE(node.runner.calls.empty());
  EXPECT_EQ(node.connections, 0);
  EXPECT_FALSE(node.evidence.contains("audit.side_effects"));
}

TEST(TakeSideEffects, RunsTheDiagnosticOnIdleGpusAndLogsIt) {
  Node node;
  TakeSideEffects(Every({.allowed = true}), node.Io(), node.evidence);
  ASSERT_EQ(node.runner.calls.size(), 1U);
  EXPECT_EQ(node.runner.calls[0].argv,
            (std::vector<std::string>{"/usr/bin/dcgmi", "diag", "-r", "1", "-j"}));
  EXPECT_EQ(node.runner.calls[0].timeout, 120s);
  const json& diag = node.evidence.at("health.dcgm.diag_r1");
  EXPECT_EQ(diag["ran"], true);
  EXPECT_EQ(diag["failed"].size(), 1U);  // read although dcgmi exited non-zero
  const json& log = node.evidence.at("audit.side_effects");
  ASSERT_EQ(log.size(), 1U);
  EXPECT_EQ(log[0]["check"], "health.dcgm-diag");
  EXPECT_FALSE(log[0]["undo"].get<std::string>().empty());
  // No target named: no connection, and the check knows why.
  EXPECT_EQ(node.connections, 0);
  EXPECT_TRUE(node.evidence.at("network.egress.target").is_null());
}

TEST(TakeSideEffects, RefusesABusyNodeUnlessForced) {
  for (const std::vector<json>& idle :
       {std::vector<json>{true, false}, std::vector<json>{true, nullptr}}) {
    Node busy(idle);
    TakeSideEffects(Every({.allowed = true}), busy.Io(), busy.evidence);
    EXPECT_TRUE(busy.runner.calls.empty());
    const json& diag = busy.evidence.at("health.dcgm.diag_r1");
    EXPECT_EQ(diag["ran"], false);
    EXPECT_NE(diag["reason"].get<std::string>().find("1 of 2 GPU(s) busy"), std::string::npos);
    EXPECT_FALSE(busy.evidence.contains("audit.side_effects"));

    Node forced(idle);
    TakeSideEffects(Every({.allowed = true, .force = true}), forced.Io(), forced.evidence);
    EXPECT_EQ(forced.runner.calls.size(), 1U);
  }
  // NVML not read: whether the GPUs are idle is unknown, so it is not run.
  Node unread;
  unread.evidence.erase("gpu.idle.temperature_c");
  TakeSideEffects(Every({.allowed = true}), unread.Io(), unread.evidence);
  EXPECT_TRUE(unread.runner.calls.empty());
  EXPECT_EQ(unread.evidence.at("health.dcgm.diag_r1")["ran"], false);
  // No driver: nothing to diagnose; no dcgmi: nothing to run (N/A).
  Node driverless;
  driverless.evidence["gpu.driver.version"] = nullptr;
  TakeSideEffects(Every({.allowed = true, .force = true}), driverless.Io(), driverless.evidence);
  EXPECT_TRUE(driverless.runner.calls.empty());
  Node bare;
  bare.fs = sys::MemoryFileSystem();
  TakeSideEffects(Every({.allowed = true}), bare.Io(), bare.evidence);
  EXPECT_TRUE(bare.evidence.at("health.dcgm.diag_r1").is_null());
}

TEST(TakeSideEffects, KeepsTheDiagnosticInsideTheNodesDeadline) {
  Node node;
  SideEffectIo io = node.Io();
  io.deadline = node.now + 30s;
  TakeSideEffects(Every({.allowed = true}), io, node.evidence);
  ASSERT_EQ(node.runner.calls.size(), 1U);
  EXPECT_EQ(node.runner.calls[0].timeout, 25s);  // what is left, less a margin

  Node late;
  SideEffectIo late_io = late.Io();
  late_io.deadline = late.now + 5s;
  TakeSideEffects(Every({.allowed = true}), late_io, late.evidence);
  EXPECT_TRUE(late.runner.calls.empty());
  EXPECT_NE(
      late.evidence.at("health.dcgm.diag_r1")["reason"].get<std::string>().find("--node-timeout"),
      std::string::npos);

  // A diagnostic that hangs, or prints something else: UNKNOWN material, never a PASS.
  Node hung;
  sys::ProcessResult timed_out;
  timed_out.timed_out = true;
  hung.runner.Answer("dcgmi diag", timed_out);
  TakeSideEffects(Every({.allowed = true}), hung.Io(), hung.evidence);
  EXPECT_NE(hung.evidence.at("health.dcgm.diag_r1")["error"].get<std::string>().find(
                "no result within 120 s"),
            std::string::npos);
  Node garbled;
  garbled.runner.AnswerStdout("dcgmi diag", "Error: unable to connect to host engine\n", 255);
  TakeSideEffects(Every({.allowed = true}), garbled.Io(), garbled.evidence);
  const std::string error = garbled.evidence.at("health.dcgm.diag_r1")["error"];
  EXPECT_NE(error.find("exit 255"), std::string::npos) << error;
  EXPECT_NE(error.find("unable to connect to host engine"), std::string::npos) << error;
}

TEST(TakeSideEffects, OneConnectionToTheNamedHost) {
  Node node;
  node.fs = sys::MemoryFileSystem();  // no dcgmi
  TakeSideEffects(Every({.allowed = true, .egress_target = "example.com"}), node.Io(),
                  node.evidence);
  EXPECT_EQ(node.connections, 1);
  EXPECT_EQ(node.evidence.at("network.egress.target"), "example.com:443");
  EXPECT_EQ(node.evidence.at("network.egress.reachable"), true);
  const json& log = node.evidence.at("audit.side_effects");
  ASSERT_EQ(log.size(), 1U);
  EXPECT_EQ(log[0]["check"], "networking.outbound-internet");
  EXPECT_EQ(SideEffectsSummary({&node.evidence, &node.evidence}),
            "opened one TCP connection to example.com:443 (nothing sent) on 2 node(s)");

  for (const ErrorCode code :
       {ErrorCode::kNotFound, ErrorCode::kTimeout, ErrorCode::kUnavailable, ErrorCode::kInternal}) {
    Node blocked;
    blocked.answer = Fail(code, "no way out");
    TakeSideEffects(Every({.allowed = true, .egress_target = "[2001:db8::1]:80"}), blocked.Io(),
                    blocked.evidence);
    EXPECT_EQ(blocked.evidence.at("network.egress.target"), "[2001:db8::1]:80");
    EXPECT_EQ(blocked.evidence.at("network.egress.detail"), "no way out");
    // A local failure (not the network's answer) is no evidence either way.
    EXPECT_EQ(blocked.evidence.at("network.egress.reachable"),
              code == ErrorCode::kInternal ? json(nullptr) : json(false));
  }
  EXPECT_EQ(SideEffectsSummary({}), "");
}

// Only the side effects of the checks asked for (the profile's) are taken.
TEST(TakeSideEffects, OnlyForTheChecksAskedFor) {
  const auto* catalogue = &AuditCatalogue::Builtin();
  const auto networking = catalogue->Select("networking");
  ASSERT_TRUE(networking);
  const SideEffectOptions options =
      ForChecks({.allowed = true, .egress_target = "example.com"}, *networking);
  EXPECT_EQ(options.checks, (std::set<std::string, std::less<>>{"networking.outbound-internet"}));
  Node node;
  TakeSideEffects(options, node.Io(), node.evidence);
  EXPECT_TRUE(node.runner.calls.empty());  // no diagnostic for the networking profile
  EXPECT_EQ(node.connections, 1);
  EXPECT_FALSE(node.evidence.contains("health.dcgm.diag_r1"));
  EXPECT_EQ(SideEffectsPlan(options),
            "with side effects: one TCP connection from each node to "
            "example.com");
  EXPECT_EQ(SideEffectsPlan({}), "read-only");
  const auto security = catalogue->Select("security");
  ASSERT_TRUE(security);
  EXPECT_EQ(SideEffectsPlan(ForChecks({.allowed = true}, *security)),
            "read-only: no side effect of the checks asked for applies");
  // The confirmation names every side effect it will take: the ssh login too.
  const auto access = catalogue->Select("access");
  ASSERT_TRUE(access);
  EXPECT_EQ(SideEffectsPlan(ForChecks({.allowed = true}, *access)),
            "with side effects: an ssh login (BatchMode, known hosts only) from each node to "
            "the next");
}

// Under a job step's device limits NVML sees fewer GPUs than the driver has: the others may be
// a tenant's, so the diagnostic (which tests them all) is not run.
TEST(TakeSideEffects, RefusesWhenNvmlSeesOnlySomeOfTheGpus) {
  Node node;  // NVML: 2 idle GPUs
  for (int i = 0; i < 8; ++i) {
    node.fs.AddFile("/proc/driver/nvidia/gpus/0000:0" + std::to_string(i) + ":00.0/information",
                    "");
  }
  TakeSideEffects(Every({.allowed = true}), node.Io(), node.evidence);
  EXPECT_TRUE(node.runner.calls.empty());
  EXPECT_NE(node.evidence.at("health.dcgm.diag_r1")["reason"].get<std::string>().find(
                "NVML sees 2 of the 8 GPUs"),
            std::string::npos);
}

TEST(TakeSideEffects, ImportsAnImageWithEnrootAndRemovesIt) {
  Node node;
  node.fs = sys::MemoryFileSystem();  // enroot, no dcgmi
  node.fs.AddFile("/usr/bin/enroot", "");
  node.runner.AnswerStdout("enroot import", "");
  TakeSideEffects(Every({.allowed = true}), node.Io(), node.evidence);
  ASSERT_EQ(node.runner.calls.size(), 1U);
  EXPECT_EQ(node.runner.calls[0].argv,
            (std::vector<std::string>{"/usr/bin/enroot", "import", "--output",
                                      "/tmp/cmax-audit-enroot-Ab12Cd/hello-world.sqsh",
                                      "docker://hello-world"}));
  EXPECT_EQ(node.runner.calls[0].timeout, 30s);
  // The image, then its folder: nothing the audit did not make itself.
  EXPECT_EQ(node.removed,
            (std::vector<std::string>{"/tmp/cmax-audit-enroot-Ab12Cd/hello-world.sqsh",
                                      "/tmp/cmax-audit-enroot-Ab12Cd/"}));
  EXPECT_EQ(node.evidence.at("containers.enroot.import_ok"), true);
  const json& log = node.evidence.at("audit.side_effects");
  ASSERT_EQ(log.size(), 1U);
  EXPECT_EQ(log[0]["check"], "containers.enroot-import");
  EXPECT_NE(log[0]["undo"].get<std::string>().find("ENROOT_CACHE_PATH"), std::string::npos);

  // A failure says enroot's last line; a hang is a failure too; either way the file goes.
  Node failing;
  failing.fs = node.fs;
  sys::ProcessResult refused;
  refused.exit_code = 1;
  refused.stderr_text =
      "[INFO] Querying registry for permission grant\n[ERROR] URL "
      "https://auth.docker.io/token returned error code: 429 Too Many Requests\n";
  failing.runner.Answer("enroot import", refused);
  TakeSideEffects(Every({.allowed = true}), failing.Io(), failing.evidence);
  EXPECT_EQ(failing.evidence.at("containers.enroot.import_ok"), false);
  EXPECT_EQ(failing.evidence.at("containers.enroot.import_error"),
            "exit 1: [ERROR] URL https://auth.docker.io/token returned error code: 429 Too Many "
            "Requests");
  EXPECT_EQ(failing.removed.size(), 2U);
  Node hung;
  hung.fs = node.fs;
  sys::ProcessResult timed_out;
  timed_out.timed_out = true;
  hung.runner.Answer("enroot import", timed_out);
  TakeSideEffects(Every({.allowed = true}), hung.Io(), hung.evidence);
  EXPECT_EQ(hung.evidence.at("containers.enroot.import_ok"), false);
  EXPECT_EQ(hung.evidence.at("containers.enroot.import_error"), "no image within 30 s");

  // Too little of the node's deadline left: not run, and no verdict either way.
  Node late;
  late.fs = node.fs;
  SideEffectIo io = late.Io();
  io.deadline = late.now + 6s;
  TakeSideEffects(Every({.allowed = true}), io, late.evidence);
  EXPECT_TRUE(late.runner.calls.empty());
  EXPECT_FALSE(late.evidence.contains("containers.enroot.import_ok"));
  // No folder of its own to be had: nothing is imported, and nothing removed.
  Node homeless;
  homeless.fs = node.fs;
  homeless.scratch_dir = tl::unexpected(
      Error{ErrorCode::kPermissionDenied, "cannot make a folder in /tmp: Permission denied"});
  TakeSideEffects(Every({.allowed = true}), homeless.Io(), homeless.evidence);
  EXPECT_TRUE(homeless.runner.calls.empty());
  EXPECT_TRUE(homeless.removed.empty());
  EXPECT_EQ(homeless.evidence.at("containers.enroot.import_error"),
            "not run: no folder of its own for the image: cannot make a folder in /tmp: "
            "Permission denied");
  // No enroot: nothing to import (containers.enroot reports it).
  Node bare;
  bare.fs = sys::MemoryFileSystem();
  TakeSideEffects(Every({.allowed = true}), bare.Io(), bare.evidence);
  EXPECT_TRUE(bare.evidence.at("containers.enroot.import_ok").is_null());
  EXPECT_TRUE(bare.removed.empty());
}

}  // namespace
}  // namespace cmax::audit
