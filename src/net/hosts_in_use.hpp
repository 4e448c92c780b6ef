// Whether the hosts of an mpirun sweep or search run others' Slurm jobs. Both put a network
// (and, with nccl-tests, every GPU of a host) under full load for minutes: that slows those
// jobs, and their traffic spoils the figures (a busy host looks like a bad one to the search).
// srun needs no such look: Slurm gives its steps GPUs of their own, when they are free.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sys/slurm_jobs.hpp"

namespace cmax::net {

struct HostInUse {
  std::string host;               // as the sweep names it
  std::vector<std::string> jobs;  // the jobs on it, other than the sweep's own
};

// The hosts, in their order, that run jobs other than `own_job` (the allocation the sweep runs
// in, $SLURM_JOB_ID; empty: none). A host is a Slurm node by its name, or by its first label
// when it is a domain name (gpu7.cluster.local is gpu7); an address is no node's name.
std::vector<HostInUse> HostsRunningOthersJobs(const std::vector<sys::SlurmJobPlacement>& jobs,
                                              const std::vector<std::string>& hosts,
                                              std::string_view own_job);

// "gpu2 (job 1234), gpu3 (jobs 7, 9)"; names cleaned for a terminal.
std::string DescribeHostsInUse(const std::vector<HostInUse>& hosts);

}  // namespace cmax::net
