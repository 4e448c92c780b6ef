// The Kubernetes deployment end to end, minus the API server (the in-test stand-in takes its
// place): `cmax agent --publish-conditions` reads an Xid from the real /dev/kmsg and writes it
// onto its Node; `cmax remediate run --scheduler kubernetes --conditions-from kubernetes` (the
// controller Deployment) reads it from there, cordons and taints the node, evicts its pods and
// starts the validation Job; when the Job completes it uncordons the node.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>
#include <thread>

#include "support/fake_kube_api.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

template <typename Pred>
bool Eventually(Pred pred) {
  return testing::WaitUntil(pred, 10s, 50ms);
}

TEST(AgentKube, AgentPublishesAndTheCentralControllerActs) {
  testing::TempDir dir;
  testing::FakeKubeApi api;
  api.AddNode("gpu1");
  api.AddNode("gpu2");
  api.AddPod("team", "trainer-0", "gpu2", "StatefulSet");
  sys::LocalFileSystem fs;
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("token"), "token-1", 0600));
  const std::vector<std::string> kube = {"--kube-api", api.Url(), "--kube-token-file",
                                         dir.File("token")};

  std::vector<std::string> agent = {
      CMAX_BINARY, "--db",      dir.File("agent.db"), "agent", "--node",
      "gpu2",      "--no-nvml", "--metrics-listen",   "none",  "--publish-conditions"};
  agent.insert(agent.end(), kube.begin(), kube.end());
  auto pid = sys::SpawnDaemon({.argv = agent, .log_path = dir.File("agent.log")});
  ASSERT_TRUE(pid) << pid.error().message;
  // The agent publishes once at start (its conditions: none yet).
  ASSERT_TRUE(Eventually(
      [&] { return api.Node("gpu2")["metadata"]["annotations"].contains("cmax.dev/conditions"); }));
  {
    std::ofstream kmsg("/dev/kmsg");
    kmsg << "<3>NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=cmax-test, An uncorrectable double "
            "bit error\n";
  }
  ASSERT_TRUE(Eventually([&] {
    const json node = api.Node("gpu2");
    const json& conditions = node["status"]["conditions"];
    return conditions.size() == 2 && conditions[1]["reason"] == "Xid48";
  }));
  ::kill(*pid, SIGTERM);

  sys::PosixProcessRunner runner;
  std::vector<std::string> controller = {CMAX_BINARY,
                                         "--db",
                                         dir.File("controller.db"),
                                         "remediate",
                                         "run",
                                         "--once",
                                         "--act",
                                         "--scheduler",
                                         "kubernetes",
                                         "--conditions-from",
                                         "kubernetes",
                                         "--validation-command",
                                         "dcgmi diag -r 2",
                                         "--reset-command",
                                         "true",
                                         "--breaker-percent",
                                         "100"};
  controller.insert(controller.end(), kube.begin(), kube.end());
  auto run = [&] {
    sys::ProcessSpec spec{.argv = controller};
    spec.env_add = {"HOME=" + dir.Path(), "KUBECONFIG="};
    auto r = runner.Run(spec);
    EXPECT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->exit_code, 0) << r->stderr_text;
  };
  run();
  json node = api.Node("gpu2");
  EXPECT_TRUE(node["spec"]["unschedulable"].get<bool>());
  EXPECT_FALSE(api.HasPod("team/trainer-0"));
  EXPECT_FALSE(api.Job("cmax/cmax-validate-gpu2").is_null());
  EXPECT_FALSE(api.Node("gpu1")["spec"].contains("unschedulable"));

  api.FinishJob("cmax/cmax-validate-gpu2", true);
  run();
  node = api.Node("gpu2");
  EXPECT_FALSE(node["spec"].contains("unschedulable"));
  EXPECT_TRUE(node["spec"]["taints"].empty());
}

}  // namespace
}  // namespace cmax
