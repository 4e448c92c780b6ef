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

}  // namespace cmax::sys
