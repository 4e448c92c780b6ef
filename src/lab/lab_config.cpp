#include "lab/lab_config.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.hpp"

namespace cmax::lab {

Result<void> ValidateSpec(const LabSpec& spec) {
  if (spec.dir.empty() || spec.dir[0] != '/') {
    return Fail(ErrorCode::kInvalidArgument, "lab folder must be an absolute path, got '{}'",
                spec.dir);
  }
  // The lab writes etc/, dev/, run/ ... below its folder and `down` ends Slurm processes that
  // work inside it: "/" or a top-level folder such as /etc or /var would reach the host's own.
  const auto parts = Split(std::string_view(spec.dir).substr(1), '/');
  const bool dots = std::any_of(parts.begin(), parts.end(), [](std::string_view p) {
    return p.empty() || p == "." || p == "..";
  });
  if (parts.size() < 2 || dots) {
    return Fail(ErrorCode::kInvalidArgument,
                "lab folder must be a normalised path at least two levels deep (like "
                "/tmp/cmax-lab), got '{}'",
                spec.dir);
  }
  if (SanitizeUtf8(spec.dir) != spec.dir) {
    return Fail(ErrorCode::kInvalidArgument, "lab folder path must be valid UTF-8 text");
  }
  // It is written into slurm.conf (StateSaveLocation=DIR/...): a line break would add lines of
  // its own to a configuration root's daemons obey, and Slurm cuts a value at a space or '#'.
  if (spec.dir.find_first_of(" \t#") != std::string::npos ||
      std::ranges::any_of(spec.dir, IsControlCharacter)) {
    return Fail(ErrorCode::kInvalidArgument,
                "lab folder must be a path without spaces, '#' or control characters (it is "
                "written into slurm.conf), got '{}'",
                SanitizeUtf8(spec.dir));
  }
  // One line of slurm.conf: an absolute path, no line break, no space Slurm would cut it at.
  if (!spec.prolog.empty() &&
      (spec.prolog[0] != '/' || spec.prolog.find_first_of(" \t\r\n#") != std::string::npos ||
       SanitizeUtf8(spec.prolog) != spec.prolog)) {
    return Fail(ErrorCode::kInvalidArgument,
                "the Prolog must be an absolute path without spaces, got '{}'",
                SanitizeUtf8(spec.prolog));
  }
  if (spec.nodes < 1 || spec.nodes > 64) {
    return Fail(ErrorCode::kInvalidArgument, "--nodes must be 1 to 64, got {}", spec.nodes);
  }
  if (spec.spares < 0 || spec.spares > 16) {
    return Fail(ErrorCode::kInvalidArgument, "--spares must be 0 to 16, got {}", spec.spares);
  }
  if (spec.gpus_per_node < 1 || spec.gpus_per_node > 16) {
    return Fail(ErrorCode::kInvalidArgument, "--gpus must be 1 to 16, got {}", spec.gpus_per_node);
  }
  const int total = spec.nodes + spec.spares;
  const int last_port = spec.first_node_port + total - 1;
  if (spec.controller_port < 1024 || spec.controller_port > 65535 || spec.first_node_port < 1024 ||
      last_port > 65535) {
    return Fail(ErrorCode::kInvalidArgument, "lab ports must lie in 1024-65535");
  }
  if (spec.controller_port >= spec.first_node_port && spec.controller_port <= last_port) {
    return Fail(ErrorCode::kInvalidArgument, "controller port {} falls inside the node ports {}-{}",
                spec.controller_port, spec.first_node_port, last_port);
  }
  // munged's socket lives in the lab folder and a Unix socket path holds at most 107 bytes.
  const std::string socket = PathsFor(spec.dir).munge_socket;
  if (socket.size() > 107) {
    return Fail(ErrorCode::kInvalidArgument,
                "lab folder path is too long: the munge socket {} would exceed 107 bytes", socket);
  }
  return {};
}

LabPaths PathsFor(const std::string& dir) {
  LabPaths p;
  p.dir = dir;
  p.slurm_conf = dir + "/etc/slurm.conf";
  p.gres_conf = dir + "/etc/gres.conf";
  p.munge_dir = dir + "/munge";
  p.munge_key = p.munge_dir + "/munge.key";
  p.munge_socket = p.munge_dir + "/munge.socket";
  p.munge_pid = dir + "/run/munged.pid";
  p.munge_seed = p.munge_dir + "/munge.seed";
  p.state_dir = dir + "/state";
  p.spool_dir = dir + "/spool";
  p.log_dir = dir + "/log";
  p.run_dir = dir + "/run";
  p.dev_dir = dir + "/dev";
  p.state_file = dir + "/lab.json";
  return p;
}

std::string NodeName(int index) {
  return fmt::format("gpu{}", index);
}

std::string NodeRange(int first, int last) {
  if (first == last) return NodeName(first);
  return fmt::format("gpu[{}-{}]", first, last);
}

std::vector<std::string> NodeNames(const LabSpec& spec) {
  std::vector<std::string> names;
  for (int i = 1; i <= spec.nodes + spec.spares; ++i) names.push_back(NodeName(i));
  return names;
}

std::string RenderSlurmConf(const LabSpec& spec, const LabPaths& paths) {
  const int total = spec.nodes + spec.spares;
  std::string conf = fmt::format(
      "{marker}: a real Slurm cluster on this one host, for tests.\n"
      "# The GPU device files are empty stand-ins for /dev/nvidiaN.\n"
      "ClusterName={cluster}\n"
      "SlurmctldHost=localhost(127.0.0.1)\n"
      "SlurmctldPort={ctld_port}\n"
      "SlurmUser=root\n"
      "SlurmdUser=root\n"
      "AuthType=auth/munge\n"
      "CredType=cred/munge\n"
      "AuthInfo=socket={socket}\n"
      "StateSaveLocation={state}\n"
      "SlurmdSpoolDir={spool}/%n\n"
      "SlurmctldPidFile={run}/slurmctld.pid\n"
      "SlurmdPidFile={run}/slurmd-%n.pid\n"
      "SlurmctldLogFile={log}/slurmctld.log\n"
      "SlurmdLogFile={log}/slurmd-%n.log\n"
      "ProctrackType=proctrack/linuxproc\n"
      "TaskPlugin=task/none\n"
      "GresTypes=gpu\n"
      "SelectType=select/cons_tres\n"
      "SelectTypeParameters=CR_Core\n"
      "SchedulerType=sched/backfill\n"
      "SlurmdParameters=config_overrides\n"
      "ReturnToService=2\n"
      "MpiDefault=none\n"
      "JobAcctGatherType=jobacct_gather/none\n"
      "AccountingStorageType=accounting_storage/none\n"
      "JobCompType=jobcomp/none\n"
      "SlurmctldTimeout=30\n"
      "SlurmdTimeout=30\n"
      "MessageTimeout=10\n"
      "InactiveLimit=0\n"
      "MinJobAge=30\n"
      "KillWait=2\n"
      "NodeName={all} NodeHostname=localhost NodeAddr=127.0.0.1 Port={first_port}-{last_port} "
      "CPUs={cpus} RealMemory=1024 Gres=gpu:{gpus} State=UNKNOWN\n"
      "PartitionName=gpu Nodes={main} Default=YES MaxTime=INFINITE State=UP\n",
      fmt::arg("marker", kLabConfMarker), fmt::arg("cluster", spec.cluster_name),
      fmt::arg("ctld_port", spec.controller_port), fmt::arg("socket", paths.munge_socket),
      fmt::arg("state", paths.state_dir), fmt::arg("spool", paths.spool_dir),
      fmt::arg("run", paths.run_dir), fmt::arg("log", paths.log_dir),
      fmt::arg("all", NodeRange(1, total)), fmt::arg("first_port", spec.first_node_port),
      fmt::arg("last_port", spec.first_node_port + total - 1), fmt::arg("cpus", spec.cpus_per_node),
      fmt::arg("gpus", spec.gpus_per_node), fmt::arg("main", NodeRange(1, spec.nodes)));
  if (!spec.prolog.empty()) conf += "Prolog=" + spec.prolog + "\n";
  if (spec.spares > 0) {
    conf += fmt::format("PartitionName=spare Nodes={} Default=NO MaxTime=INFINITE State=UP\n",
                        NodeRange(spec.nodes + 1, total));
  }
  return conf;
}

std::string RenderGresConf(const LabSpec& spec, const LabPaths& paths) {
  // Slurm wants a File= per GPU, and a regular file passes its check (with a logged error)
  // where a bare Count= leaves the node INVALID.
  std::string conf = "# Written by `cmax lab up`; the files are stand-ins for /dev/nvidiaN.\n";
  for (const std::string& node : NodeNames(spec)) {
    conf += fmt::format("NodeName={} Name=gpu File={}/{}/nvidia[0-{}]\n", node, paths.dev_dir, node,
                        spec.gpus_per_node - 1);
  }
  return conf;
}

namespace {
using Json = nlohmann::json;
}  // namespace

std::string SerializeState(const LabState& state) {
  Json daemons = Json::array();
  for (const Daemon& d : state.daemons) {
    daemons.push_back({{"name", d.name},
                       {"program", d.program},
                       {"pid", d.pid},
                       {"start_ticks", d.start_ticks},
                       {"log", d.log_path}});
  }
  const LabSpec& s = state.spec;
  Json out = {{"version", 1},
              {"dir", s.dir},
              {"nodes", s.nodes},
              {"spares", s.spares},
              {"gpus_per_node", s.gpus_per_node},
              {"controller_port", s.controller_port},
              {"first_node_port", s.first_node_port},
              {"cpus_per_node", s.cpus_per_node},
              {"cluster_name", s.cluster_name},
              {"prolog", s.prolog},
              {"started_at", FormatIso8601(state.started_at)},
              {"daemons", daemons}};
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<LabState> ParseState(std::string_view text) {
  Json in = Json::parse(text, nullptr, false);
  const bool version_one = in.is_object() && in.contains("version") &&
                           in["version"].is_number_integer() && in["version"] == 1;
  if (!version_one) {
    return Fail(ErrorCode::kCorrupt, "lab state file is not a cmax lab state (version 1)");
  }
  try {
    LabState state;
    LabSpec& s = state.spec;
    s.dir = in.at("dir").get<std::string>();
    s.nodes = in.at("nodes").get<int>();
    s.spares = in.at("spares").get<int>();
    s.gpus_per_node = in.at("gpus_per_node").get<int>();
    s.controller_port = in.at("controller_port").get<int>();
    s.first_node_port = in.at("first_node_port").get<int>();
    s.cpus_per_node = in.at("cpus_per_node").get<int>();
    s.cluster_name = in.at("cluster_name").get<std::string>();
    s.prolog = in.value("prolog", std::string());  // state files before it have none
    state.started_at = ParseIso8601(in.at("started_at").get<std::string>()).value_or(WallTime{});
    for (const Json& d : in.at("daemons")) {
      state.daemons.push_back({d.at("name").get<std::string>(), d.at("program").get<std::string>(),
                               d.at("pid").get<int>(),
                               d.at("start_ticks").get<unsigned long long>(),
                               d.at("log").get<std::string>()});
    }
    return state;
  } catch (const Json::exception& e) {
    return Fail(ErrorCode::kCorrupt, "lab state file is damaged: {}", e.what());
  }
}

std::map<std::string, std::string> ParseNodeStates(std::string_view sinfo_output) {
  std::map<std::string, std::string> states;
  for (std::string_view line : Split(sinfo_output, '\n')) {
    const auto fields = SplitFields(line);
    if (fields.size() >= 2) states[std::string(fields[0])] = std::string(fields[1]);
  }
  return states;
}

}  // namespace cmax::lab
