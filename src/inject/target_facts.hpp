// What the injecting commands (`cmax inject`, `cmax reliability run`) learn about a target node
// before the safety rules (inject/target.hpp) decide: root, lab, this host, and what Slurm says.
#pragma once

#include <string>

#include "inject/target.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::inject {

// SLURM_CONF points into a folder `cmax lab` made: every lab node shares this host's kernel.
bool LabCluster(const sys::FileSystem& fs);

// `node` empty: this host. Slurm is asked when it is configured (SLURM_CONF or sinfo on PATH)
// and `ask_slurm`; when it does not answer, the facts say so (scheduler_known false) and a
// warning is logged.
TargetFacts GatherFacts(const std::string& node, const sys::FileSystem& fs,
                        sys::ProcessRunner& runner, bool ask_slurm = true);

}  // namespace cmax::inject
