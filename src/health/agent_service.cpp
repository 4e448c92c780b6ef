#include "health/agent_service.hpp"

#include <cmath>
#include <optional>

#include "health/agent.hpp"
#include "health/xid_catalog.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/metrics_server.hpp"

namespace cmax::health {

Result<int> RunAgentService(const AgentServiceOptions& options, const AgentServiceIo& io) {
  for (double value : {options.nvml_interval_s, options.max_rss_mb, options.max_cpu_percent}) {
    if (!std::isfinite(value) || value <= 0) {
      return Fail(ErrorCode::kInvalidArgument, "intervals and limits must be positive numbers");
    }
  }
  const XidCatalog* catalog = &XidCatalog::Builtin();
  std::optional<XidCatalog> custom;
  if (!options.xid_catalog.empty()) {
    auto text = sys::LocalFileSystem().ReadFile(options.xid_catalog, 16 << 20);
    auto parsed = text ? XidCatalog::Parse(*text) : tl::unexpected(text.error());
    if (!parsed) {
      return Fail(ErrorCode::kInvalidArgument, "{}: {}", options.xid_catalog,
                  parsed.error().message);
    }
    custom = std::move(*parsed);
    catalog = &*custom;
  }
  // A short busy timeout: when another process holds the store the agent keeps its changes
  // and tries again at the next flush instead of stalling its loop for seconds.
  auto store = store::Store::Open({.path = io.db_path, .busy_timeout_ms = 200});
  if (!store) return SystemFailure(store.error());
  std::optional<sys::MetricsServer> server;
  if (options.metrics_listen != "none") {
    auto listening = sys::MetricsServer::Listen(options.metrics_listen);
    if (!listening) return SystemFailure(listening.error());
    server.emplace(std::move(*listening));
  }
  AgentOptions agent_options;
  agent_options.node = options.node.empty() ? sys::Hostname() : options.node;
  agent_options.from_boot = options.from_boot;
  agent_options.devices = options.devices;
  agent_options.nvml = options.nvml;
  agent_options.nvml_lib = options.nvml_lib;
  agent_options.nvml_interval = SecondsAsDuration(options.nvml_interval_s);
  agent_options.limits.max_rss_bytes = static_cast<uint64_t>(options.max_rss_mb * 1048576.0);
  agent_options.limits.max_cpu_fraction = options.max_cpu_percent / 100.0;
  if (io.make_hooks) {
    auto hooks = io.make_hooks(*store, agent_options.node);
    if (!hooks) return tl::unexpected(hooks.error());
    agent_options.after_flush = std::move(*hooks);
  }
  // The ready line, once the sources are open: a fault written after it is seen.
  agent_options.on_ready = [&io, nvml = agent_options.nvml](const AgentReadiness& r) {
    if (io.out) io.out(ReadyLine(r, nvml));
  };
  Agent agent(agent_options, *catalog, *store);
  if (server && io.out) {
    // The port, once: a test or a script that asked for port 0 learns which it got.
    io.out("metrics on http://" +
           options.metrics_listen.substr(0, options.metrics_listen.rfind(':')) + ":" +
           std::to_string(server->Port()) + "/metrics");
  }
  return agent.Run(server ? &*server : nullptr);
}

}  // namespace cmax::health
