// The NVIDIA HPC SDK as a node has it: the newest release under /opt/nvidia/hpc_sdk, what its
// compilers say they are, and whether its parts are there. Read from the folders and the
// compilers' --version alone.
#pragma once

#include <string>
#include <string_view>

#include "audit/grading.hpp"
#include "core/clock.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::audit {

// "nvc 26.9-0 64-bit target on x86-64 Linux -tp znver4" -> "26.9"; empty when absent.
std::string ParseHpcSdkCompilerRelease(std::string_view output);

// Adds software.nvhpc.release ("26.9"; null: no SDK), software.nvhpc.compilers (each compiler's
// release, null where it is missing or did not answer) and software.nvhpc.payload (the release's
// folder and the parts missing from it).
void CollectHpcSdk(const sys::FileSystem& fs, sys::ProcessRunner& runner, Duration timeout,
                   AuditEvidence& out);

}  // namespace cmax::audit
