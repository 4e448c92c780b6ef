// A secondary bus reset of the PCIe bridge above a GPU: the GPU drops off the bus and the
// driver logs a real Xid 79. The most destructive injector: whatever runs on the GPU dies, and
// the GPU may stay lost until a reboot. So the plan is made only when the target is certain: an
// NVIDIA display or 3D controller, under a PCI bridge (not a root bus), with nothing else but
// that GPU's own functions below the bridge. Pure over a FileSystem (sysfs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::inject {

struct SbrPlan {
  std::string gpu;     // "0000:17:00.0"
  std::string bridge;  // "0000:16:02.0"
  // setpci -s BRIDGE BRIDGE_CONTROL=0x40:0x40 (bit 6, secondary bus reset, on), then off
  std::vector<std::string> assert_reset;
  std::vector<std::string> release_reset;
};

// Whether the PCI device at `address` ("0000:17:00.0", in sysfs) is an NVIDIA GPU: vendor 0x10de,
// a display (0x0300) or 3D (0x0302) controller, as NVIDIA's data-center GPUs present.
bool IsNvidiaGpu(const sys::FileSystem& fs, const std::string& address);

Result<SbrPlan> PlanSecondaryBusReset(const sys::FileSystem& fs, std::string_view gpu_pci);

// Carries the plan out: asserts the reset, holds it 200 ms, releases it. When releasing fails the
// error says the command that releases the bus: it must not stay in reset.
Result<void> RunSecondaryBusReset(sys::ProcessRunner& runner, const SbrPlan& plan);

}  // namespace cmax::inject
