// Faults for the simulated NVML (libnvml-sim.so, a stand-in for the driver's library): a change
// to its JSON state file, which the library reads again while it is loaded, so an agent or a
// provider's checks that use NVML see the GPU fail. For the lab and tests. Pure: state in, state
// out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/file_system.hpp"

namespace cmax::inject {

// lost: the GPU fell off the bus; dbe: one more volatile and aggregate double-bit ECC error;
// row-remap-failure; row-remap-pending; recovery-action (value: NVML's recovery action, 1 reset,
// 2 reboot, ...); pcie-width (value: lanes); xid (value: the code, as an NVML Xid event).
std::vector<std::string_view> SimFaultNames();

struct SimFault {
  std::string name;
  long value = 0;
  std::string gpu;  // index or PCI address
};

struct SimChange {
  nlohmann::json state;     // the new state file
  std::string bus_id;       // the GPU it changed
  std::string description;  // "GPU 0000:17:00.0: remapped_rows.failure false -> true"
};

Result<SimChange> ApplySimFault(const nlohmann::json& state, const SimFault& fault);

// The same on the state file: replaced atomically (the library never reads half a file); the
// first change keeps the original as PATH.cmax-backup for RestoreSimState. `dry_run` computes
// the change and writes nothing.
Result<SimChange> ApplySimFaultToFile(sys::FileSystem& fs, const std::string& path,
                                      const SimFault& fault, bool dry_run = false);
// Puts the original back and removes the backup; kNotFound when there is none.
Result<void> RestoreSimState(sys::FileSystem& fs, const std::string& path);
std::string SimBackupPath(const std::string& path);
// The state file to change: the one given, else $CMAX_NVML_SIM_STATE (the file the simulated
// library itself reads); empty when neither names one.
std::string SimStatePath(const std::string& given);

}  // namespace cmax::inject
