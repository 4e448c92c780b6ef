// `cmax reliability run` and `cmax inject` on the real lab with the real /dev/kmsg. The
// "provider" is cmax itself: one agent per node with --remediate (the lab's nodes share this
// host's kernel, so each agent watches only its own devices, --devices). Three scenarios pass
// with the agents running and every one fails with "no drain" without them.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "integration/remediate_lab_fixture.hpp"
#include "store/store.hpp"

namespace cmax::remediate {
namespace {

// Each node's GPU or NVSwitch in the scenario.
const std::vector<std::pair<std::string, std::string>> kDevices = {
    {"gpu1", "0000:17:00.0"}, {"gpu2", "0000:3b:00.0"}, {"gpu3", "0000:05:00.0"}};

class ReliabilityLabTest : public RemediateLabTest {
 protected:
  int PortBase() const override { return 27817; }  // its own ports: it holds the kmsg lock
  void SetUp() override {
    RemediateLabTest::SetUp();
    if (::geteuid() != 0) return;
    scenario_ = dir_.File("scenario.yaml");
    std::ofstream(scenario_) << R"(name: three faults
bars: {detect_s: 5, out_of_service_s: 5}
poll_s: 0.2
steps:
  - {name: fallen-off-the-bus, inject: xid, code: 79, node: gpu1, gpu: "0000:17:00.0"}
  - {name: double-bit-ecc, inject: xid, code: 48, node: gpu2, gpu: "0000:3b:00.0"}
  - {name: fatal-sxid, inject: sxid, code: 12028, node: gpu3, switch_pci: "0000:05:00.0", switch: 2, fatal: true}
)";
  }
  void TearDown() override {
    for (int pid : agents_) ::kill(pid, SIGTERM);
    RemediateLabTest::TearDown();
  }
  void StartAgents() {
    for (const auto& [node, device] : kDevices) {
      auto pid = sys::SpawnDaemon(
          {.argv = {CMAX_BINARY, "--db", dir_.File(node + ".db"), "agent", "--node", node,
                    "--no-nvml", "--metrics-listen", "none", "--devices", device, "--remediate",
                    "--validation-command", "sleep 20", "--reset-command", "true",
                    "--breaker-percent", "100"},
           .env_add = {"SLURM_CONF=" + lab::PathsFor(spec_.dir).slurm_conf},
           .log_path = dir_.File(node + ".log")});
      ASSERT_TRUE(pid) << pid.error().message;
      agents_.push_back(*pid);
      const std::string lock = dir_.File(node + ".db") + ".remediate.lock";
      ASSERT_TRUE(Eventually([&] { return ::access(lock.c_str(), F_OK) == 0; }));
    }
    std::this_thread::sleep_for(300ms);  // past their start, which opens /dev/kmsg
  }
  sys::ProcessResult Cmax(std::vector<std::string> args) {
    std::vector<std::string> argv{CMAX_BINARY, "--db", dir_.File("cmax.db")};
    argv.insert(argv.end(), args.begin(), args.end());
    sys::ProcessSpec spec{.argv = argv};
    spec.timeout = 120s;
    auto r = runner_.Run(spec);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : sys::ProcessResult{};
  }
  std::vector<Finding> Findings() {
    auto s = store::Store::Open({.path = dir_.File("cmax.db")});
    const int64_t run = s->LatestRunId("reliability").value();
    return s->LoadRun(run).value().findings;
  }

  std::string scenario_;
  std::vector<int> agents_;
};

TEST_F(ReliabilityLabTest, ThreeScenariosPassWithTheAgentsAsTheProvider) {
  StartAgents();
  const auto r = Cmax({"reliability", "run", "--scenario", scenario_});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  const auto findings = Findings();
  ASSERT_EQ(findings.size(), 3U);
  for (const Finding& f : findings) {
    EXPECT_EQ(f.status, CheckStatus::kPass) << f.check_id << ": " << f.observed;
  }
  EXPECT_TRUE(Node("gpu1").drain);
  EXPECT_FALSE(Node("gpu4").drain);  // no fault of its own, and no agent's stray drain
  // The report draws the timeline.
  const auto report = Cmax({"reliability", "report", "-o", dir_.File("report.html")});
  ASSERT_EQ(report.exit_code, 0) << report.stderr_text;
  std::stringstream html;
  html << std::ifstream(dir_.File("report.html")).rdbuf();
  EXPECT_NE(html.str().find("<h2>Timeline</h2>"), std::string::npos);
  EXPECT_NE(html.str().find("class=\"detect\""), std::string::npos);
}

TEST_F(ReliabilityLabTest, WithoutAProviderEveryScenarioFailsWithNoDrain) {
  const auto r = Cmax({"reliability", "run", "--scenario", scenario_});
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  const auto findings = Findings();
  ASSERT_EQ(findings.size(), 3U);
  for (const Finding& f : findings) {
    EXPECT_EQ(f.status, CheckStatus::kFail) << f.check_id;
    EXPECT_NE(f.observed.find("no drain within 5.00s"), std::string::npos) << f.observed;
  }
}

TEST_F(ReliabilityLabTest, InjectIsSeenAtOnceAndADrainedNodeIsRefused) {
  StartAgents();
  // The record ends with a newline: without one the kernel holds it back until the next write.
  auto r = Cmax({"inject", "xid", "48", "--gpu", "0000:3b:00.0", "--node", "gpu2"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  ASSERT_TRUE(Eventually([&] { return Node("gpu2").drain || Node("gpu2").maintenance; }));
  // A node an operator drained: an injection would stack on it.
  Run({"scontrol", "update", "nodename=gpu4", "state=drain", "reason=ops"});
  r = Cmax({"inject", "xid", "79", "--gpu", "0000:17:00.0", "--node", "gpu4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("already out of service (ops)"), std::string::npos) << r.stderr_text;
  r = Cmax({"inject", "xid", "79", "--gpu", "0000:17:00.0", "--node", "gpu9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("not a node the scheduler knows"), std::string::npos);
  // Dry run: the exact record, nothing written.
  r = Cmax({"inject", "xid", "79", "--gpu", "0000:17:00.0", "--node", "gpu1", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("would write to /dev/kmsg: <3>NVRM: Xid (PCI:0000:17:00): 79, "
                               "pid='<unknown>', name=cmax-inject, GPU has fallen off the bus"),
            std::string::npos)
      << r.stdout_text;
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(Node("gpu1").drain);
}

}  // namespace
}  // namespace cmax::remediate
