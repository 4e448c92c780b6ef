// libnvml-sim.so: a simulated NVML, a stand-in for libnvidia-ml.so.1 with the same C ABI, for
// tests and the lab on machines without GPUs. Its GPUs, counters and faults come from the JSON
// file named by CMAX_NVML_SIM_STATE, re-read whenever the file changes, so a test can flip a GPU
// to a double-bit ECC error, a row-remap failure or "fallen off the bus" while a reader runs.
// cmax loads it through the same dlopen path as the real library (CMAX_NVML_LIB).
//
// State file (every key optional):
//   {"init_error": 0, "driver_version": "570.86.15", "cuda_driver_version": 12080,
//    "gpus": [{"uuid": "GPU-...", "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:17:00.0",
//              "minor": 0, "lost": false, "unsupported": ["remapped_rows", ...],
//              "temperature_c": 34, "power_mw": 71000, "power_limit_mw": 700000,
//              "utilization_percent": 0, "compute_processes": 0,
//              "clocks_mhz": {"sm": 1980, "mem": 2619}, "max_clocks_mhz": {...},
//              "clock_event_reasons": 1,
//              "ecc": {"enabled": true, "volatile": {"sbe": 0, "dbe": 0},
//                      "aggregate": {"sbe": 0, "dbe": 0}},
//              "retired_pages": {"sbe": 0, "dbe": 0, "pending": false},
//              "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": false,
//                                "failure": false},
//              "pcie": {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "replay": 0},
//              "nvlink": {"links": 18, "inactive": [3]}, "recovery_action": 0}],
//    "events": [{"seq": 1, "gpu": 0, "type": 8, "data": 79}]}
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "sys/nvml_abi.hpp"

namespace {

using Json = nlohmann::json;
namespace nv = cmax::nvml;

struct SimState {
  Json doc = Json::object();
  struct timespec mtime {};
  off_t size = -1;
  ino_t inode = 0;  // a file renamed into place is new even within the mtime granularity
  bool loaded = false;
};

std::mutex g_mutex;
SimState g_state;
int g_init_count = 0;
constexpr int kMaxDevices = 64;
// Handles point into this array, so they stay valid across state reloads.
nvmlDevice_st* g_handles[kMaxDevices];
char g_handle_storage[kMaxDevices];

struct EventSet {
  unsigned long long last_seq = 0;
  std::vector<std::pair<int, unsigned long long>> registered;  // device index, type mask
};

// Re-reads the state file when it changed; keeps the last good state if the new one does not
// parse (a writer should rename a finished file into place).
const Json& State() {
  const char* path = std::getenv("CMAX_NVML_SIM_STATE");
  if (path == nullptr) return g_state.doc;
  struct stat st {};
  if (::stat(path, &st) != 0) return g_state.doc;
  if (g_state.loaded && st.st_mtim.tv_sec == g_state.mtime.tv_sec &&
      st.st_mtim.tv_nsec == g_state.mtime.tv_nsec && st.st_size == g_state.size &&
      st.st_ino == g_state.inode) {
    return g_state.doc;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json doc = Json::parse(text.str(), nullptr, false);
  if (!doc.is_discarded() && doc.is_object()) {
    g_state.doc = std::move(doc);
    g_state.mtime = st.st_mtim;
    g_state.size = st.st_size;
    g_state.inode = st.st_ino;
    g_state.loaded = true;
  }
  return g_state.doc;
}

// Typed reads that never throw: a value of the wrong type counts as absent.
std::string Text(const Json& object, const char* key, const std::string& fallback) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return fallback;
  return object[key].get<std::string>();
}

bool Flag(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return false;
  const Json& v = object[key];
  return (v.is_boolean() && v.get<bool>()) || (v.is_number_integer() && v.get<long long>() != 0);
}

const Json& Gpus() {
  static const Json kEmpty = Json::array();
  const Json& state = State();
  return state.contains("gpus") && state["gpus"].is_array() ? state["gpus"] : kEmpty;
}

int IndexOf(nvmlDevice_t device) {
  for (int i = 0; i < kMaxDevices; ++i) {
    if (g_handles[i] == device) return i;
  }
  return -1;
}

// The GPU behind a handle, or an NVML error: uninitialised, unknown handle, lost, or the
// feature listed as unsupported.
nvmlReturn_t Gpu(nvmlDevice_t device, const char* feature, const Json** gpu) {
  if (g_init_count == 0) return nv::kUninitialized;
  const int index = IndexOf(device);
  const Json& gpus = Gpus();
  if (index < 0 || static_cast<size_t>(index) >= gpus.size()) return nv::kInvalidArgument;
  const Json& g = gpus[static_cast<size_t>(index)];
  if (!g.is_object()) return nv::kUnknown;
  if (Flag(g, "lost")) return nv::kGpuIsLost;
  if (feature != nullptr && g.contains("unsupported") && g["unsupported"].is_array()) {
    for (const Json& name : g["unsupported"]) {
      if (name.is_string() && name.get<std::string>() == feature) return nv::kNotSupported;
    }
  }
  *gpu = &g;
  return nv::kSuccess;
}

unsigned long long Number(const Json& object, const char* key, unsigned long long fallback = 0) {
  if (!object.is_object() || !object.contains(key)) return fallback;
  const Json& v = object[key];
  if (v.is_number_unsigned() || v.is_number_integer()) return v.get<unsigned long long>();
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return fallback;
}

const Json& Child(const Json& object, const char* key) {
  static const Json kEmpty = Json::object();
  return object.is_object() && object.contains(key) && object[key].is_object() ? object[key]
                                                                               : kEmpty;
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned int length) {
  if (out == nullptr) return nv::kInvalidArgument;
  if (value.size() + 1 > length) return nv::kInsufficientSize;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return nv::kSuccess;
}

template <class T>
nvmlReturn_t Put(T* out, T value) {
  if (out == nullptr) return nv::kInvalidArgument;
  *out = value;
  return nv::kSuccess;
}

}  // namespace

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

