// The Prometheus alert signal: parsing instant-query answers, asking a server (the HTTP fixture
// standing in for Prometheus's query API), and alerts on the timeline through the watcher.
#include "reliability/alerts.hpp"

#include <atomic>
#include <gtest/gtest.h>
#include <thread>

#include "reliability/observer.hpp"
#include "support/http_fixture.hpp"
#include "support/read_only_scheduler.hpp"
#include "support/wait.hpp"

namespace cmax::reliability {
namespace {

using namespace std::chrono_literals;

constexpr const char* kTwoNodes = R"({"status":"success","data":{"resultType":"vector","result":[
  {"metric":{"node":"gpu1","alertname":"GpuXid"},"value":[1800000000.1,"1"]},
  {"metric":{"instance":"gpu2:9470"},"value":[1800000000.1,"3"]},
  {"metric":{"node":"gpu3"},"value":[1800000000.1,"0"]}]}})";

TEST(PrometheusAlerts, NodesFromTheSeriesThatAreNotZero) {
  auto nodes = ParsePrometheusNodes(kTwoNodes, "node");
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_EQ(*nodes, (std::set<std::string>{"gpu1", "gpu2"}));
  EXPECT_FALSE(
      ParsePrometheusNodes(R"({"status":"error","error":"parse error at char 3"})", "node"));
  EXPECT_FALSE(ParsePrometheusNodes(
      R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "node"));
  EXPECT_FALSE(ParsePrometheusNodes("<html>", "node"));
  // Fields of another type than Prometheus sends are refused or skipped, never thrown on.
  EXPECT_FALSE(ParsePrometheusNodes(R"({"status":1,"error":["x"]})", "node"));
  EXPECT_FALSE(
      ParsePrometheusNodes(R"({"status":"success","data":{"resultType":7,"result":[]}})", "node"));
  auto odd = ParsePrometheusNodes(R"({"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"node":5,"instance":"gpu4:9100"},"value":[1,"1"]},
    {"metric":{"node":null,"instance":{}},"value":[1,"1"]}]}})",
                                  "node");
  ASSERT_TRUE(odd) << odd.error().message;
  EXPECT_EQ(*odd, (std::set<std::string>{"gpu4"}));
  EXPECT_TRUE(ParsePrometheusNodes(
                  R"({"status":"success","data":{"resultType":"vector","result":[]}})", "node")
                  .value()
                  .empty());
}

class NoScheduler final : public testing::ReadOnlyScheduler {
 public:
  Result<std::vector<remediate::SchedulerNode>> Nodes() override {
    return std::vector<remediate::SchedulerNode>{{"gpu1", "idle", false, "", {"gpu"}}};
  }
};

TEST(PrometheusAlerts, AnAlertOnTheTimelineDetectsButDoesNotTakeOut) {
  std::string answer = R"({"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"node":"gpu9"},"value":[1,"1"]}]}})";  // firing before the injection: not ours
  testing::HttpFixture prometheus([&answer](const testing::FixtureRequest&) {
    return testing::FixtureResponse{200, answer};
  });
  sys::CurlHttpClient http;
  PrometheusAlerts alerts(http, prometheus.Url() + "/",
                          "max by (node) (ALERTS{alertstate=\"firing\"})");
  NoScheduler scheduler;
  ManualClock clock(WallTime(std::chrono::milliseconds(1'800'000'000'000)));
  Watcher watcher(scheduler, clock, "gpu", &alerts);
  ASSERT_TRUE(watcher.Baseline());
  EXPECT_TRUE(watcher.Poll().empty());
  answer = kTwoNodes;
  clock.Advance(1s);
  const auto seen = watcher.Poll();
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0].kind, ObservationKind::kAlert);
  EXPECT_EQ(seen[0].node, "gpu1");
  EXPECT_EQ(seen[0].detail, "prometheus: max by (node) (ALERTS{alertstate=\"firing\"})");
  EXPECT_TRUE(watcher.Poll().empty());  // still firing: said once
  const auto requests = prometheus.Requests();
  EXPECT_EQ(requests.back().Path(), "/api/v1/query");
  EXPECT_EQ(requests.back().Query(),
            "query=max%20by%20%28node%29%20%28ALERTS%7Balertstate%3D%22firing%22%7D%29");
  const Timeline t = BuildTimeline("gpu1", clock.Now() - 2s, seen, clock.Now());
  EXPECT_EQ(t.detected, Duration(2s));
  EXPECT_EQ(t.detected_by, "alert: prometheus: max by (node) (ALERTS{alertstate=\"firing\"})");
  EXPECT_FALSE(t.out_of_service);
}

