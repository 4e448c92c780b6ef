// The audit of a Slurm cluster, every node: cmax runs itself on each node of the partition or
// node list through one `srun` job step (`cmax audit --node-evidence`: nothing else is needed on
// the nodes, no interpreter, no image), in parallel, each node within its own deadline and the
// whole step within a time budget. Each node's evidence comes back framed (audit/fanout.hpp),
// is graded on its own, and per check the worst node decides. A node that cannot take the step
// (down, drained, busy) or did not answer in time is UNKNOWN with the reason, never a PASS; a
// controller that does not answer makes every check UNKNOWN, and the audit still finishes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "audit/audit_run.hpp"
#include "remediate/scheduler.hpp"

namespace cmax::audit {

struct SlurmAuditOptions {
  std::string partition;               // sinfo/srun -p; empty: the nodes' own partitions
  std::string nodelist;                // a hostlist ("gpu[1-4],gpu7"); empty: the partition's nodes
  double node_timeout_s = 30;          // a node's own deadline for its evidence
  double budget_s = 120;               // the whole step, from srun's start to its end
  std::vector<std::string> srun_args;  // passed to srun as they are (--account, --gres ...)
  std::string remote_cmax;             // the cmax the nodes run; empty: this binary
};

Result<AuditReport> RunSlurmAudit(const AuditOptions& options, const SlurmAuditOptions& slurm,
                                  const AuditIo& io);

// `cmax audit --node-evidence`: this host's evidence as frames for the fan-out, named after
// $SLURMD_NODENAME (else the host name). Writes nothing, opens no store. When `node_timeout_s`
// passes first, the process prints a frame that says so and exits 124 (sys::ExitAtDeadline).
Result<std::string> NodeEvidenceFrames(const AuditOptions& options, double node_timeout_s,
                                       const AuditIo& io);

// Pure parts.
// Which nodes can take a step now (idle or mixed, responding, not drained), grouped into one
// step per partition (a Slurm job cannot span partitions; a node in several goes with its
// first, or with `partition` when one is named), and why each of the others cannot.
struct SlurmNodePlan {
  std::map<std::string, std::vector<std::string>> steps;  // partition -> its nodes
  std::map<std::string, std::string> unreachable;         // node -> reason
  std::vector<std::string> ReachableNodes() const;
};
SlurmNodePlan PlanSlurmNodes(const std::vector<remediate::SchedulerNode>& nodes,
                             const std::string& partition = "");
// The srun command line of one step: `nodes` of `partition` (empty: Slurm's default).
std::vector<std::string> SrunCommand(const std::string& partition,
                                     const std::vector<std::string>& nodes,
                                     const AuditOptions& options, const SlurmAuditOptions& slurm,
                                     const std::string& cmax);

// The arguments after the program of `cmax audit --node-evidence` as a node runs it: its
// deadline, the probes', the host root (a pod's), the profile and the side effects allowed.
std::vector<std::string> NodeEvidenceArgs(const AuditOptions& options, double node_timeout_s);

// The node after `self` in `scontrol show hostnames` output, the last one's being the first;
// nullopt when `self` is not listed or is alone.
std::optional<std::string> NextNode(std::string_view hostnames, std::string_view self);

// `scontrol show job -o ID` run with TZ=UTC: the job's StartTime in seconds since the epoch;
// nullopt when absent, "Unknown" or not a time.
std::optional<int64_t> ParseJobStartTime(std::string_view scontrol_job);

// Each node's seconds from its job's start to its task's start (what the prolog and the launch
// took), from the node's scheduler.step.timing: the job's start from SLURM_JOB_START_TIME where
// Slurm exports it (23.02 on), else from `job_start(job id)`, asked once per job. Nodes without
// a time are left out.
std::map<std::string, nlohmann::json> PrologSeconds(
    const std::map<std::string, AuditEvidence>& nodes,
    const std::function<std::optional<int64_t>(const std::string&)>& job_start);

}  // namespace cmax::audit
