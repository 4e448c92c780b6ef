#include <unistd.h>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "health/agent.hpp"
#include "health/agent_metrics.hpp"
#include "health/watchdog.hpp"
#include "support/golden.hpp"
#include "sys/metrics_server.hpp"

namespace cmax::health {
namespace {

TEST(AgentReadyLine, SaysWhichSourcesAreOpen) {
  EXPECT_EQ(ReadyLine({.kmsg = true, .nvml = true, .gpus = 8}, true),
            "agent ready: kernel log open, NVML 8 GPUs");
  EXPECT_EQ(ReadyLine({.kmsg = true, .nvml = true, .gpus = 1}, true),
            "agent ready: kernel log open, NVML 1 GPU");
  EXPECT_EQ(ReadyLine({.kmsg = false, .nvml = false}, true),
            "agent ready: kernel log not open (retrying), NVML unavailable (retrying)");
  EXPECT_EQ(ReadyLine({.kmsg = true}, false), "agent ready: kernel log open, NVML off");
}

using namespace std::chrono_literals;

TEST(AgentMetrics, PrometheusTextMatchesGolden) {
  AgentMetrics m;
  m.node = "gpu-node-\"7\"";
  m.kmsg_records = 1234;
  m.kmsg_lost = 5;
  m.events = 9;
  m.kmsg_up = true;
  m.uptime_seconds = 12.5;
  m.rss_bytes = 6000000;
  m.cpu_seconds = 0.25;
  m.xid_total[{79, "0000:17:00"}] = 2;
  m.xid_total[{13, "0000:18:00"}] = 7;
  m.sxid_total[{20034, "0000:85:00.0"}] = 1;
  m.kernel_events_total[{"soft_lockup", "cpu3"}] = 1;
  NodeCondition c;
  c.key = "xid/0000:17:00/79";
  c.component = "gpu";
  c.device = "0000:17:00";
  c.kind = "xid";
  c.severity = Severity::kCritical;
  c.action = "reboot-node";
  c.count = 2;
  m.conditions.push_back(c);
  m.gpu.push_back({"gpu_temperature", {{"gpu", "0"}, {"pci", "0000:17:00.0"}}, 41, "C"});
  for (double s : {0.001, 0.002, 0.003}) m.store_latency.Add(s);
  testing::ExpectGolden("health/agent_metrics.prom", RenderPrometheus(m));
}

TEST(AgentMetrics, LabelsAreEscapedAndQuantilesAreExact) {
  EXPECT_EQ(EscapeLabel("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  LatencyWindow window(4);
  for (int i = 1; i <= 6; ++i) window.Add(i);  // keeps 3, 4, 5, 6
  EXPECT_EQ(window.Quantile(0.0), 3);
  EXPECT_EQ(window.Quantile(1.0), 6);
  EXPECT_EQ(window.Count(), 6u);
  EXPECT_EQ(window.Sum(), 21);
  EXPECT_EQ(LatencyWindow().Quantile(0.99), 0);
}

TEST(Watchdog, MemoryTripsAtOnceCpuOnlyWhenSustained) {
  Watchdog memory({.max_rss_bytes = 1000, .max_cpu_fraction = 0.5, .cpu_strikes = 2});
  EXPECT_EQ(memory.Check({0, 999, 0}), WatchdogVerdict::kOk);
  EXPECT_EQ(memory.Check({1, 1001, 0}), WatchdogVerdict::kMemory);

  Watchdog cpu({.max_rss_bytes = 1 << 30, .max_cpu_fraction = 0.5, .cpu_strikes = 2});
  EXPECT_EQ(cpu.Check({0, 1, 0.0}), WatchdogVerdict::kOk);
  EXPECT_EQ(cpu.Check({1, 1, 0.9}), WatchdogVerdict::kOk) << "one busy interval is a spike";
  EXPECT_EQ(cpu.Check({2, 1, 1.0}), WatchdogVerdict::kOk) << "back under the limit";
  EXPECT_EQ(cpu.Check({3, 1, 1.9}), WatchdogVerdict::kOk);
  const UsageSample busy{4, 1, 2.8};
  EXPECT_EQ(cpu.Check(busy), WatchdogVerdict::kCpu);
  EXPECT_NE(cpu.Explain(WatchdogVerdict::kCpu, busy).find("90.0%"), std::string::npos);
}

// A client on loopback; the server answers from the same thread once the request is queued.
std::string Exchange(sys::MetricsServer& server, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server.Port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return "connect failed";
  if (!request.empty()) (void)::write(fd, request.data(), request.size());
  server.Serve(
      [](std::string_view path) -> std::optional<sys::ServedResponse> {
        if (path == "/metrics") return sys::ServedResponse{200, "text/plain", "cmax_up 1\n"};
        return std::nullopt;
      },
      100ms);
  std::string response;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0)
    response.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return response;
}

TEST(MetricsServer, AnswersGetAndRefusesTheRest) {
  auto server = sys::MetricsServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_GT(server->Port(), 0);
  const std::string ok = Exchange(*server, "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Length: 10\r\n"), std::string::npos);
  EXPECT_NE(ok.find("\r\n\r\ncmax_up 1\n"), std::string::npos);
  EXPECT_EQ(Exchange(*server, "GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Exchange(*server, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(Exchange(*server, "garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Exchange(*server, ""), "") << "a silent client gets nothing";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "and cannot hold the loop";
  EXPECT_FALSE(sys::MetricsServer::Listen("nonsense"));
}

TEST(MetricsServer, SilentClientsCannotHoldTheLoop) {
  auto server = sys::MetricsServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(server);
  std::vector<int> clients;
  for (int i = 0; i < 12; ++i) {  // within the listen backlog (16), so connect does not block
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server->Port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    clients.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  server->Serve([](std::string_view) { return std::nullopt; });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms) << "one call is bounded";
  for (int fd : clients) ::close(fd);
  EXPECT_FALSE(sys::MetricsServer::Listen("127.0.0.1:99999"));
  EXPECT_FALSE(sys::MetricsServer::Listen("256.1.1.1:80"));
}

TEST(AgentDevices, OnlyTheNodesOwnDevicesWhenNodesShareAKernel) {
  const std::vector<std::string> mine = {"0000:17:00.0", "0000:05:00"};
  EXPECT_TRUE(DeviceIsOurs("0000:17:00", mine));    // an Xid prints no function
  EXPECT_TRUE(DeviceIsOurs("0000:05:00.0", mine));  // an SXid does
  EXPECT_FALSE(DeviceIsOurs("0000:3b:00", mine));
  EXPECT_TRUE(DeviceIsOurs("", mine));          // a soft lockup names no device
  EXPECT_TRUE(DeviceIsOurs("0000:3b:00", {}));  // no list: every device is ours
  EXPECT_TRUE(DeviceIsOurs("0000:17:00", {"0000:17:00.0"}));
}

}  // namespace
}  // namespace cmax::health
