// What Slurm says runs where: the one question cmax asks before it puts load or a fault on
// nodes that Slurm schedules.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

class ProcessRunner;

// The job states (squeue -t) in which a job's processes may still be on its nodes: running,
// being set up, suspended or stopped (they hold their GPU contexts), and completing (the
// epilog; a requeued job's processes).
inline constexpr std::string_view kSlurmJobStatesOnNodes =
    "RUNNING,CONFIGURING,SUSPENDED,STOPPED,COMPLETING";

// What squeue and sinfo read from the environment when their options do not say: a user's
// `SQUEUE_USERS=$USER` would hide every other user's jobs from cmax's question. Removed for it
// (ProcessSpec::env_add takes a bare name as "remove"). SLURM_CLUSTERS stays: it says which
// cluster every Slurm command of the caller's talks to.
inline constexpr const char* kSlurmViewVariables[] = {
    "SQUEUE_USERS", "SQUEUE_PARTITION", "SQUEUE_ACCOUNT", "SQUEUE_QOS",
    "SQUEUE_NAMES", "SQUEUE_LICENSES",  "SQUEUE_STATES",  "SINFO_PARTITION"};

struct SlurmJobPlacement {
  std::string job;  // its own id, as $SLURM_JOB_ID has it (squeue's %A; %i writes 123_4)
  std::vector<std::string> nodes;
};

// squeue -h -o '%A|%N' output, a job and its host list a line. An error for a line that is
// not so, or a host list that does not expand.
Result<std::vector<SlurmJobPlacement>> ParseSqueueJobNodes(std::string_view text);

// Every job of the cluster in kSlurmJobStatesOnNodes, with its nodes: one `squeue -a --local`
// (hidden partitions' jobs too; this cluster's, not a federation's), whatever the size of the
// cluster, the environment's filters removed. Only what the caller may see: a cluster with
// PrivateData=jobs shows a user only their own jobs (root, or SlurmUser, sees all). An error
// when squeue failed or its output cannot be read.
Result<std::vector<SlurmJobPlacement>> SlurmJobsOnNodes(ProcessRunner& runner,
                                                        const std::string& squeue,
                                                        Duration timeout);

// A node as slurm.conf names it, and the host name and address it is reached at (which mpirun
// may be given instead of its name).
struct SlurmNodeName {
  std::string name;
  std::string hostname;  // NodeHostname; the name when not set
  std::string address;   // NodeAddr; the host name when not set
};

// sinfo -h -N -o '%N|%n|%o' output, a node once however many partitions list it. An error for
// a line that is not so.
Result<std::vector<SlurmNodeName>> ParseSinfoNodeNames(std::string_view text);
// Every node's names, through one sinfo. An error when sinfo failed.
Result<std::vector<SlurmNodeName>> SlurmNodeNames(ProcessRunner& runner, const std::string& sinfo,
                                                  Duration timeout);

// Whether the hosts cmax is about to load run others' jobs: load on them would slow those jobs,
// and their work would spoil its figures.
struct HostInUse {
  std::string host;               // as the caller names it
  std::vector<std::string> jobs;  // the jobs on it, other than the caller's own
};

// The hosts, in their order, that run jobs other than `own_job` (the allocation cmax runs in,
// $SLURM_JOB_ID; empty: none). A host is a node when its name, or its first label, is the
// node's name or first label (gpu7, GPU7 and gpu7.cluster.local are one), or when it is the
// node's host name or address as `nodes` give them (localhost is every node that says so).
std::vector<HostInUse> HostsRunningOthersJobs(const std::vector<SlurmJobPlacement>& jobs,
                                              const std::vector<std::string>& hosts,
                                              std::string_view own_job,
                                              const std::vector<SlurmNodeName>& nodes = {});

// The hosts that are no node of `nodes` by any of its names: Slurm cannot say what runs there.
std::vector<std::string> HostsNamingNoNode(const std::vector<std::string>& hosts,
                                           const std::vector<SlurmNodeName>& nodes);

// "gpu2 (job 1234), gpu3 (jobs 7, 9)"; names cleaned for a terminal.
std::string DescribeHostsInUse(const std::vector<HostInUse>& hosts);

// The question every command that loads nodes asks first, asked one way: which of `hosts` run
// jobs other than `own_job`.
struct OthersJobsQuestion {
  std::vector<std::string> hosts;  // as the caller names them: node names, host names, addresses
  std::string own_job;             // $SLURM_JOB_ID or --own-job; empty: none
  // Where squeue and sinfo are (sys::FindProgram when empty): neither here means no Slurm to
  // ask, and nothing is said.
  std::function<std::string(const std::string&)> find_program;
  Duration timeout = std::chrono::seconds(30);
};
struct OthersJobsAnswer {
  std::vector<HostInUse> in_use;
  // What the answer could not cover, a line each: squeue failed (nothing known), sinfo failed
  // (hosts matched by node name only), hosts that are no node by any name.
  std::vector<std::string> unchecked;
  bool known = false;  // squeue answered
};
// squeue for the jobs, then sinfo for the nodes' other names (mpirun may be given a host name or
// an address, and a node's host name need not be its NodeName).
OthersJobsAnswer AskOthersJobsOn(const OthersJobsQuestion& question, ProcessRunner& runner);

}  // namespace cmax::sys
