// NVML through dlopen of libnvidia-ml.so.1 (or $CMAX_NVML_LIB, e.g. libnvml-sim.so) with our
// own prototypes: the binary starts on a host with a broken or absent driver, and says so.
// Every reading is optional: a GPU or driver that does not support a call leaves it empty;
// other errors (GPU lost, no permission) are recorded per GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

struct GpuReading {
  unsigned index = 0;
  std::string uuid;
  std::string name;
  std::string pci_bus_id;  // "0000:17:00.0", lowercase, the sysfs form
  bool lost = false;       // the driver answered GPU_IS_LOST
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> power_mw;
  std::optional<unsigned> power_limit_mw;
  std::optional<unsigned> utilization_percent;  // of time a kernel ran, over the last sample
  std::optional<unsigned> compute_processes;    // processes with a compute context on it
  std::optional<unsigned> sm_clock_mhz;
  std::optional<unsigned> max_sm_clock_mhz;
  std::optional<uint64_t> clock_event_reasons;
  std::optional<bool> ecc_enabled;
  std::optional<uint64_t> ecc_sbe_volatile;
  std::optional<uint64_t> ecc_dbe_volatile;
  std::optional<uint64_t> ecc_sbe_aggregate;
  std::optional<uint64_t> ecc_dbe_aggregate;
  std::optional<unsigned> retired_pages_sbe;
  std::optional<unsigned> retired_pages_dbe;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned> remapped_rows_correctable;
  std::optional<unsigned> remapped_rows_uncorrectable;
  std::optional<bool> remapped_rows_pending;
  std::optional<bool> remapped_rows_failure;
  std::optional<unsigned> pcie_gen;
  std::optional<unsigned> pcie_width;
  std::optional<unsigned> pcie_max_gen;
  std::optional<unsigned> pcie_max_width;
  std::optional<unsigned> pcie_replay;
  std::optional<unsigned> nvlink_links;     // links that answered
  std::optional<unsigned> nvlink_inactive;  // of those, not active
  bool nvlink_none = false;                 // the driver answered that it has no NVLink
  std::optional<unsigned> recovery_action;  // field 230: 0 none, 1 reset, 2 reboot, ...
  std::vector<std::string> errors;          // "GetPowerUsage: GPU is lost"
};

struct NvmlSnapshot {
  std::string library;  // the file that was loaded
  std::string driver_version;
  unsigned device_count = 0;
  std::vector<GpuReading> gpus;
};

// An XID or ECC event from nvmlEventSetWait.
struct NvmlEvent {
  unsigned gpu_index = 0;
  std::string pci_bus_id;
  uint64_t type = 0;  // NVML event type bit
  uint64_t data = 0;  // the Xid number for an Xid event
};

class Nvml {
 public:
  // Loads the library (path, else $CMAX_NVML_LIB, else libnvidia-ml.so.1 and the usual
  // folders) and initialises it. kUnavailable with the reason when either fails.
  static Result<std::unique_ptr<Nvml>> Load(const std::string& path = "");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  Result<NvmlSnapshot> Snapshot();

  // Registers for Xid and ECC events on every GPU that supports them.
  Result<void> WatchEvents();
  // The next event, or nullopt after the timeout.
  Result<std::optional<NvmlEvent>> WaitEvent(Duration timeout);

  const std::string& LibraryPath() const;

  struct Api;  // the dlsym'ed entry points; defined in nvml.cpp only

 private:
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

// "0000:17:00.0" from NVML's "00000000:17:00.0": lowercase, 4-digit domain.
std::string NormalizeBusId(const std::string& nvml_bus_id);

// One reading of every GPU, for a one-shot command: the library loaded, read, and unloaded.
// The error is the load's (no library, no driver) or the reading's.
Result<NvmlSnapshot> ReadNvmlSnapshot(const std::string& library_path = "");

// How an error from a library that could not be loaded at all begins: no NVIDIA driver here,
// as opposed to a driver that is there and fails.
inline constexpr std::string_view kNvmlNotFound = "NVML library not found";

}  // namespace cmax::sys
