// The audit's side effects through the real binary (issue 15): none without
// --allow-side-effects; with it, networking.outbound-internet opens exactly one real TCP
// connection to the host named (here a listening socket of the test's own on loopback), reports
// it for the provider to answer for, and the run records what it did and how to undo it. The
// NCCL topology file, once a side-effect check, is read without one.
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/socket.h>
#include <vector>

#include "support/free_port.hpp"
#include "support/temp_dir.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class AuditSideEffectsTest : public ::testing::Test {
 protected:
  sys::ProcessResult Cmax(const std::vector<std::string>& args,
                          std::vector<std::string> env_add = {}) {
    std::vector<std::string> argv{CMAX_BINARY, "--db", dir_.File("cmax.db"), "audit"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runner_.Run({.argv = argv, .env_add = std::move(env_add), .timeout = 60s});
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : sys::ProcessResult{};
  }
  static std::map<std::string, json> ByCheck(const json& doc) {
    std::map<std::string, json> out;
    for (const json& f : doc["findings"]) out[f["check_id"]] = f;
    return out;
  }
  testing::TempDir dir_;
  sys::PosixProcessRunner runner_;
};

TEST_F(AuditSideEffectsTest, OneConnectionToTheNamedHostOnlyWhenAllowed) {
  int port = 0;
  const int listener = testing::ListenOnLoopback(&port);
  ASSERT_GE(listener, 0);
  const std::string target = "127.0.0.1:" + std::to_string(port);

  // Not allowed: the target alone is a usage error, and the plain audit connects to nothing.
  auto refused = Cmax({"--egress-target", target});
  EXPECT_EQ(refused.exit_code, 2) << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("--allow-side-effects"), std::string::npos)
      << refused.stderr_text;
  auto plain = Cmax({"--json", "--exit-zero", "networking"});
  ASSERT_EQ(plain.exit_code, 0) << plain.stderr_text;
  const json quiet = json::parse(plain.stdout_text);
  EXPECT_EQ(ByCheck(quiet)["networking.outbound-internet"]["status"], "SKIP");
  EXPECT_FALSE(quiet.at("evidence").contains("audit.side_effects"));
  EXPECT_EQ(testing::AcceptWaiting(listener), 0);

  // Allowed: one connection, reported as reached, logged with its undo.
  auto r = Cmax(
      {"--json", "--exit-zero", "--allow-side-effects", "--egress-target", target, "networking"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(testing::AcceptWaiting(listener), 1);
  const json doc = json::parse(r.stdout_text);
  const json finding = ByCheck(doc)["networking.outbound-internet"];
  EXPECT_EQ(finding["status"], "WARN") << finding.dump();
  EXPECT_EQ(finding["observed"], "reached " + target);
  const json& log = doc.at("evidence").at("audit.side_effects");
  ASSERT_EQ(log.size(), 1U) << log.dump();
  EXPECT_EQ(log[0]["check"], "networking.outbound-internet");
  EXPECT_NE(r.stderr_text.find("side effects taken: opened one TCP connection to " + target),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(doc.at("evidence").at("audit.side_effects_allowed"), true);

  // Nothing listening any more: refused, so not reached.
  ::close(listener);
  auto closed = Cmax(
      {"--json", "--exit-zero", "--allow-side-effects", "--egress-target", target, "networking"});
  ASSERT_EQ(closed.exit_code, 0) << closed.stderr_text;
  const json after = ByCheck(json::parse(closed.stdout_text))["networking.outbound-internet"];
  EXPECT_EQ(after["status"], "PASS") << after.dump();

  // Allowed without a target: N/A, saying what it would need.
  auto untargeted = Cmax({"--json", "--exit-zero", "--allow-side-effects", "networking"});
  const json none = ByCheck(json::parse(untargeted.stdout_text))["networking.outbound-internet"];
  EXPECT_EQ(none["status"], "SKIP");
  EXPECT_NE(none["message"].get<std::string>().find("--egress-target"), std::string::npos);
  // A malformed target is refused before anything runs.
  auto bad = Cmax({"--allow-side-effects", "--egress-target", "2001:db8::1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.stderr_text;
}

// The NCCL topology file is read, never looked at inside a container: no flag needed, no side
// effect taken. A broken file fails naming its line; a good one is UNKNOWN with its digest.
TEST_F(AuditSideEffectsTest, TheTopologyFileIsReadWithoutSideEffects) {
  const std::string good = dir_.File("topo.xml");
  const std::string broken = dir_.File("broken.xml");
  {
    std::ofstream(good) << "<system version=\"1\">\n  <cpu numaid=\"0\"/>\n</system>\n";
    std::ofstream(broken) << "<system version=\"1\">\n  <cpu numaid=0/>\n</system>\n";
  }
  const auto topo = [&](const std::string& path) {
    auto r = Cmax({"--json", "--exit-zero", "networking"}, {"NCCL_TOPO_FILE=" + path});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    const json doc = json::parse(r.stdout_text);
    EXPECT_FALSE(doc.at("evidence").contains("audit.side_effects"));
    return std::pair{ByCheck(doc)["networking.nccl-topo-file"], doc.at("evidence")};
  };
  const auto [failed, failed_evidence] = topo(broken);
  EXPECT_EQ(failed["status"], "FAIL") << failed.dump();
  EXPECT_EQ(failed["observed"],
            broken +
                " (from NCCL_TOPO_FILE): line 2: attribute numaid's value is not in double "
                "quotes");
  // A device is not opened at all (the audit reads as root).
  const auto [device, device_evidence] = topo("/dev/null");
  EXPECT_EQ(device["status"], "FAIL") << device.dump();
  EXPECT_NE(device["observed"].get<std::string>().find("not a regular file"), std::string::npos);
  const auto [good_file, evidence] = topo(good);
  EXPECT_EQ(good_file["status"], "UNKNOWN") << good_file.dump();
  EXPECT_NE(good_file["message"].get<std::string>().find("containers"), std::string::npos);
  EXPECT_EQ(evidence.at("network.nccl.topo_file").at("source"), "NCCL_TOPO_FILE");
  EXPECT_EQ(evidence.at("network.nccl.topo_file_sha256").get<std::string>().size(), 64U);
}

}  // namespace
}  // namespace cmax
