// deploy/kubernetes/active-checks-cronjob.yaml: weekly, at a priority below every tenant's
// (never preempting), one whole node a pod, and its command one that cmax runs as shipped.
#include <gtest/gtest.h>
#include <string>
#include <yaml-cpp/yaml.h>

#include "core/strings.hpp"
#include "support/temp_dir.hpp"
#include "sys/process_runner.hpp"

namespace cmax::active {
namespace {

std::vector<YAML::Node> Manifest() {
  return YAML::LoadAllFromFile(std::string(CMAX_TEST_DATA) +
                               "/../../deploy/kubernetes/active-checks-cronjob.yaml");
}

YAML::Node Of(const std::vector<YAML::Node>& docs, const std::string& kind) {
  for (const YAML::Node& d : docs) {
    if (d["kind"].as<std::string>() == kind) return d;
  }
  return {};
}

TEST(ActiveChecksCronJob, WeeklyAtTheLowestPriorityOneWholeNodeAPod) {
  const auto docs = Manifest();
  const YAML::Node priority = Of(docs, "PriorityClass");
  const YAML::Node cron = Of(docs, "CronJob");
  ASSERT_TRUE(priority && cron);
  EXPECT_LT(priority["value"].as<int>(), 0);  // the default class is 0: tenants go first
  EXPECT_EQ(priority["preemptionPolicy"].as<std::string>(), "Never");
  EXPECT_FALSE(priority["globalDefault"].as<bool>());

  const std::string cron_line = cron["spec"]["schedule"].as<std::string>();
  const std::vector<std::string_view> schedule = SplitFields(cron_line);
  ASSERT_EQ(schedule.size(), 5U);
  EXPECT_NE(schedule[4], "*");  // one day of the week
  EXPECT_EQ(cron["spec"]["concurrencyPolicy"].as<std::string>(), "Forbid");
  const YAML::Node pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["priorityClassName"].as<std::string>(),
            priority["metadata"]["name"].as<std::string>());
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  EXPECT_EQ(pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
               ["topologyKey"]
                   .as<std::string>(),
            "kubernetes.io/hostname");
  const YAML::Node resources = pod["containers"][0]["resources"];
  EXPECT_EQ(resources["requests"]["nvidia.com/gpu"].as<int>(),
            resources["limits"]["nvidia.com/gpu"].as<int>());
  EXPECT_GE(resources["requests"]["nvidia.com/gpu"].as<int>(), 8);
}

TEST(ActiveChecksCronJob, ItsCommandRunsAsShipped) {
  const YAML::Node container =
      Of(Manifest(), "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
  testing::TempDir dir;
  std::vector<std::string> argv = {CMAX_BINARY};
  const YAML::Node command = container["command"];
  ASSERT_EQ(command[0].as<std::string>(), "cmax");
  for (size_t i = 1; i < command.size(); ++i) {
    std::string arg = command[i].as<std::string>();
    if (arg == "$(NODE_NAME)") arg = "gpu7";                          // what Kubernetes puts there
    if (arg == "/var/lib/cmax/agent.db") arg = dir.File("agent.db");  // the host's store
    argv.push_back(arg);
  }
  argv.insert(argv.end(), {"--nvml-lib", dir.File("no-libnvidia-ml.so"), "--json"});
  sys::PosixProcessRunner runner;
  auto ran = runner.Run({.argv = argv});
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 0) << ran->stderr_text;
  EXPECT_NE(ran->stdout_text.find("\"host\": \"gpu7\""), std::string::npos) << ran->stdout_text;
  EXPECT_NE(ran->stdout_text.find("active checks (quick)"), std::string::npos);
}

}  // namespace
}  // namespace cmax::active
