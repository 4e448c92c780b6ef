// What `cmax agent` runs after each flush that stored a change (and every 2 s) when asked:
// this node's own remediation controller (--remediate, --remediate-dry-run), and its conditions
// published onto its Kubernetes Node for a central controller (--publish-conditions), published
// first so that a central controller learns of a fault as soon as this node does. The object
// owns the controller, its lock and the scheduler clients for as long as the agent runs.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "remediate/kube_conditions.hpp"
#include "remediate/settings.hpp"
#include "store/store.hpp"

namespace cmax::remediate {

struct AgentHookOptions {
  std::string node;
  bool remediate = false;
  bool remediate_dry_run = false;
  bool publish_conditions = false;
  ControllerSettings controller;  // the scheduler, the policy and the --kube-* settings
};

class AgentHooks {
 public:
  // Errors: kInvalidArgument for settings that cannot make a controller or a Kubernetes client;
  // others when the controller's lock is held.
  static Result<std::unique_ptr<AgentHooks>> Make(const AgentHookOptions& options,
                                                  const std::string& db_path, store::Store& store,
                                                  sys::FileSystem& fs, sys::ProcessRunner& runner,
                                                  Clock& clock);
  // Nothing to run: neither remediation nor publishing was asked for.
  bool Empty() const { return hooks_.empty(); }
  // Runs each hook; a failure is a warning (the agent goes on watching).
  void AfterFlush();

 private:
  AgentHooks() = default;
  std::unique_ptr<SchedulerChoice> scheduler_;
  std::unique_ptr<SchedulerChoice> kube_;
  std::optional<KubeConditionPublisher> publisher_;
  std::optional<Controller> controller_;
  std::optional<ControllerLock> lock_;
  std::vector<std::function<void()>> hooks_;
};

}  // namespace cmax::remediate