SIM_EXPORT nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (std::getenv("CMAX_NVML_SIM_STATE") == nullptr) return nv::kDriverNotLoaded;
  const Json& state = State();
  const int error = static_cast<int>(Number(state, "init_error", 0));
  if (error != 0) return error;
  for (int i = 0; i < kMaxDevices; ++i) {
    g_handles[i] = reinterpret_cast<nvmlDevice_st*>(&g_handle_storage[i]);
  }
  ++g_init_count;
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) {
  return nvmlInit_v2();
}

SIM_EXPORT nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_init_count == 0) return nv::kUninitialized;
  --g_init_count;
  return nv::kSuccess;
}

SIM_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case nv::kSuccess: return "Success";
    case nv::kUninitialized: return "Uninitialized";
    case nv::kInvalidArgument: return "Invalid Argument";
    case nv::kNotSupported: return "Not Supported";
    case nv::kNoPermission: return "Insufficient Permissions";
    case nv::kNotFound: return "Not Found";
    case nv::kInsufficientSize: return "Insufficient Size";
    case nv::kDriverNotLoaded: return "Driver Not Loaded";
    case nv::kTimeout: return "Timeout";
    case nv::kGpuIsLost: return "GPU is lost";
    case nv::kResetRequired: return "GPU requires reset";
    default: return "Unknown Error";
  }
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_init_count == 0) return nv::kUninitialized;
  return CopyString(Text(State(), "driver_version", "570.86.15"), version, length);
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return CopyString("12." + Text(State(), "driver_version", "570.86.15"), version, length);
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return Put(version, static_cast<int>(Number(State(), "cuda_driver_version", 12080)));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_init_count == 0) return nv::kUninitialized;
  return Put(count, static_cast<unsigned int>(std::min<size_t>(Gpus().size(), kMaxDevices)));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_init_count == 0) return nv::kUninitialized;
  const Json& gpus = Gpus();  // once: the file may be replaced between two reads
  if (device == nullptr || index >= gpus.size() || index >= kMaxDevices) {
    return nv::kInvalidArgument;
  }
  if (Flag(gpus[index], "lost")) return nv::kGpuIsLost;
  *device = g_handles[index];
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, nullptr, &g); r != nv::kSuccess) return r;
  return CopyString(Text(*g, "uuid", "GPU-00000000-0000-0000-0000-000000000000"), uuid, length);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, nullptr, &g); r != nv::kSuccess) return r;
  return CopyString(Text(*g, "name", "NVIDIA Simulated GPU"), name, length);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, nullptr, &g); r != nv::kSuccess) return r;
  if (pci == nullptr) return nv::kInvalidArgument;
  std::memset(pci, 0, sizeof(*pci));
  const std::string bus = Text(*g, "bus_id", "0000:00:00.0");
  unsigned domain = 0, b = 0, d = 0, f = 0;
  std::sscanf(bus.c_str(), "%x:%x:%x.%x", &domain, &b, &d, &f);
  pci->domain = domain;
  pci->bus = b;
  pci->device = d;
  pci->pciDeviceId = (static_cast<unsigned>(Number(*g, "device_id", 0x2330)) << 16) | 0x10DE;
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", domain & 0xFFFF,
                b & 0xFF, d & 0x1F);
  std::snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", domain, b & 0xFF, d & 0x1F);
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, nullptr, &g); r != nv::kSuccess) return r;
  return Put(minor,
             static_cast<unsigned>(Number(*g, "minor", static_cast<unsigned>(IndexOf(device)))));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor,
                                                 unsigned int* temp) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "temperature", &g); r != nv::kSuccess) return r;
  if (sensor != nv::kTemperatureGpu) return nv::kNotSupported;
  return Put(temp, static_cast<unsigned>(Number(*g, "temperature_c", 35)));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "power", &g); r != nv::kSuccess) return r;
  return Put(power, static_cast<unsigned>(Number(*g, "power_mw", 70000)));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                      nvmlUtilization_t* rates) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "utilization", &g); r != nv::kSuccess) return r;
  if (rates == nullptr) return nv::kInvalidArgument;
  rates->gpu = static_cast<unsigned>(Number(*g, "utilization_percent", 0));
  rates->memory = rates->gpu;
  return nv::kSuccess;
}

