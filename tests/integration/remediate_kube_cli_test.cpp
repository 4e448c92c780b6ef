// `cmax remediate run --scheduler kubernetes` through the real binary against the stand-in API
// server (tests/support/fake_kube_api.hpp): a fault cordons the node and starts a validation
// Job; when the Job completes the next run uncordons it. Also what the command says when it
// cannot find an API server, and that the token never reaches its output.
#include <algorithm>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "remediate/journal.hpp"
#include "remediate/kube_conditions.hpp"
#include "store/store.hpp"
#include "support/conditions.hpp"
#include "support/fake_kube_api.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class KubeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("token"), "token-1", 0600));
    api_.AddNode("gpu1");
    api_.AddNode("gpu2");
    api_.AddPod("team", "trainer-0", "gpu2", "StatefulSet");
  }
  sys::ProcessResult Cmax(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    return testing::RunCmaxWithoutMachineKubeconfig(runner_, dir_.Path(), args, std::move(env));
  }
  std::vector<std::string> Run() {
    return {"remediate",
            "run",
            "--once",
            "--act",
            "--scheduler",
            "kubernetes",
            "--kube-api",
            api_.Url(),
            "--kube-token-file",
            dir_.File("token"),
            "--validation-command",
            "dcgmi diag -r 2",
            "--reset-command",
            "true",
            "--breaker-percent",
            "100",
            "-vv"};
  }
  void Xid(const std::string& node, int code, const std::string& action) {
    auto s = store::Store::Open({.path = dir_.File("cmax.db")});
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_TRUE(
        s->SaveConditions({testing::XidCondition(node, code, action, SystemClock().Now())}, {}));
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  testing::FakeKubeApi api_;
  sys::CurlHttpClient http_;
  SystemClock clock_;
};

TEST_F(KubeCliTest, FaultToCordonToValidationJobToUncordon) {
  Xid("gpu2", 48, "reset-gpu");
  auto r = Cmax(Run());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  json node = api_.Node("gpu2");
  EXPECT_TRUE(node["spec"]["unschedulable"].get<bool>());
  EXPECT_EQ(node["spec"]["taints"][0]["key"], "cmax.dev/quarantine");
  EXPECT_FALSE(api_.HasPod("team/trainer-0"));
  const json job = api_.Job("cmax/cmax-validate-gpu2");
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["spec"]["template"]["spec"]["containers"][0]["command"][2], "dcgmi diag -r 2");
  EXPECT_EQ(r.stderr_text.find("token-1"), std::string::npos);  // even at -vv
  EXPECT_EQ(r.stdout_text.find("token-1"), std::string::npos);

  r = Cmax(Run());  // still running: nothing changes
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_TRUE(api_.Node("gpu2")["spec"]["unschedulable"].get<bool>());

  api_.FinishJob("cmax/cmax-validate-gpu2", true);
  r = Cmax(Run());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  node = api_.Node("gpu2");
  EXPECT_FALSE(node["spec"].contains("unschedulable"));
  EXPECT_TRUE(node["spec"]["taints"].empty());
  EXPECT_TRUE(api_.Job("cmax/cmax-validate-gpu2").is_null());
  r = Cmax({"remediate", "status"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("REINTRODUCED"), std::string::npos) << r.stdout_text;
  EXPECT_FALSE(api_.Node("gpu1")["spec"].contains("unschedulable"));
}

TEST_F(KubeCliTest, SaysHowToReachAnApiServer) {
  auto r = Cmax({"remediate", "run", "--once", "--dry-run", "--scheduler", "kubernetes"});
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("--kube-api"), std::string::npos) << r.stderr_text;

  ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("kubeconfig"), R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: 'https://k:6443'}}]
users: [{name: u, user: {exec: {command: aws}}}]
)",
                                  0600));
  r = Cmax({"remediate", "run", "--once", "--dry-run", "--scheduler", "kubernetes"},
           {"KUBECONFIG=" + dir_.File("kubeconfig")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("plugin"), std::string::npos) << r.stderr_text;

  r = Cmax({"remediate", "run", "--once", "--dry-run", "--scheduler", "nomad"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(KubeCliTest, WrongTokenIsAnErrorThatDoesNotShowIt) {
  api_.token = "another";
  Xid("gpu2", 48, "reset-gpu");
  auto r = Cmax(Run());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stderr_text.find("401"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("token-1"), std::string::npos);
  EXPECT_FALSE(api_.Node("gpu2")["spec"].contains("unschedulable"));
}

// The controller Deployment's own command line, as shipped in deploy/kubernetes, runs (against
// the stand-in API server, with a token file instead of the pod's account).
TEST_F(KubeCliTest, TheShippedDeploymentCommandRuns) {
  const YAML::Node docs =
      YAML::LoadAllFromFile(std::string(CMAX_TEST_DATA) +
                            "/../../deploy/kubernetes/controller-deployment.yaml")
          .back();
  ASSERT_EQ(docs["kind"].as<std::string>(), "Deployment");
  const YAML::Node command = docs["spec"]["template"]["spec"]["containers"][0]["command"];
  std::vector<std::string> args;
  for (size_t i = 3; i < command.size(); ++i) args.push_back(command[i].as<std::string>());
  ASSERT_EQ(command[1].as<std::string>(), "--db");
  ASSERT_EQ(args[0], "remediate");
  args.insert(args.end(),
              {"--once", "--kube-api", api_.Url(), "--kube-token-file", dir_.File("token")});
  // Eleven nodes: one out is under the shipped breaker's 10%.
  for (int i = 3; i <= 11; ++i) api_.AddNode("gpu" + std::to_string(i));
  // What gpu2's agent would have published.
  // Nothing to reset: validated straight away.
  const NodeCondition c = testing::XidCondition("gpu2", 13, "restart-app", SystemClock().Now());
  const std::string published = remediate::EncodeConditions({c});
  remediate::KubeApi api(http_, fs_, clock_, {.server = api_.Url(), .token = "token-1"}, {});
  ASSERT_TRUE(api.PatchNode("gpu2", [&](const json&, std::string&) {
    json patch;
    patch["metadata"]["annotations"]["cmax.dev/conditions"] = published;
    return patch;
  }));
  auto r = Cmax(args);
  EXPECT_NE(r.exit_code, 2) << r.stderr_text;  // every flag it ships is one cmax knows
  EXPECT_TRUE(api_.Node("gpu2")["spec"]["unschedulable"].get<bool>()) << r.stderr_text;
  const json job = api_.Job("cmax/cmax-validate-gpu2");
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(
      job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 8);
}

}  // namespace
}  // namespace cmax
