// What Slurm's squeue says runs where: the one question cmax asks before it puts load or a
// fault on nodes that Slurm schedules.
#pragma once

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

struct SlurmJobPlacement {
  std::string job;  // its own id, as $SLURM_JOB_ID has it (squeue's %A; %i writes 123_4)
  std::vector<std::string> nodes;
};

// squeue -h -o '%A|%N' output, a job and its host list a line. An error for a line that is
// not so, or a host list that does not expand.
Result<std::vector<SlurmJobPlacement>> ParseSqueueJobNodes(std::string_view text);

// Every job of the cluster in kSlurmJobStatesOnNodes, with its nodes: one squeue, whatever the
// size of the cluster. Only what the caller may see: a cluster with PrivateData=jobs shows a
// user only their own jobs (root, or SlurmUser, sees all). An error when squeue failed or its
// output cannot be read.
Result<std::vector<SlurmJobPlacement>> SlurmJobsOnNodes(ProcessRunner& runner,
                                                        const std::string& squeue,
                                                        Duration timeout);

// Whether the hosts cmax is about to load run others' jobs: load on them would slow those jobs,
// and their work would spoil its figures.
struct HostInUse {
  std::string host;               // as the caller names it
  std::vector<std::string> jobs;  // the jobs on it, other than the caller's own
};

// The hosts, in their order, that run jobs other than `own_job` (the allocation cmax runs in,
// $SLURM_JOB_ID; empty: none). A host is a Slurm node by its name, or by its first label when
// it is a domain name (gpu7.cluster.local is gpu7); an address is no node's name.
std::vector<HostInUse> HostsRunningOthersJobs(const std::vector<SlurmJobPlacement>& jobs,
                                              const std::vector<std::string>& hosts,
                                              std::string_view own_job);

// "gpu2 (job 1234), gpu3 (jobs 7, 9)"; names cleaned for a terminal.
std::string DescribeHostsInUse(const std::vector<HostInUse>& hosts);

}  // namespace cmax::sys
