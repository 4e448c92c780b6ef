#include "lab/views.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_text.hpp"
#include "core/strings.hpp"

namespace cmax::lab {
namespace {

using Json = nlohmann::ordered_json;

// Node names and sinfo's messages come from outside: invalid UTF-8 is replaced, not thrown,
// and C1 controls are escaped.
std::string Dump(const Json& value) {
  return JsonText(value);
}

Json DaemonsJson(const std::vector<Daemon>& daemons) {
  Json list = Json::array();
  for (const Daemon& d : daemons) list.push_back({{"name", d.name}, {"pid", d.pid}});
  return list;
}

}  // namespace

std::string LabDir(const std::string& dir, const std::string& cwd, const std::string& data_dir) {
  const std::string whole = dir.empty()                         ? data_dir + "/lab"
                            : dir.front() == '/' || cwd.empty() ? dir
                                                                : cwd + "/" + dir;
  std::string out = std::filesystem::path(whole).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

LabView UpView(const LabSpec& asked, const Result<UpResult>& result, bool json) {
  LabView v;
  if (!result) {
    v.err = "cmax lab up: " + result.error().message + "\n";
    v.exit_code = result.error().code == ErrorCode::kInvalidArgument ? 2 : 3;
    return v;
  }
  const LabSpec& running = result->state.spec;
  const std::string nodes = NodeRange(1, running.nodes + running.spares);
  if (json) {
    v.out = Dump({{"schema", "cmax.lab/v1"},
                  {"dir", running.dir},
                  {"already_running", result->already_running},
                  {"took_s", std::chrono::duration<double>(result->took).count()},
                  {"nodes", NodeNames(running)},
                  {"spares", running.spares},
                  {"gpus_per_node", running.gpus_per_node},
                  {"controller_port", running.controller_port},
                  {"slurm_conf", PathsFor(running.dir).slurm_conf},
                  {"daemons", DaemonsJson(result->state.daemons)}});
    return v;
  }
  if (result->already_running) {
    v.out = fmt::format(
        "a lab is already running in {} (started {}): {} with {} GPUs each; nothing started.\n"
        "`cmax lab down --dir {}` stops it.\n",
        running.dir, FormatIso8601(result->state.started_at), nodes, running.gpus_per_node,
        running.dir);
    if (running.nodes != asked.nodes || running.spares != asked.spares) {
      v.err = fmt::format("note: it has {} nodes and {} spares, not the {} and {} asked for\n",
                          running.nodes, running.spares, asked.nodes, asked.spares);
    }
  } else {
    v.out = fmt::format(
        "lab up in {}: {} idle ({} in partition gpu{}), {} GPUs each, controller "
        "127.0.0.1:{}; took {}\n",
        running.dir, nodes, running.nodes,
        running.spares > 0 ? fmt::format(", {} in partition spare", running.spares) : "",
        running.gpus_per_node, running.controller_port, FormatDuration(result->took));
  }
  v.out += EnvLine(running.dir) + "\n";
  return v;
}

LabView StatusView(const std::string& dir, const Result<LabStatus>& status, bool json) {
  LabView v;
  if (!status) {
    const bool none = status.error().code == ErrorCode::kNotFound;
    if (json && none) {
      v.out = Dump({{"schema", "cmax.lab/v1"}, {"dir", dir}, {"running", false}});
    } else {
      v.err = "cmax lab status: " + status.error().message + "\n";
    }
    v.exit_code = none ? 1 : 3;
    return v;
  }
  const bool all_alive = std::all_of(status->daemons.begin(), status->daemons.end(),
                                     [](const DaemonStatus& d) { return d.alive; });
  v.exit_code = all_alive ? 0 : 1;
  if (json) {
    Json daemons = Json::array();
    for (const DaemonStatus& d : status->daemons) {
      daemons.push_back({{"name", d.daemon.name}, {"pid", d.daemon.pid}, {"alive", d.alive}});
    }
    v.out = Dump({{"schema", "cmax.lab/v1"},
                  {"dir", dir},
                  {"running", status->Running()},
                  {"healthy", all_alive},
                  {"started_at", FormatIso8601(status->state.started_at)},
                  {"slurm_conf", PathsFor(dir).slurm_conf},
                  {"daemons", daemons},
                  {"nodes", status->nodes},
                  {"nodes_error", status->nodes_error}});
    return v;
  }
  v.out = fmt::format("lab in {}: {} (started {})\n", dir,
                      all_alive ? "running" : (status->Running() ? "degraded" : "stopped"),
                      FormatIso8601(status->state.started_at));
  for (const DaemonStatus& d : status->daemons) {
    v.out += fmt::format("  {:<14} pid {:<8} {}\n", d.daemon.name, d.daemon.pid,
                         d.alive ? "running" : "gone");
  }
  if (!status->nodes_error.empty()) v.out += "  nodes: unknown (" + status->nodes_error + ")\n";
  for (const auto& [node, state] : status->nodes) {
    v.out += fmt::format("  node {:<9} {}\n", node, SanitizeUtf8(state));
  }
  v.out += EnvLine(dir) + "\n";
  return v;
}

LabView DownView(const std::string& dir, const Result<DownResult>& result, bool json) {
  LabView v;
  if (!result) {
    if (result.error().code == ErrorCode::kNotFound) {
      v.out = json ? Dump({{"schema", "cmax.lab/v1"}, {"dir", dir}, {"stopped", Json::array()}})
                   : "no lab in " + dir + "; nothing to stop\n";
      return v;
    }
    v.err = "cmax lab down: " + result.error().message + "\n";
    v.exit_code = 3;
    return v;
  }
  if (json) {
    v.out = Dump({{"schema", "cmax.lab/v1"},
                  {"dir", dir},
                  {"stopped", result->stopped},
                  {"already_gone", result->already_gone},
                  {"not_ours", result->not_ours},
                  {"stray_processes_killed", result->stray_processes_killed}});
    return v;
  }
  v.out =
      fmt::format("lab in {} stopped: {}\n", dir,
                  result->stopped.empty() ? "nothing was running" : Join(result->stopped, ", "));
  if (!result->already_gone.empty()) {
    v.out += "  already gone: " + Join(result->already_gone, ", ") + "\n";
  }
  if (!result->not_ours.empty()) {
    v.out += "  left alone (pid reused by another process): " + Join(result->not_ours, ", ") + "\n";
  }
  if (result->stray_processes_killed > 0) {
    v.out +=
        fmt::format("  also ended {} leftover job processes\n", result->stray_processes_killed);
  }
  return v;
}

}  // namespace cmax::lab