// Like the real one: with *count too small (0 with no array, to ask), INSUFFICIENT_SIZE and the
// count; the simulated processes have no details to give, so a larger array is left alone.
SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                unsigned int* count, void* infos) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "processes", &g); r != nv::kSuccess) return r;
  if (count == nullptr || (*count > 0 && infos == nullptr)) return nv::kInvalidArgument;
  const auto running = static_cast<unsigned>(Number(*g, "compute_processes", 0));
  const bool enough = *count >= running;
  *count = running;
  return enough ? nv::kSuccess : nv::kInsufficientSize;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "power", &g); r != nv::kSuccess) return r;
  return Put(limit, static_cast<unsigned>(Number(*g, "power_limit_mw", 700000)));
}

namespace {
nvmlReturn_t Clock(nvmlDevice_t device, int type, unsigned int* clock, const char* key) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "clocks", &g); r != nv::kSuccess) return r;
  const Json& clocks = Child(*g, key);
  const char* domain = type == nv::kClockMem ? "mem" : "sm";
  return Put(clock,
             static_cast<unsigned>(Number(clocks, domain, type == nv::kClockMem ? 2619 : 1980)));
}
}  // namespace

SIM_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  return Clock(device, type, clock, "clocks_mhz");
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type,
                                                  unsigned int* clock) {
  return Clock(device, type, clock, "max_clocks_mhz");
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                               unsigned long long* reasons) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "clocks", &g); r != nv::kSuccess) return r;
  return Put(reasons, Number(*g, "clock_event_reasons", 0));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                  unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int* current, int* pending) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "ecc", &g); r != nv::kSuccess) return r;
  if (current == nullptr || pending == nullptr) return nv::kInvalidArgument;
  *current = *pending = static_cast<int>(Number(Child(*g, "ecc"), "enabled", 1));
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type,
                                                    int counter_type, unsigned long long* count) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "ecc", &g); r != nv::kSuccess) return r;
  const Json& ecc = Child(*g, "ecc");
  if (Number(ecc, "enabled", 1) == 0) return nv::kNotSupported;
  const Json& counters = Child(ecc, counter_type == nv::kAggregateEcc ? "aggregate" : "volatile");
  return Put(count, Number(counters, error_type == nv::kMemoryErrorUncorrected ? "dbe" : "sbe", 0));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause,
                                                  unsigned int* page_count,
                                                  unsigned long long* addresses) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "retired_pages", &g); r != nv::kSuccess) return r;
  if (page_count == nullptr) return nv::kInvalidArgument;
  const auto pages = static_cast<unsigned>(
      Number(Child(*g, "retired_pages"), cause == nv::kRetiredDbe ? "dbe" : "sbe", 0));
  if (*page_count < pages) {
    *page_count = pages;
    return pages == 0 ? nv::kSuccess : nv::kInsufficientSize;
  }
  for (unsigned i = 0; addresses != nullptr && i < pages; ++i) addresses[i] = 0x1000ULL * (i + 1);
  *page_count = pages;
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int* pending) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "retired_pages", &g); r != nv::kSuccess) return r;
  return Put(pending, static_cast<int>(Number(Child(*g, "retired_pages"), "pending", 0)));
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr,
                                                  unsigned int* unc, unsigned int* pending,
                                                  unsigned int* failure) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "remapped_rows", &g); r != nv::kSuccess) return r;
  if (corr == nullptr || unc == nullptr || pending == nullptr || failure == nullptr) {
    return nv::kInvalidArgument;
  }
  const Json& rows = Child(*g, "remapped_rows");
  *corr = static_cast<unsigned>(Number(rows, "correctable"));
  *unc = static_cast<unsigned>(Number(rows, "uncorrectable"));
  *pending = static_cast<unsigned>(Number(rows, "pending"));
  *failure = static_cast<unsigned>(Number(rows, "failure"));
  return nv::kSuccess;
}

