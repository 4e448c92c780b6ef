// `cmax reliability run --scheduler kubernetes` through the binary, against the stand-in API
// server: the provider (played by the test) cordons the node some time after the injection;
// the run sees the cordon and passes. Another provider only sets a node condition: detected,
// but the node stays schedulable, so the step fails with "no drain". The record goes to a file
// standing in for /dev/kmsg (the test is about the Kubernetes observer).
#include <fstream>
#include <gtest/gtest.h>
#include <thread>

#include "store/store.hpp"
#include "support/fake_kube_api.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/http_client.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class ReliabilityKubeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "injecting needs root";
    node_ = sys::Hostname();  // the injection lands here, so the node is this host
    api_.AddNode(node_);
    api_.AddNode("other");
    ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("token"), "token-1", 0600));
    std::ofstream(dir_.File("kmsg")).close();
    std::ofstream(dir_.File("scenario.yaml"))
        << "bars: {detect_s: 3, out_of_service_s: 3}\npoll_s: 0.1\nservice_partition: service\n"
        << "steps: [{name: xid79, inject: xid, code: 79, node: " << node_
        << ", gpu: '0000:17:00.0'}]\n";
  }
  // Runs the scenario in the background; `provider` acts on the API meanwhile.
  sys::ProcessResult Run(const std::function<void()>& provider) {
    sys::ProcessSpec spec{.argv = {CMAX_BINARY, "--db", dir_.File("cmax.db"), "reliability", "run",
                                   "--scenario", dir_.File("scenario.yaml"), "--yes", "--kmsg",
                                   dir_.File("kmsg"), "--scheduler", "kubernetes", "--kube-api",
                                   api_.Url(), "--kube-token-file", dir_.File("token")}};
    spec.timeout = 60s;
    sys::ProcessResult result;
    std::thread run([&] {
      auto r = runner_.Run(spec);
      if (r) result = *r;
    });
    // Wait for the injection and the watcher's next look at the nodes, then let the provider act.
    EXPECT_TRUE(testing::WaitUntil(
        [&] { return !fs_.ReadFile(dir_.File("kmsg"), 1 << 20).value_or("").empty(); }, 10s));
    const int looks = api_.NodeLists();
    EXPECT_TRUE(testing::WaitUntil([&] { return api_.NodeLists() > looks; }, 10s));
    provider();
    run.join();
    return result;
  }
  std::vector<Finding> Findings() {
    auto s = store::Store::Open({.path = dir_.File("cmax.db")});
    return s->LoadRun(s->LatestRunId("reliability").value()).value().findings;
  }
  // What kubectl would do to the node: a merge patch, as the provider's remediation sends.
  void Patch(const json& patch) {
    sys::CurlHttpClient http;
    json current = api_.Node(node_);
    json body = patch;
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"];
    auto r = http.Send(
        {.method = "PATCH",
         .url = api_.Url() + "/api/v1/nodes/" + node_,
         .headers = {"Authorization: Bearer token-1", "Content-Type: application/merge-patch+json"},
         .body = body.dump()});
    ASSERT_TRUE(r && r->status == 200);
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  testing::FakeKubeApi api_;
  std::string node_;
};

TEST_F(ReliabilityKubeTest, ACordonInTimePasses) {
  const auto r = Run([&] { Patch({{"spec", {{"unschedulable", true}}}}); });
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  const auto findings = Findings();
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].status, CheckStatus::kPass) << findings[0].observed;
  EXPECT_NE(fs_.ReadFile(dir_.File("kmsg"), 1 << 20).value_or("").find("Xid (PCI:0000:17:00): 79"),
            std::string::npos);
}

TEST_F(ReliabilityKubeTest, AConditionAloneIsDetectedButFailsWithNoDrain) {
  const auto r = Run([&] {
    sys::CurlHttpClient http;
    const json patch = {
        {"status",
         {{"conditions", {{{"type", "GpuXidError"}, {"status", "True"}, {"reason", "Xid79"}}}}}}};
    auto answer = http.Send({.method = "PATCH",
                             .url = api_.Url() + "/api/v1/nodes/" + node_ + "/status",
                             .headers = {"Authorization: Bearer token-1",
                                         "Content-Type: application/strategic-merge-patch+json"},
                             .body = patch.dump()});
    ASSERT_TRUE(answer && answer->status == 200);
  });
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  const auto findings = Findings();
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].status, CheckStatus::kFail);
  EXPECT_NE(findings[0].observed.find("node condition GpuXidError"), std::string::npos)
      << findings[0].observed;
  EXPECT_NE(findings[0].observed.find("no drain within 3.00s"), std::string::npos)
      << findings[0].observed;
}

}  // namespace
}  // namespace cmax
