// Which environment-module system a node has (Lmod, or the Tcl Environment Modules) and which
// of the modules users look for first (CUDA, HPC-X, NCCL) its module path offers. Read from the
// files alone: `module` is a shell function that the login shell's profile defines, which a
// process started by srun does not have, so no program is run.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "audit/grading.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::audit {

// The folders of a modulespath file (Lmod's /etc/lmod/modulespath, Environment Modules'
// .../modulespath): one per line, '#' to the end of a line a comment; lines that hold a shell
// variable are left out (they are expanded by the shell's init script, which cmax does not run).
std::vector<std::string> ParseModulesPath(std::string_view text);

// Adds software.modules.available: null when neither module system is installed, else
// {"system", "paths" (the module folders that exist), "key" (cuda/hpcx/nccl modules found,
// "name/version" where the version folder lists them)}. `environment` gives MODULEPATH,
// LMOD_CMD and MODULESHOME where set.
void CollectEnvironmentModules(const sys::FileSystem& fs,
                               const std::map<std::string, std::string>& environment,
                               AuditEvidence& out);

}  // namespace cmax::audit
