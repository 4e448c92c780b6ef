#include "remediate/agent_hooks.hpp"

#include "core/log.hpp"

namespace cmax::remediate {

Result<std::unique_ptr<AgentHooks>> AgentHooks::Make(const AgentHookOptions& options,
                                                     const std::string& db_path,
                                                     store::Store& store, sys::FileSystem& fs,
                                                     sys::ProcessRunner& runner, Clock& clock) {
  std::unique_ptr<AgentHooks> h(new AgentHooks());
  if (options.remediate || options.remediate_dry_run) {
    // This node's own controller. Its circuit breaker sees the rest of the fleet through the
    // scheduler's cmax-owned drains.
    ControllerSettings settings = options.controller;
    settings.act = options.remediate;
    settings.dry_run = options.remediate_dry_run;
    settings.nodes = {options.node};
    auto config = BuildControllerConfig(settings, fs);
    if (!config) return Fail(ErrorCode::kInvalidArgument, "{}", config.error().message);
    auto taken = ControllerLock::Take(db_path);
    if (!taken) return tl::unexpected(taken.error());
    h->lock_.emplace(std::move(*taken));
    auto made = MakeScheduler(settings, runner, clock, KubeEnvironment());
    if (!made) return Fail(ErrorCode::kInvalidArgument, "{}", made.error().message);
    h->scheduler_ = std::move(*made);
    h->controller_.emplace(store, *h->scheduler_->scheduler, runner, clock, *config);
    AgentHooks* self = h.get();
    h->hooks_.emplace_back([self] {
      if (auto step = self->controller_->Step(); !step) {
        log::Warn("agent: remediation step: {}", step.error().message);
      }
    });
  }
  if (options.publish_conditions) {
    ControllerSettings settings = options.controller;
    settings.scheduler = "kubernetes";
    auto made = MakeScheduler(settings, runner, clock, KubeEnvironment());
    if (!made) return Fail(ErrorCode::kInvalidArgument, "{}", made.error().message);
    h->kube_ = std::move(*made);
    h->publisher_.emplace(*h->kube_->kube);
    AgentHooks* self = h.get();
    store::Store* conditions_store = &store;
    const std::string node = options.node;
    // Before remediation: a central controller learns of the fault as soon as this node does.
    h->hooks_.insert(h->hooks_.begin(), [self, conditions_store, node] {
      auto conditions = conditions_store->LoadConditions(node);
      if (!conditions) {
        log::Warn("agent: cannot read conditions to publish: {}", conditions.error().message);
        return;
      }
      if (auto r = self->publisher_->Publish(node, *conditions); !r) {
        log::Warn("agent: publishing conditions to Kubernetes: {}", r.error().message);
      } else if (*r != "unchanged") {
        log::Info("agent: {}", *r);
      }
    });
  }
  return h;
}

void AgentHooks::AfterFlush() {
  for (const auto& hook : hooks_) hook();
}

}  // namespace cmax::remediate
