// The real `cmax agent` binary against the real /dev/kmsg, the real store, libnvml-sim.so (the
// simulated NVML, a stand-in) and real Prometheus: faults written to the kernel log and
// flipped in the simulated GPUs become stored conditions and scraped counters.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <fstream>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <regex>
#include <sstream>
#include <sys/socket.h>
#include <thread>

#include "store/store.hpp"
#include "support/free_port.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;

bool WriteKmsg(const std::string& line) {
  const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::string record = line + "\n";  // without the newline readers do not see it yet
  const bool ok = ::write(fd, record.data(), record.size()) == static_cast<ssize_t>(record.size());
  ::close(fd);
  return ok;
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "/dev/kmsg needs root";
    node_ = "agent-test-" + std::to_string(::getpid());
    db_ = dir_.File("cmax.db");
    state_ = dir_.File("nvml.json");
    SetGpus(R"({"bus_id": "0000:17:00.0"}, {"bus_id": "0000:2a:00.0"})");
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      testing::WaitUntil([&] { return !sys::ProcessAlive(pid_); }, 5s);
    }
    if (prometheus_ > 0) ::kill(prometheus_, SIGKILL);
  }
  void SetGpus(const std::string& gpus) {
    ASSERT_TRUE(fs_.WriteFileAtomic(state_, R"({"gpus": [)" + gpus + "]}", 0644));
  }
  void StartAgent() {
    auto pid = sys::SpawnDaemon(
        {{CMAX_BINARY, "agent", "--db", db_, "--node", node_, "--metrics-listen", "127.0.0.1:0",
          "--nvml-interval", "0.2"},
         {"CMAX_NVML_LIB=" + std::string(CMAX_NVML_SIM_LIB), "CMAX_NVML_SIM_STATE=" + state_},
         dir_.File("agent.log"),
         dir_.Path()});
    ASSERT_TRUE(pid) << pid.error().message;
    pid_ = *pid;
    ASSERT_TRUE(testing::WaitUntil(
        [&] {
          auto log = fs_.ReadFile(dir_.File("agent.log"), 1 << 20);
          std::smatch m;
          static const std::regex kPort(":([0-9]+)/metrics");
          // The ready line: the kernel log is open and NVML has been looked at once.
          if (!log || log->find("agent ready: kernel log open, NVML 2 GPUs") == std::string::npos)
            return false;
          if (!std::regex_search(*log, m, kPort)) return false;
          port_ = std::stoi(m[1]);
          return true;
        },
        10s))
        << "the agent did not start: "
        << fs_.ReadFile(dir_.File("agent.log"), 1 << 20).value_or("");
  }
  std::vector<NodeCondition> Conditions() {
    auto store = store::Store::Open({.path = db_, .create = false, .busy_timeout_ms = 1000});
    if (!store) return {};
    return store->LoadConditions(node_).value_or(std::vector<NodeCondition>{});
  }
  const NodeCondition* Find(const std::vector<NodeCondition>& all, const std::string& key) {
    for (const NodeCondition& c : all) {
      if (c.key == key) return &c;
    }
    return nullptr;
  }
  std::string Scrape() {
    sys::PosixProcessRunner runner;
    auto r = runner.Run(
        {.argv = {"curl", "-s", "http://127.0.0.1:" + std::to_string(port_) + "/metrics"}});
    return r && r->Succeeded() ? r->stdout_text : "";
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  std::string node_, db_, state_;
  int pid_ = 0;
  int port_ = 0;
  int prometheus_ = 0;
};

