// `cmax lab`: starts, inspects and stops a real Slurm cluster on this host (its own munged,
// one slurmctld, one slurmd per node on loopback ports), the scheduler every test drives.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "lab/lab_config.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::lab {

using Progress = std::function<void(std::string_view)>;

struct LabContext {
  sys::FileSystem& fs;
  sys::ProcessRunner& runner;
  Clock& clock;
  Progress progress;  // one line per step; may be empty
};

// Everything that would stop `up`, in words: not root, a missing program, a port in use.
std::vector<std::string> Preflight(const LabSpec& spec);

struct UpResult {
  LabState state;
  bool already_running = false;  // a lab was up in this folder; nothing was started
  Duration took{0};
};
// Starts the lab and waits until every node is idle. When it fails part-way, it stops what
// it started, and the error carries the tail of the log that explains why. A whole lab already
// running in the folder is reported, not started again; one that is not whole (Missing) is
// taken down and started afresh; kBusy while another cmax is starting it.
Result<UpResult> Up(const LabSpec& spec, LabContext& ctx, Duration wait_timeout);

struct DaemonStatus {
  Daemon daemon;
  bool alive = false;
};
struct LabStatus {
  LabState state;
  std::vector<DaemonStatus> daemons;
  std::map<std::string, std::string> nodes;  // node -> state, from sinfo
  std::string nodes_error;                   // why nodes is empty, when it is
  bool Running() const;
  // The lab's own daemons (munged, slurmctld, a slurmd per node) that are not running: a lab
  // whose starter was killed part-way, or whose daemon died. Adopted daemons are not counted.
  std::vector<std::string> Missing() const;
  bool ControllerAlive() const;  // slurmctld is ours and alive (sinfo may still fail)
};
// NotFound when no lab state is in dir.
Result<LabStatus> Status(const std::string& dir, LabContext& ctx);

// Makes a process started beside the lab one of its daemons (an evaluation's node agents): in
// its state file with its start time, so that `down` stops it with the rest, and a lab whose
// owner was killed shows it (status) and takes it down. NotFound when no lab state is in dir.
Result<void> AdoptDaemon(const std::string& dir, LabContext& ctx, Daemon daemon);

struct DownResult {
  std::vector<std::string> stopped;       // daemons we stopped
  std::vector<std::string> already_gone;  // recorded but no longer running
  std::vector<std::string> not_ours;      // the pid now belongs to another process: left alone
  int stray_processes_killed = 0;         // job steps still running in the lab
};
// Stops only the daemons the lab started (by pid and start time), then job steps left in the
// lab's folders, and removes the state file. NotFound when no lab state is in dir.
Result<DownResult> Down(const std::string& dir, LabContext& ctx);

// The line a shell or a test evaluates to talk to the lab: export SLURM_CONF=...
std::string EnvLine(const std::string& dir);
// The environment entries ProcessSpec.env_add needs for Slurm commands against the lab.
std::vector<std::string> SlurmEnv(const std::string& dir);

// Slurm and munge processes whose working folder or command line lies inside dir: job steps
// of lab nodes that outlive their slurmd.
std::vector<int> ProcessesInside(const std::string& dir);

}  // namespace cmax::lab
