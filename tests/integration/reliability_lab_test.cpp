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
#include "support/free_port.hpp"
#include "support/wait.hpp"
#include "sys/kmsg_reader.hpp"

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
      // Its ready line: /dev/kmsg is open, a record written now is read.
      ASSERT_TRUE(testing::WaitForText(dir_.File(node + ".log"), "agent ready: kernel log open"))
          << testing::FileText(dir_.File(node + ".log"));
    }
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
  // A run id that is not a number is a usage error.
  const auto bad = Cmax({"reliability", "report", "1x"});
  EXPECT_EQ(bad.exit_code, 2) << bad.stderr_text;
  EXPECT_NE(bad.stderr_text.find("not a run id"), std::string::npos) << bad.stderr_text;
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

// Killed (SIGKILL: no chance to tidy) during its second step, a scenario keeps its first: each
// step is recorded as soon as it is judged, before the next fault goes in.
TEST_F(ReliabilityLabTest, AKilledScenarioKeepsTheStepsItJudged) {
  const std::string log = dir_.File("killed.log");
  auto pid = sys::SpawnDaemon({.argv = {CMAX_BINARY, "--db", dir_.File("cmax.db"), "reliability",
                                        "run", "--scenario", scenario_},
                               .env_add = {"SLURM_CONF=" + lab::PathsFor(spec_.dir).slurm_conf},
                               .log_path = log});
  ASSERT_TRUE(pid) << pid.error().message;
  // Printed once the first step is judged and recorded, and the second injected.
  ASSERT_TRUE(testing::WaitForText(log, "double-bit-ecc: injected", 30s)) << testing::FileText(log);
  ::kill(*pid, SIGKILL);
  ASSERT_TRUE(testing::WaitUntil([&] { return !sys::ProcessAlive(*pid); }));
  const auto findings = Findings();
  ASSERT_EQ(findings.size(), 1U) << testing::FileText(log);
  EXPECT_EQ(findings[0].check_id, "reliability.fallen-off-the-bus");
  EXPECT_EQ(findings[0].status, CheckStatus::kFail);
  auto s = store::Store::Open({.path = dir_.File("cmax.db")});
  const auto run = s->LoadRun(s->LatestRunId("reliability").value()).value();
  EXPECT_EQ(run.run.state, RunState::kRunning);  // shown as "abandoned": its process is gone
  bool timeline = false;
  for (const EvidenceItem& e : run.evidence) {
    timeline |= e.key == "reliability.fallen-off-the-bus.timeline";
  }
  EXPECT_TRUE(timeline);
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
  // A node running a job: the provider's answer to even a log-only fault would end it.
  ASSERT_EQ(StartJob("gpu3").second, "gpu3");
  r = Cmax({"inject", "xid", "79", "--gpu", "0000:05:00.0", "--node", "gpu3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("gpu3 runs jobs"), std::string::npos) << r.stderr_text;
  r = Cmax({"inject", "xid", "79", "--gpu", "0000:05:00.0", "--node", "gpu3", "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  // Dry run: the exact record, nothing written (read back from the kernel log once it exited).
  auto kmsg = sys::KmsgReader::Open("/dev/kmsg", sys::KmsgReader::Start::kNow);
  ASSERT_TRUE(kmsg) << kmsg.error().message;
  r = Cmax({"inject", "xid", "79", "--gpu", "0000:17:00.0", "--node", "gpu1", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("would write to /dev/kmsg: <3>NVRM: Xid (PCI:0000:17:00): 79, "
                               "pid='<unknown>', name=cmax-inject, GPU has fallen off the bus"),
            std::string::npos)
      << r.stdout_text;
  for (auto record = kmsg->Next(); record && *record; record = kmsg->Next()) {
    EXPECT_EQ(record->value().find("name=cmax-inject"), std::string::npos)
        << "the dry run wrote " << **record;
  }
  EXPECT_FALSE(Node("gpu1").drain);
}

// A fault only NVML shows (the simulated library's state): the agent's NVML watch sees it, the
// node is taken out, and the run restores the simulated GPU afterwards.
TEST_F(ReliabilityLabTest, ASimulatedNvmlFaultIsTakenOutAndRestored) {
  const std::string state = dir_.File("gpu4-nvml.json");
  const std::string healthy = R"({"gpus": [{"bus_id": "0000:17:00.0"}]})";
  ASSERT_TRUE(fs_.WriteFileAtomic(state, healthy, 0644));
  auto agent =
      sys::SpawnDaemon({.argv = {CMAX_BINARY, "--db", dir_.File("gpu4.db"), "agent", "--node",
                                 "gpu4", "--metrics-listen", "none", "--nvml-interval", "0.2",
                                 "--remediate", "--validation-command", "sleep 20",
                                 "--reset-command", "true", "--breaker-percent", "100"},
                        .env_add = {"SLURM_CONF=" + lab::PathsFor(spec_.dir).slurm_conf,
                                    "CMAX_NVML_LIB=" + std::string(CMAX_NVML_SIM_LIB),
                                    "CMAX_NVML_SIM_STATE=" + state},
                        .log_path = dir_.File("gpu4.log")});
  ASSERT_TRUE(agent) << agent.error().message;
  agents_.push_back(*agent);
  // Ready once its first NVML look (healthy) is taken.
  ASSERT_TRUE(
      testing::WaitForText(dir_.File("gpu4.log"), "agent ready: kernel log open, NVML 1 GPU"))
      << testing::FileText(dir_.File("gpu4.log"));
  const std::string scenario = dir_.File("nvml.yaml");
  std::ofstream(scenario) << "bars: {detect_s: 5, out_of_service_s: 5}\npoll_s: 0.2\n"
                          << "steps: [{name: remap, inject: nvml-sim, fault: row-remap-failure, "
                             "node: gpu4, gpu: 0, state: '"
                          << state << "'}]\n";
  const auto r = Cmax({"reliability", "run", "--scenario", scenario});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("restored the simulated NVML state"), std::string::npos);
  EXPECT_EQ(fs_.ReadFile(state, 1 << 20).value_or(""), healthy);
  EXPECT_FALSE(fs_.Exists(state + ".cmax-backup"));
  const auto findings = Findings();
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].status, CheckStatus::kPass) << findings[0].observed;
}

// Reboot timing asks Slurm to reboot; the lab (one host) has no RebootProgram, so Slurm refuses
// and the command says why. Without --allow-destructive nothing is asked at all.
TEST_F(ReliabilityLabTest, RebootTimingIsRefusedWithoutItsFlagAndReportsSlurmsAnswer) {
  auto r = Cmax({"reliability", "reboot", "gpu4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("--allow-destructive"), std::string::npos) << r.stderr_text;
  r = Cmax(
      {"reliability", "reboot", "gpu4", "--allow-destructive", "--timeout", "5", "--poll", "0.2"});
  EXPECT_EQ(r.exit_code, 3) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("RebootProgram"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(Node("gpu4").drain);
  // A node an operator took out is not rebooted (its reason replaced) and resumed after.
  Run({"scontrol", "update", "nodename=gpu3", "state=drain", "reason=RMA ticket 12"});
  r = Cmax(
      {"reliability", "reboot", "gpu3", "--allow-destructive", "--timeout", "5", "--poll", "0.2"});
  EXPECT_EQ(r.exit_code, 2) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("already out of service (RMA ticket 12)"), std::string::npos)
      << r.stderr_text;
  EXPECT_TRUE(Node("gpu3").drain);
  EXPECT_EQ(Node("gpu3").reason, "RMA ticket 12");
}

// A provider whose health checks alert but whom nothing acts on: detection passes through a
// real Prometheus scraping the agent, and the step fails because the node stays in service.
TEST_F(ReliabilityLabTest, AnAlertThatNothingActsOnIsDetectedAndStillFails) {
  if (sys::FindProgram("prometheus").empty()) GTEST_SKIP() << "no prometheus (scripts/setup.sh)";
  const int metrics = testing::FreePort();
  const int web = testing::FreePort();
  auto agent = sys::SpawnDaemon(
      {.argv = {CMAX_BINARY, "--db", dir_.File("gpu1.db"), "agent", "--node", "gpu1", "--no-nvml",
                "--metrics-listen", "127.0.0.1:" + std::to_string(metrics), "--devices",
                "0000:17:00.0"},
       .log_path = dir_.File("gpu1.log")});
  ASSERT_TRUE(agent) << agent.error().message;
  agents_.push_back(*agent);
  std::ofstream(dir_.File("prometheus.yml"))
      << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: cmax\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << metrics << "']\n"
      << "        labels: {node: gpu1}\n";
  auto prom = sys::SpawnDaemon(
      {.argv = {sys::FindProgram("prometheus"), "--config.file=" + dir_.File("prometheus.yml"),
                "--storage.tsdb.path=" + dir_.File("tsdb"),
                "--web.listen-address=127.0.0.1:" + std::to_string(web)},
       .log_path = dir_.File("prometheus.log"),
       .cwd = dir_.Path()});
  ASSERT_TRUE(prom) << prom.error().message;
  agents_.push_back(*prom);
  const std::string url = "http://127.0.0.1:" + std::to_string(web);
  // Prometheus is up and scraping the agent before the run starts.
  ASSERT_TRUE(Eventually([&] {
    sys::ProcessSpec spec{.argv = {"curl", "-s", "--get", url + "/api/v1/query", "--data-urlencode",
                                   "query=up{node=\"gpu1\"}"}};
    auto r = runner_.Run(spec);
    return r && r->stdout_text.find(",\"1\"]") != std::string::npos;
  }));
  const std::string scenario = dir_.File("alert.yaml");
  std::ofstream(scenario) << "bars: {detect_s: 8, out_of_service_s: 8}\npoll_s: 0.5\n"
                          << "signals: {prometheus: '" << url
                          << "', query: 'max by (node) (cmax_xid_total) > 0'}\n"
                          << "steps: [{name: alert-only, inject: xid, code: 79, node: gpu1, "
                             "gpu: '0000:17:00.0'}]\n";
  const auto r = Cmax({"reliability", "run", "--scenario", scenario});
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  const auto findings = Findings();
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].status, CheckStatus::kFail);
  EXPECT_NE(findings[0].observed.find("detected in"), std::string::npos) << findings[0].observed;
  EXPECT_NE(findings[0].observed.find("alert: prometheus"), std::string::npos)
      << findings[0].observed;
  EXPECT_NE(findings[0].observed.find("no drain within 8.00s"), std::string::npos)
      << findings[0].observed;
}

}  // namespace
}  // namespace cmax::remediate
