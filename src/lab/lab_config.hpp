// What a lab cluster is made of, as values: its spec, the paths inside its folder, the Slurm
// and GRES configuration it writes, and the state file that records what it started.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::lab {

struct LabSpec {
  std::string dir;  // absolute
  int nodes = 4;
  int spares = 0;  // extra nodes in a "spare" partition, for hot-spare tests
  int gpus_per_node = 8;
  int controller_port = 16817;
  int first_node_port = 17001;  // node i listens on first_node_port + i - 1
  int cpus_per_node = 2;
  std::string cluster_name = "cmaxlab";
  // Slurm's Prolog: an absolute path run on a node before a job's first task there; empty:
  // none. A slow one is what a provider's job start waits for.
  std::string prolog;
};

Result<void> ValidateSpec(const LabSpec& spec);

// Every file and folder the lab uses, derived from its folder.
struct LabPaths {
  std::string dir;
  std::string slurm_conf;
  std::string gres_conf;
  std::string munge_dir;
  std::string munge_key;
  std::string munge_socket;
  std::string munge_pid;
  std::string munge_seed;
  std::string state_dir;  // slurmctld StateSaveLocation
  std::string spool_dir;  // slurmd spool, one folder per node below it
  std::string log_dir;
  std::string run_dir;
  std::string dev_dir;  // empty files standing in for /dev/nvidiaN, one folder per node
  std::string state_file;
};
LabPaths PathsFor(const std::string& dir);

std::string NodeName(int index);  // 1-based: "gpu1"
// "gpu[1-4]" (or "gpu1" for one node); first and last are 1-based and inclusive.
std::string NodeRange(int first, int last);
std::vector<std::string> NodeNames(const LabSpec& spec);  // cluster nodes, then spares

// The first line of every slurm.conf the lab writes: how `up` knows a folder is a lab's.
inline constexpr std::string_view kLabConfMarker = "# Written by `cmax lab up`";

std::string RenderSlurmConf(const LabSpec& spec, const LabPaths& paths);
std::string RenderGresConf(const LabSpec& spec, const LabPaths& paths);

struct Daemon {
  std::string name;     // "munged", "slurmctld", "slurmd-gpu1"
  std::string program;  // absolute path
  int pid = 0;
  unsigned long long start_ticks = 0;  // with pid: survives pid reuse
  std::string log_path;
};

struct LabState {
  LabSpec spec;
  WallTime started_at;
  std::vector<Daemon> daemons;
};

std::string SerializeState(const LabState& state);
Result<LabState> ParseState(std::string_view text);

// `sinfo -h -N -o "%N %t"` output -> node -> compact state ("idle", "drain", "idle*", ...).
std::map<std::string, std::string> ParseNodeStates(std::string_view sinfo_output);

}  // namespace cmax::lab
