// Per-rail `ib_write_bw` between this node and a peer: for each of this node's InfiniBand/RoCE
// devices (a rail), perftest's server is started on the peer (through a launcher: ssh, srun,
// or `ip netns exec` in the lab) and its client here, one rail at a time on a port of its own,
// under cmax's deadlines. Each rail's average bandwidth is judged against the rate its port
// reports (sysfs `ports/1/rate`: "400 Gb/sec (4X NDR)"). A pair cannot say which end is slow,
// so a slow rail is a medium finding naming both ends (test each against a third node), never a
// quarantine on its own; a rail whose test could not run is UNKNOWN with perftest's words.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "active/tool_checks.hpp"
#include "core/clock.hpp"
#include "core/run_record.hpp"

namespace cmax::active {

// ib_write_bw reaches 95-98 % of an NDR port's rate with large messages (Azure's health checks
// pass 380 of 400 Gb/s with GPUDirect: conf/nd96isr_h100_v5.conf, check_ib_bw_gdr 380); a rail
// under 90 % of its port's rate is slow whatever the cause.
inline constexpr double kIbPairMinShare = 0.90;

struct IbPairOptions {
  std::string peer;     // substituted for "{peer}" in `launch`
  std::string address;  // what the client connects to; empty: `peer`
  // The argv that runs a command on the peer, "{peer}" replaced: {"ssh", "-o", "BatchMode=yes",
  // "{peer}"}, {"srun", "--overlap", "-N1", "-n1", "--nodelist={peer}"}; empty: here.
  std::vector<std::string> launch;
  std::vector<std::string> rails;  // this node's devices; empty: every one in sysfs
  int port = 18515;                // rail i uses port + i
  int seconds = 5;                 // each rail's test (-D)
  std::vector<std::string> extra;  // more for both ends (--use_cuda=0, -x 3 for RoCE ...)
  // How long the peer's server may take to start (a launcher's own start: ssh, srun).
  Duration start_within = std::chrono::seconds(20);
  std::string sysfs = "/sys";  // where the devices and their rates are read
  // This node's own Slurm job (SLURM_JOB_ID): its steps on the peer are no one else's work.
  std::string own_job;
  // Test the rails of a peer that runs others' jobs too (their traffic is disturbed).
  bool force = false;
};

struct IbPairIo {
  ToolIo tools;
  // A file's text ("" and false when it cannot be read): the ports' rates, the device list.
  std::function<std::optional<std::string>(const std::string& path)> read_file;
  std::function<std::vector<std::string>(const std::string& dir)> list_dir;
};

// One rail as measured: its figure, or why there is none.
struct RailResult {
  std::string rail;
  std::optional<double> average_gbits;
  std::optional<double> port_gbits;  // the port's rate; none: not readable
  std::string problem;               // why no figure ("" when there is one)
  bool hung = false;                 // a side was killed at its deadline
};

// sysfs's `ports/N/rate` ("400 Gb/sec (4X NDR)", "25 Gb/sec (1X EDR)"): Gb/s. Pure.
std::optional<double> ParsePortRate(std::string_view text);

// The launcher's argv: `text` split into words as sh splits them (quotes keep spaces; nothing
// is expanded; "{peer}" stands for the peer), or, when empty, srun inside a Slurm job (the peer
// must be in the job's allocation: sbatch -N2) and ssh in batch mode elsewhere. kInvalidArgument
// for an unterminated quote. Pure.
Result<std::vector<std::string>> PeerLauncher(std::string_view text, bool in_slurm_job);

// The two ends' argv (the server's with the launcher before it, and bounded on the peer by
// coreutils' `timeout LIMIT_S`). Pure.
std::vector<std::string> IbServerArgv(const IbPairOptions& options, const std::string& rail,
                                      int port, int limit_s);
std::vector<std::string> IbClientArgv(const IbPairOptions& options, const std::string& rail,
                                      int port);

// `active.ib-write-bw`: PASS when every rail reached `min_share` of its port's rate; FAIL
// (medium) naming the slow rails and both ends; UNKNOWN naming the rails with no figure or no
// port rate; SKIP when there is no rail. Pure.
Finding JudgeIbPairs(const std::vector<RailResult>& rails, const std::string& peer,
                     double min_share = kIbPairMinShare);

struct IbPairVerdict {
  std::vector<Finding> findings;
  std::vector<Metric> metrics;  // active.ib_write_bw_gbits{rail, peer}
  std::vector<RailResult> rails;
  bool second_look = false;
};

// The longest one rail's test may hold its peer's server: the launcher's start, the client's
// last try and its test under `deadline`, and the client's kill grace with room to spare.
Duration IbRailWindow(const IbPairOptions& options, Duration deadline);

// Runs every rail in turn. `deadline`: each end's, beyond the test's own seconds. Where Slurm
// is here to ask (squeue on PATH), a peer that runs others' jobs is left alone (SKIP) unless
// `force`; one whose jobs it cannot list is tested, and the finding says so.
IbPairVerdict RunIbPairs(const IbPairOptions& options, Duration deadline, const IbPairIo& io);

}  // namespace cmax::active
