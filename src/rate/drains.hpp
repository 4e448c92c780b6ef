// Drains by cause: nodes leave the fleet for reasons that are not the GPU's, and a lender or a
// buyer weighs a flaky filesystem differently from a bad GPU. Each drain's reason (as the
// remediation controller writes it from the condition that caused it, "cmax: Xid 79 on
// 0000:17:00", "cmax: soft_lockup", or as a person or another tool wrote it) is put under one
// cause. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/run_record.hpp"

namespace cmax::rate {

enum class DrainCause { kGpu, kCpuLockup, kFilesystem, kNetwork, kOther };
std::string_view DrainCauseName(DrainCause cause);  // "GPU", "CPU lockup", ...

// By the first of these a reason names (case does not matter): the GPU (Xid, SXid, a GPU fallen
// off the bus, ECC, NVLink, NVSwitch, DCGM), a CPU lockup (soft lockup, hung task, RCU stall),
// the filesystem (a filesystem timeout, NFS, Lustre, GPFS, Weka, a mount), the network (a NIC,
// a link down, InfiniBand, RoCE, mlx5); anything else is other (PCIe AER, OOM kill, machine
// check, an operator's words).
DrainCause CauseOfDrain(std::string_view reason);

struct DrainsOfCause {
  DrainCause cause = DrainCause::kOther;
  int drains = 0;
  std::vector<std::string> examples;  // up to three distinct reasons
};

// Every cause, in the order above, with its count (zero included).
std::vector<DrainsOfCause> SplitDrains(const std::vector<std::string>& reasons);

// One drain: its node, when (none when unknown) and its reason.
struct DrainRecord {
  std::string node;
  std::optional<WallTime> at;
  std::string reason;
};

// The drains reliability runs saw on the provider's scheduler, with the reason it gave: the
// "drained" observations of each `reliability.STEP.timeline` (or, folded into an evaluation,
// `phase.NAME.reliability.STEP.timeline`). A drain seen by two of the runs (a phase's run and
// the evaluation it was folded into) is one: the same node at the same moment. Where the
// scheduler gave no reason of its own for the step's node, the fault the step injected is it.
std::vector<DrainRecord> DrainsSeenInTimelines(const std::vector<const RunRecord*>& runs);

// The journal's drains and those seen, as one list of reasons: a drain seen on a node the
// journal drained within 15 minutes of it (cmax's own controller did it, and the scheduler
// showed it) counts once, with the journal's reason.
std::vector<std::string> MergeDrains(const std::vector<DrainRecord>& journal,
                                     const std::vector<DrainRecord>& seen);

}  // namespace cmax::rate