namespace {
nvmlReturn_t Pcie(nvmlDevice_t device, unsigned int* out, const char* key, unsigned fallback) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "pcie", &g); r != nv::kSuccess) return r;
  return Put(out, static_cast<unsigned>(Number(Child(*g, "pcie"), key, fallback)));
}
}  // namespace

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int* v) {
  return Pcie(d, v, "gen", 5);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int* v) {
  return Pcie(d, v, "width", 16);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int* v) {
  return Pcie(d, v, "max_gen", 5);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int* v) {
  return Pcie(d, v, "max_width", 16);
}
SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int* v) {
  return Pcie(d, v, "replay", 0);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                 int* active) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "nvlink", &g); r != nv::kSuccess) return r;
  const Json& nvlink = Child(*g, "nvlink");
  if (link >= Number(nvlink, "links", 0)) return nv::kInvalidArgument;
  bool inactive = false;
  if (nvlink.contains("inactive") && nvlink["inactive"].is_array()) {
    for (const Json& l : nvlink["inactive"]) {
      inactive |= l.is_number_unsigned() && l.get<unsigned long long>() == link;
    }
  }
  return Put(active, inactive ? 0 : 1);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count,
                                                 nvmlFieldValue_t* values) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, nullptr, &g); r != nv::kSuccess) return r;
  if (values == nullptr || count < 0) return nv::kInvalidArgument;
  bool unsupported_action = false;
  if (g->contains("unsupported") && (*g)["unsupported"].is_array()) {
    for (const Json& name : (*g)["unsupported"]) unsupported_action |= name == "recovery_action";
  }
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    v.latencyUsec = 0;
    if (v.fieldId == nv::kFieldGpuRecoveryAction && !unsupported_action) {
      v.valueType = 1;  // unsigned int
      v.value.uiVal = static_cast<unsigned>(Number(*g, "recovery_action", 0));
      v.nvmlReturn = nv::kSuccess;
    } else {
      v.nvmlReturn = nv::kNotSupported;
    }
  }
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_init_count == 0) return nv::kUninitialized;
  if (set == nullptr) return nv::kInvalidArgument;
  auto* events = new EventSet();
  // Only events after registration are recorded, as with the real library.
  const Json& state = State();
  if (state.contains("events") && state["events"].is_array()) {
    for (const Json& e : state["events"])
      events->last_seq = std::max(events->last_seq, Number(e, "seq"));
  }
  *set = reinterpret_cast<nvmlEventSet_t>(events);
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                         unsigned long long* types) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "events", &g); r != nv::kSuccess) return r;
  return Put(types, nv::kEventSingleBitEcc | nv::kEventDoubleBitEcc | nv::kEventXidCritical);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                                 nvmlEventSet_t set) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Json* g = nullptr;
  if (nvmlReturn_t r = Gpu(device, "events", &g); r != nv::kSuccess) return r;
  if (set == nullptr) return nv::kInvalidArgument;
  reinterpret_cast<EventSet*>(set)->registered.emplace_back(IndexOf(device), types);
  return nv::kSuccess;
}

SIM_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                            unsigned int timeout_ms) {
  if (set == nullptr || data == nullptr) return nv::kInvalidArgument;
  auto* events = reinterpret_cast<EventSet*>(set);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      const Json& state = State();
      const Json* next = nullptr;
      if (state.contains("events") && state["events"].is_array()) {
        for (const Json& e : state["events"]) {
          const unsigned long long seq = Number(e, "seq");
          if (seq <= events->last_seq || (next != nullptr && seq >= Number(*next, "seq"))) continue;
          for (const auto& [index, mask] : events->registered) {
            if (index == static_cast<int>(Number(e, "gpu")) && (mask & Number(e, "type")) != 0) {
              next = &e;
            }
          }
        }
      }
      if (next != nullptr) {
        events->last_seq = Number(*next, "seq");
        const auto index = static_cast<int>(Number(*next, "gpu"));
        data->device = index >= 0 && index < kMaxDevices ? g_handles[index] : nullptr;
        data->eventType = Number(*next, "type");
        data->eventData = Number(*next, "data");
        data->gpuInstanceId = 0xFFFFFFFFu;
        data->computeInstanceId = 0xFFFFFFFFu;
        return nv::kSuccess;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return nv::kTimeout;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

SIM_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  delete reinterpret_cast<EventSet*>(set);
  return nv::kSuccess;
}