// POSTs from another thread while this one serves, as the runner's loop does.
sys::HttpResponse Post(WebhookAlerts& hook, const std::string& body,
                       const std::string& method = "POST") {
  sys::HttpResponse answer;
  std::atomic<bool> done{false};
  std::thread client([&] {
    sys::CurlHttpClient http;
    auto r = http.Send({.method = method,
                        .url = "http://127.0.0.1:" + std::to_string(hook.Port()) + "/",
                        .headers = {"Content-Type: application/json"},
                        .body = body});
    if (r) answer = *r;
    done = true;
  });
  // The hook serves while it is asked whether it fired; the client's answer ends the wait.
  (void)testing::WaitUntil(
      [&] {
        (void)hook.Firing();
        return done.load();
      },
      std::chrono::seconds(5), std::chrono::milliseconds(10));
  client.join();
  return answer;
}

TEST(WebhookAlerts, FiringUntilResolvedAndGarbageRefused) {
  auto hook = WebhookAlerts::Listen("127.0.0.1:0");
  ASSERT_TRUE(hook) << hook.error().message;
  EXPECT_TRUE((*hook)->Firing().value().empty());
  auto r = Post(**hook, R"({"version":"4","status":"firing","alerts":[
    {"status":"firing","labels":{"alertname":"GpuXid","node":"gpu1"}},
    {"status":"firing","labels":{"alertname":"NodeDown","instance":"gpu2:9100"}}]})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ((*hook)->Firing().value(), (std::set<std::string>{"gpu1", "gpu2"}));
  r = Post(**hook, R"({"alerts":[{"status":"resolved","labels":{"node":"gpu1"}}]})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ((*hook)->Firing().value(), (std::set<std::string>{"gpu2"}));
  // Labels or a status of the wrong type: the alert is read as far as it can be, not thrown on.
  r = Post(**hook, R"({"alerts":[{"status":3,"labels":{"node":["gpu5"],"instance":"gpu6:1"}}]})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ((*hook)->Firing().value(), (std::set<std::string>{"gpu2", "gpu6"}));
  r = Post(**hook, R"({"alerts":[{"status":"resolved","labels":{"node":"gpu6"}}]})");
  EXPECT_EQ((*hook)->Firing().value(), (std::set<std::string>{"gpu2"}));
  EXPECT_EQ(Post(**hook, "{not json").status, 400);
  EXPECT_EQ(Post(**hook, "", "GET").status, 405);
  EXPECT_EQ(Post(**hook, std::string(2 << 20, 'x')).status, 413);
  EXPECT_EQ((*hook)->Firing().value(), (std::set<std::string>{"gpu2"}));
}

TEST(WebhookAlerts, AnyOfSeveralSignals) {
  auto hook = WebhookAlerts::Listen("127.0.0.1:0");
  ASSERT_TRUE(hook);
  ASSERT_TRUE((*hook)->Take(R"({"alerts":[{"labels":{"node":"gpu3"}}]})"));
  testing::HttpFixture prometheus([](const testing::FixtureRequest&) {
    return testing::FixtureResponse{200, kTwoNodes};
  });
  sys::CurlHttpClient http;
  PrometheusAlerts prom(http, prometheus.Url(), "q");
  AnyAlerts any;
  any.Add(&prom);
  any.Add(hook->get());
  EXPECT_EQ(any.Firing().value(), (std::set<std::string>{"gpu1", "gpu2", "gpu3"}));
  EXPECT_EQ(any.Describe(), "prometheus: q or webhook alert");
}

}  // namespace
}  // namespace cmax::reliability
