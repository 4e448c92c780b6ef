// `cmax agent`'s whole work, behind its thin command file: the settings checked, the XID
// catalogue read, the store opened with a short busy timeout, the metrics server listening, the
// hooks the command gives (remediation, condition publishing) made on that store, and the agent
// run until SIGTERM, SIGINT or its watchdog stops it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax::store {
class Store;
}

namespace cmax::health {

struct AgentServiceOptions {
  std::string node;                               // default: the hostname
  std::string metrics_listen = "127.0.0.1:9470";  // "none": no server
  bool from_boot = false;
  bool nvml = true;
  std::string nvml_lib;
  double nvml_interval_s = 10.0;
  double max_rss_mb = 64.0;
  double max_cpu_percent = 25.0;
  std::string xid_catalog;
  std::vector<std::string> devices;
};

struct AgentServiceIo {
  std::string db_path;
  // What to run after each flush, made once the store is open (empty function: nothing).
  std::function<Result<std::function<void()>>(store::Store& store, const std::string& node)>
      make_hooks;
  std::function<void(std::string_view)> out;  // the metrics URL and the ready line
};

// The agent's exit code: 0 when stopped by a signal, 75 when its watchdog stopped it. Errors:
// kInvalidArgument for settings, the catalogue or the hooks' settings; others when the store or
// the metrics port cannot be had.
Result<int> RunAgentService(const AgentServiceOptions& options, const AgentServiceIo& io);

}  // namespace cmax::health
