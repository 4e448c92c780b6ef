// The active checks that run a vendor tool: each run under a deadline cmax enforces (never
// trusting the tool's own: DCGM's diagnostic hangs on some parts), and what came of it turned
// into findings. A tool that is absent is a SKIP with the reason; one that hangs is killed at
// its deadline and is UNKNOWN with a second look asked for, never a FAIL (a hang alone does not
// drain a node: the field's false drains came from exactly that); output that cannot be read is
// UNKNOWN with what was read.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "active/thresholds.hpp"
#include "core/clock.hpp"
#include "core/run_record.hpp"
#include "sys/process_runner.hpp"

namespace cmax::active {

struct ToolIo {
  sys::ProcessRunner* runner = nullptr;
  // The program's path on PATH, "" when absent (sys::FindProgram).
  std::function<std::string(const std::string&)> find_program;
  // Told when a tool hung and was killed at its deadline (the node wants a second look).
  std::function<void(const std::string& tool)> hung;
};

struct ToolRun {
  std::string check_id;           // "active.dcgm-diag"
  std::string tool;               // "dcgmi"
  std::string where = "on PATH";  // where it is looked for, said when it is not there
  std::vector<std::string> args;
  std::vector<std::string> env;  // "KEY=VALUE", added to ours
  Duration deadline = std::chrono::seconds(120);
  // Each piece of output as it comes; false stops the tool (ProcessSpec::on_output).
  std::function<bool(int stream, std::string_view data)> on_output;
  std::function<bool()> keep_running;  // false stops the tool (ProcessSpec::keep_running)
};

// What came of running one tool: its result (it ran to its end, whatever its exit code), or
// the finding that stands instead.
struct ToolOutcome {
  std::optional<sys::ProcessResult> result;
  std::optional<Finding> instead;
  bool second_look = false;  // it hung: look again before acting on this node
};
ToolOutcome RunTool(const ToolRun& run, const ToolIo& io);

// The first line of what a program said (stderr first, else stdout; at most 200 characters),
// for a message.
std::string FirstWords(const sys::ProcessResult& r);

// A check that gave no result it could be judged by: UNKNOWN, with why.
Finding Unknown(const std::string& check_id, std::string message);

// DCGM's diagnostic at a level (1 quick, 2 medium, 3 long, 4 extended), `dcgmi diag -r N -j`.
// The deadline cmax gives each level when none is asked for: r1 2 min, r2 10 min, r3 30 min,
// r4 60 min (DCGM's own estimates are seconds, about 2 and 15 minutes, and longer).
Duration DefaultDiagDeadline(int level);
std::vector<Finding> RunDcgmDiag(int level, Duration deadline, const ToolIo& io);

// nvbandwidth's three tests (host to device, device to host, device to device read), judged
// against `gpu_class`'s limits (nullptr: a GPU the table does not know).
std::vector<Finding> RunNvbandwidth(const GpuClass* gpu_class, const ActiveThresholds& thresholds,
                                    Duration deadline, const ToolIo& io);

// A local all-reduce through nccl-tests (`all_reduce_perf -b 16G -e 16G -g GPUS`, one process,
// the size Azure's check uses), its bus bandwidth at that size judged against the class's
// limit; wrong values (#wrong, the out-of-bounds count) are a FAIL whatever the speed.
// `ib_only`: NCCL kept off NVLink and shared memory (NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1), so
// the GPUs talk through the node's own network adapters: the rails judged without the fabric.
std::vector<Finding> RunLocalAllReduce(unsigned gpus, bool ib_only, const GpuClass* gpu_class,
                                       const ActiveThresholds& thresholds, Duration deadline,
                                       const ToolIo& io);

}  // namespace cmax::active