TEST_F(AgentTest, KernelFaultsAndGpuFaultsBecomeConditionsAndMetrics) {
  StartAgent();
  const std::string tag = std::to_string(::getpid());
  ASSERT_TRUE(WriteKmsg("<3>NVRM: Xid (PCI:0000:C1:00): 79, pid=1, name=agent-" + tag +
                        ", GPU has fallen off the bus."));
  ASSERT_TRUE(WriteKmsg("<3>NVRM: Xid (PCI:0000:C1:00): 79, pid=2, name=agent-" + tag + ", again"));
  ASSERT_TRUE(
      WriteKmsg("<3>nvidia-nvswitch2: SXid (PCI:0000:C5:00.0): 20034, Fatal, Link 11 "
                "LTSSM Fault Up"));
  ASSERT_TRUE(
      WriteKmsg("<0>watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [agent-" + tag + ":4242]"));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        const auto all = Conditions();
        const NodeCondition* xid = Find(all, "xid/0000:c1:00/79");
        return xid != nullptr && xid->count == 2 && Find(all, "sxid/0000:c5:00.0/20034") &&
               Find(all, "soft_lockup/cpu1/0");
      },
      5s))
      << "conditions never reached the store";
  const auto all = Conditions();
  EXPECT_EQ(Find(all, "xid/0000:c1:00/79")->action, "reboot-node");
  EXPECT_EQ(Find(all, "sxid/0000:c5:00.0/20034")->severity, Severity::kCritical);

  // The same faults as Prometheus counters, and the format passes promtool.
  const std::string metrics = Scrape();
  EXPECT_NE(metrics.find("cmax_xid_total{node=\"" + node_ + "\",code=\"79\",pci=\"0000:c1:00\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("cmax_sxid_total{node=\"" + node_ + "\",code=\"20034\""),
            std::string::npos);
  sys::PosixProcessRunner runner;
  auto lint = runner.Run({.argv = {"promtool", "check", "metrics"}, .stdin_data = metrics});
  ASSERT_TRUE(lint);
  EXPECT_EQ(lint->exit_code, 0) << lint->stdout_text << lint->stderr_text;

  // A GPU flipped to a double-bit ECC error and a row-remap failure in the simulated NVML.
  SetGpus(R"({"bus_id": "0000:17:00.0"},
             {"bus_id": "0000:2a:00.0", "ecc": {"enabled": true, "volatile": {"dbe": 1}},
              "remapped_rows": {"failure": true}})");
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        const auto now = Conditions();
        return Find(now, "nvml/ecc.dbe/0000:2a:00.0") &&
               Find(now, "nvml/memory.remap_failure/0000:2a:00.0");
      },
      5s));
  EXPECT_EQ(Find(Conditions(), "nvml/memory.remap_failure/0000:2a:00.0")->action, "drain-and-rma");
  // Then the other GPU falls off the bus; the first one recovers.
  SetGpus(R"({"bus_id": "0000:17:00.0", "lost": true}, {"bus_id": "0000:2a:00.0"})");
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        const auto now = Conditions();
        const NodeCondition* dbe = Find(now, "nvml/ecc.dbe/0000:2a:00.0");
        return Find(now, "nvml/lost/0000:17:00.0") != nullptr && dbe != nullptr && dbe->recovered;
      },
      5s))
      << "lost GPU or recovery not seen";

  // Events carry the Xid code and pci.
  auto store = store::Store::Open({.path = db_, .create = false});
  ASSERT_TRUE(store);
  auto events = store->LoadEvents(node_, 100);
  ASSERT_TRUE(events);
  bool xid_event = false;
  for (const Event& e : *events) {
    xid_event |= e.kind == "xid" && e.payload_json.find("\"code\":79") != std::string::npos &&
                 e.payload_json.find("\"pci\":\"0000:c1:00\"") != std::string::npos;
  }
  EXPECT_TRUE(xid_event);

  // SIGTERM stops it cleanly.
  ::kill(pid_, SIGTERM);
  EXPECT_TRUE(testing::WaitUntil([&] { return !sys::ProcessAlive(pid_); }, 5s));
  pid_ = 0;
}

TEST_F(AgentTest, CountsContinueAcrossARestart) {
  StartAgent();
  const std::string line = "<3>NVRM: Xid (PCI:0000:C3:00): 13, pid=1, name=restart-" +
                           std::to_string(::getpid()) + ", Graphics Exception";
  ASSERT_TRUE(WriteKmsg(line));
  ASSERT_TRUE(
      testing::WaitUntil([&] { return Find(Conditions(), "xid/0000:c3:00/13") != nullptr; }, 5s));
  const WallTime first = Find(Conditions(), "xid/0000:c3:00/13")->first_seen;
  ::kill(pid_, SIGTERM);
  ASSERT_TRUE(testing::WaitUntil([&] { return !sys::ProcessAlive(pid_); }, 5s));
  ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("agent.log"), "", 0644));
  StartAgent();
  ASSERT_TRUE(WriteKmsg(line));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        const NodeCondition* c = Find(Conditions(), "xid/0000:c3:00/13");
        return c != nullptr && c->count == 2;
      },
      5s))
      << "the second agent did not continue the count";
  EXPECT_EQ(Find(Conditions(), "xid/0000:c3:00/13")->first_seen, first);
}

TEST_F(AgentTest, PrometheusScrapesTheXidCounter) {
  if (sys::FindProgram("prometheus").empty()) GTEST_SKIP() << "no prometheus (scripts/setup.sh)";
  StartAgent();
  const std::string tag = std::to_string(::getpid());
  ASSERT_TRUE(WriteKmsg("<3>NVRM: Xid (PCI:0000:C2:00): 48, pid=1, name=prom-" + tag + ", DBE"));
  const int web_port = testing::FreePort();
  ASSERT_GT(web_port, 0);
  std::ofstream(dir_.File("prometheus.yml")) << "global:\n  scrape_interval: 1s\nscrape_configs:\n "
                                                " - job_name: cmax\n    static_configs:\n"
                                             << "      - targets: ['127.0.0.1:" << port_ << "']\n";
  auto prom = sys::SpawnDaemon({{"prometheus", "--config.file=" + dir_.File("prometheus.yml"),
                                 "--storage.tsdb.path=" + dir_.File("tsdb"),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(web_port)},
                                {},
                                dir_.File("prometheus.log"),
                                dir_.Path()});
  ASSERT_TRUE(prom) << prom.error().message;
  prometheus_ = *prom;
  sys::PosixProcessRunner runner;
  std::string answer;
  const bool seen = testing::WaitUntil(
      [&] {
        auto r = runner.Run(
            {.argv = {"curl", "-s", "--get",
                      "http://127.0.0.1:" + std::to_string(web_port) + "/api/v1/query",
                      "--data-urlencode", "query=cmax_xid_total{code=\"48\",pci=\"0000:c2:00\"}"}});
        answer = r ? r->stdout_text : "";
        return answer.find("\"value\":[") != std::string::npos &&
               answer.find(",\"1\"]") != std::string::npos;
      },
      30s);
  EXPECT_TRUE(seen)
      << "Prometheus never returned the counter: " << answer << "\n"
      << fs_.ReadFile(dir_.File("prometheus.log"), 1 << 20).value_or("").substr(0, 2000);
}

}  // namespace
}  // namespace cmax
