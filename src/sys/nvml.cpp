#include "sys/nvml.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "core/strings.hpp"
#include "sys/nvml_abi.hpp"

namespace cmax::sys {

namespace nv = cmax::nvml;

// Function pointer types for the calls cmax makes; versioned names where NVML has them.
struct Nvml::Api {
  void* handle = nullptr;
  std::string path;
  bool initialised = false;
  nvmlEventSet_t events = nullptr;

  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  // Called with a count of 0 and no array: SUCCESS when no process runs, else
  // INSUFFICIENT_SIZE with the count (so the array's version never matters).
  nvmlReturn_t (*compute_processes)(nvmlDevice_t, unsigned*, void*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired_pages)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
  nvmlReturn_t (*retired_pending)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_max_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_max_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_replay)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*supported_events)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;

  template <class F>
  void Bind(F& fn, const char* symbol_name, const char* fallback = nullptr) {
    void* symbol = ::dlsym(handle, symbol_name);
    if (symbol == nullptr && fallback != nullptr) symbol = ::dlsym(handle, fallback);
    fn = reinterpret_cast<F>(symbol);
  }

  std::string Error(nvmlReturn_t code) const {
    if (error_string != nullptr) {
      if (const char* text = error_string(code)) return text;
    }
    return "NVML error " + std::to_string(code);
  }
};

namespace {

// Runs one optional reading: empty when unsupported (or the symbol is absent), noted when
// anything else went wrong; a lost GPU marks the reading.
template <class T, class Call>
void Read(const Nvml::Api& api, GpuReading& gpu, const char* what, bool present, Call call,
          std::optional<T>& out) {
  if (!present) return;
  T value{};
  const nvmlReturn_t rc = call(value);
  if (rc == nv::kSuccess) {
    out = value;
  } else if (rc == nv::kGpuIsLost) {
    gpu.lost = true;
  } else if (rc != nv::kNotSupported && rc != nv::kFunctionNotFound) {
    gpu.errors.push_back(std::string(what) + ": " + api.Error(rc));
  }
}

}  // namespace

std::string NormalizeBusId(const std::string& nvml_bus_id) {
  std::string id = ToLower(Trim(nvml_bus_id));
  // "00000000:17:00.0" -> "0000:17:00.0"
  const size_t colon = id.find(':');
  if (colon == 8 && id.compare(0, 4, "0000") == 0) id = id.substr(4);
  return id;
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  if (api_->events != nullptr && api_->event_set_free != nullptr)
    api_->event_set_free(api_->events);
  if (api_->initialised && api_->shutdown != nullptr) api_->shutdown();
  if (api_->handle != nullptr) ::dlclose(api_->handle);
}

const std::string& Nvml::LibraryPath() const {
  return api_->path;
}

Result<std::unique_ptr<Nvml>> Nvml::Load(const std::string& path) {
  std::vector<std::string> candidates;
  if (!path.empty()) {
    candidates.push_back(path);
  } else if (const char* env = std::getenv("CMAX_NVML_LIB"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    candidates = {"libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1",
                  "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                  "/usr/lib/nvidia/libnvidia-ml.so.1", "/usr/lib64/nvidia/libnvidia-ml.so.1"};
  }
  auto api = std::make_unique<Api>();
  std::string why;
  for (const std::string& candidate : candidates) {
    api->handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (api->handle != nullptr) {
      api->path = candidate;
      break;
    }
    if (why.empty()) why = ::dlerror();
  }
  if (api->handle == nullptr) {
    return Fail(ErrorCode::kUnavailable, "{} ({})", kNvmlNotFound, why);
  }
  Api& a = *api;
  a.Bind(a.init, "nvmlInit_v2", "nvmlInit");
  a.Bind(a.shutdown, "nvmlShutdown");
  a.Bind(a.error_string, "nvmlErrorString");
  a.Bind(a.driver_version, "nvmlSystemGetDriverVersion");
  a.Bind(a.count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  a.Bind(a.handle_by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  a.Bind(a.uuid, "nvmlDeviceGetUUID");
  a.Bind(a.name, "nvmlDeviceGetName");
  a.Bind(a.pci_info, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
  a.Bind(a.temperature, "nvmlDeviceGetTemperature");
  a.Bind(a.power_usage, "nvmlDeviceGetPowerUsage");
  a.Bind(a.utilization, "nvmlDeviceGetUtilizationRates");
  a.Bind(a.compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3",
         "nvmlDeviceGetComputeRunningProcesses_v2");
  a.Bind(a.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  a.Bind(a.clock, "nvmlDeviceGetClockInfo");
  a.Bind(a.max_clock, "nvmlDeviceGetMaxClockInfo");
  a.Bind(a.clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
         "nvmlDeviceGetCurrentClocksThrottleReasons");
  a.Bind(a.ecc_mode, "nvmlDeviceGetEccMode");
  a.Bind(a.ecc_errors, "nvmlDeviceGetTotalEccErrors");
  a.Bind(a.retired_pages, "nvmlDeviceGetRetiredPages");
  a.Bind(a.retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  a.Bind(a.remapped_rows, "nvmlDeviceGetRemappedRows");
  a.Bind(a.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
  a.Bind(a.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
  a.Bind(a.pcie_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
  a.Bind(a.pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
  a.Bind(a.pcie_replay, "nvmlDeviceGetPcieReplayCounter");
  a.Bind(a.nvlink_state, "nvmlDeviceGetNvLinkState");
  a.Bind(a.field_values, "nvmlDeviceGetFieldValues");
  a.Bind(a.event_set_create, "nvmlEventSetCreate");
  a.Bind(a.event_set_free, "nvmlEventSetFree");
  a.Bind(a.supported_events, "nvmlDeviceGetSupportedEventTypes");
  a.Bind(a.register_events, "nvmlDeviceRegisterEvents");
  a.Bind(a.event_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
  if (a.init == nullptr || a.count == nullptr || a.handle_by_index == nullptr) {
    const std::string loaded = a.path;
    ::dlclose(a.handle);
    a.handle = nullptr;
    return Fail(ErrorCode::kUnavailable, "{} is not an NVML library (no nvmlInit_v2)", loaded);
  }
  if (const nvmlReturn_t rc = a.init(); rc != nv::kSuccess) {
    const std::string text = a.Error(rc);
    ::dlclose(a.handle);
    a.handle = nullptr;
    return Fail(ErrorCode::kUnavailable, "nvmlInit failed: {} ({})", text, rc);
  }
  a.initialised = true;
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Result<NvmlSnapshot> Nvml::Snapshot() {
  const Api& a = *api_;
  NvmlSnapshot snapshot;
  snapshot.library = a.path;
  if (a.driver_version != nullptr) {
    char version[nv::kDriverVersionBufferSize] = {};
    if (a.driver_version(version, sizeof(version)) == nv::kSuccess)
      snapshot.driver_version = version;
  }
  unsigned count = 0;
  if (const nvmlReturn_t rc = a.count(&count); rc != nv::kSuccess) {
    return Fail(ErrorCode::kUnavailable, "nvmlDeviceGetCount: {}", a.Error(rc));
  }
  snapshot.device_count = count;
  for (unsigned i = 0; i < count; ++i) {
    GpuReading gpu;
    gpu.index = i;
    nvmlDevice_t device = nullptr;
    const nvmlReturn_t rc = a.handle_by_index(i, &device);
    if (rc != nv::kSuccess) {
      gpu.lost = rc == nv::kGpuIsLost;
      gpu.errors.push_back("GetHandleByIndex: " + a.Error(rc));
      snapshot.gpus.push_back(std::move(gpu));
      continue;
    }
    char text[nv::kUuidBufferSize] = {};
    if (a.uuid != nullptr && a.uuid(device, text, sizeof(text)) == nv::kSuccess) gpu.uuid = text;
    char name[nv::kNameBufferSize] = {};
    if (a.name != nullptr && a.name(device, name, sizeof(name)) == nv::kSuccess) gpu.name = name;
    nvmlPciInfo_t pci{};
    if (a.pci_info != nullptr && a.pci_info(device, &pci) == nv::kSuccess) {
      gpu.pci_bus_id = NormalizeBusId(pci.busId);
    }
    Read<unsigned>(
        a, gpu, "GetTemperature", a.temperature != nullptr,
        [&](unsigned& v) { return a.temperature(device, nv::kTemperatureGpu, &v); },
        gpu.temperature_c);
    Read<unsigned>(
        a, gpu, "GetPowerUsage", a.power_usage != nullptr,
        [&](unsigned& v) { return a.power_usage(device, &v); }, gpu.power_mw);
    Read<unsigned>(
        a, gpu, "GetUtilizationRates", a.utilization != nullptr,
        [&](unsigned& v) {
          nvmlUtilization_t rates{};
          const nvmlReturn_t r = a.utilization(device, &rates);
          v = rates.gpu;
          return r;
        },
        gpu.utilization_percent);
    Read<unsigned>(
        a, gpu, "GetComputeRunningProcesses", a.compute_processes != nullptr,
        [&](unsigned& v) {
          v = 0;
          const nvmlReturn_t r = a.compute_processes(device, &v, nullptr);
          return r == nv::kInsufficientSize ? nv::kSuccess : r;
        },
        gpu.compute_processes);
    Read<unsigned>(
        a, gpu, "GetEnforcedPowerLimit", a.power_limit != nullptr,
        [&](unsigned& v) { return a.power_limit(device, &v); }, gpu.power_limit_mw);
    Read<unsigned>(
        a, gpu, "GetClockInfo", a.clock != nullptr,
        [&](unsigned& v) { return a.clock(device, nv::kClockSm, &v); }, gpu.sm_clock_mhz);
    Read<unsigned>(
        a, gpu, "GetMaxClockInfo", a.max_clock != nullptr,
        [&](unsigned& v) { return a.max_clock(device, nv::kClockSm, &v); }, gpu.max_sm_clock_mhz);
    Read<uint64_t>(
        a, gpu, "GetCurrentClocksEventReasons", a.clock_reasons != nullptr,
        [&](uint64_t& v) {
          unsigned long long reasons = 0;
          const nvmlReturn_t r = a.clock_reasons(device, &reasons);
          v = reasons;
          return r;
        },
        gpu.clock_event_reasons);
    Read<bool>(
        a, gpu, "GetEccMode", a.ecc_mode != nullptr,
        [&](bool& v) {
          int current = 0;
          int pending = 0;
          const nvmlReturn_t r = a.ecc_mode(device, &current, &pending);
          v = current == 1;
          return r;
        },
        gpu.ecc_enabled);
    auto ecc = [&](int type, int counter, std::optional<uint64_t>& out) {
      Read<uint64_t>(
          a, gpu, "GetTotalEccErrors", a.ecc_errors != nullptr,
          [&](uint64_t& v) {
            unsigned long long n = 0;
            const nvmlReturn_t r = a.ecc_errors(device, type, counter, &n);
            v = n;
            return r;
          },
          out);
    };
    if (gpu.ecc_enabled.value_or(false)) {
      ecc(nv::kMemoryErrorCorrected, nv::kVolatileEcc, gpu.ecc_sbe_volatile);
      ecc(nv::kMemoryErrorUncorrected, nv::kVolatileEcc, gpu.ecc_dbe_volatile);
      ecc(nv::kMemoryErrorCorrected, nv::kAggregateEcc, gpu.ecc_sbe_aggregate);
      ecc(nv::kMemoryErrorUncorrected, nv::kAggregateEcc, gpu.ecc_dbe_aggregate);
    }
    auto retired = [&](int cause, std::optional<unsigned>& out) {
      Read<unsigned>(
          a, gpu, "GetRetiredPages", a.retired_pages != nullptr,
          [&](unsigned& v) {
            unsigned pages = 0;  // size query: 0 in, the count out
            nvmlReturn_t r = a.retired_pages(device, cause, &pages, nullptr);
            if (r == nv::kInsufficientSize) r = nv::kSuccess;
            v = pages;
            return r;
          },
          out);
    };
    retired(nv::kRetiredMultipleSbe, gpu.retired_pages_sbe);
    retired(nv::kRetiredDbe, gpu.retired_pages_dbe);
    Read<bool>(
        a, gpu, "GetRetiredPagesPendingStatus", a.retired_pending != nullptr,
        [&](bool& v) {
          int pending = 0;
          const nvmlReturn_t r = a.retired_pending(device, &pending);
          v = pending == 1;
          return r;
        },
        gpu.retired_pages_pending);
    if (a.remapped_rows != nullptr) {
      unsigned corr = 0, unc = 0, pending = 0, failure = 0;
      const nvmlReturn_t r = a.remapped_rows(device, &corr, &unc, &pending, &failure);
      if (r == nv::kSuccess) {
        gpu.remapped_rows_correctable = corr;
        gpu.remapped_rows_uncorrectable = unc;
        gpu.remapped_rows_pending = pending != 0;
        gpu.remapped_rows_failure = failure != 0;
      } else if (r == nv::kGpuIsLost) {
        gpu.lost = true;
      } else if (r != nv::kNotSupported) {
        gpu.errors.push_back("GetRemappedRows: " + a.Error(r));
      }
    }
    auto pcie = [&](const char* what, auto fn, std::optional<unsigned>& out) {
      Read<unsigned>(
          a, gpu, what, fn != nullptr, [&](unsigned& v) { return fn(device, &v); }, out);
    };
    pcie("GetCurrPcieLinkGeneration", a.pcie_gen, gpu.pcie_gen);
    pcie("GetCurrPcieLinkWidth", a.pcie_width, gpu.pcie_width);
    pcie("GetMaxPcieLinkGeneration", a.pcie_max_gen, gpu.pcie_max_gen);
    pcie("GetMaxPcieLinkWidth", a.pcie_max_width, gpu.pcie_max_width);
    pcie("GetPcieReplayCounter", a.pcie_replay, gpu.pcie_replay);
    if (a.nvlink_state != nullptr) {
      // The link count differs between header versions: ask until the driver says no.
      unsigned links = 0, inactive = 0;
      for (unsigned link = 0; link < 64; ++link) {
        int active = 0;
        const nvmlReturn_t r = a.nvlink_state(device, link, &active);
        if (r != nv::kSuccess) {
          // Link 0 not supported, or out of range: this GPU has no NVLink. Any other answer
          // (lost, no permission) says nothing.
          gpu.nvlink_none = link == 0 && (r == nv::kNotSupported || r == nv::kInvalidArgument);
          break;
        }
        ++links;
        inactive += active == 1 ? 0 : 1;
      }
      if (links > 0) {
        gpu.nvlink_links = links;
        gpu.nvlink_inactive = inactive;
      }
    }
    if (a.field_values != nullptr) {
      nvmlFieldValue_t field{};
      field.fieldId = nv::kFieldGpuRecoveryAction;
      if (a.field_values(device, 1, &field) == nv::kSuccess && field.nvmlReturn == nv::kSuccess) {
        // Decoded by its value type: which one field 230 uses is not documented.
        switch (field.valueType) {
          case 0: gpu.recovery_action = static_cast<unsigned>(field.value.dVal); break;
          case 1: gpu.recovery_action = field.value.uiVal; break;
          case 2: gpu.recovery_action = static_cast<unsigned>(field.value.ulVal); break;
          case 3: gpu.recovery_action = static_cast<unsigned>(field.value.ullVal); break;
          case 4: gpu.recovery_action = static_cast<unsigned>(field.value.sllVal); break;
          case 5: gpu.recovery_action = static_cast<unsigned>(field.value.siVal); break;
          case 6: gpu.recovery_action = field.value.usVal; break;
          default: break;
        }
      }
    }
    snapshot.gpus.push_back(std::move(gpu));
  }
  return snapshot;
}

Result<void> Nvml::WatchEvents() {
  Api& a = *api_;
  if (a.event_set_create == nullptr || a.register_events == nullptr || a.event_wait == nullptr) {
    return Fail(ErrorCode::kUnsupported, "{} has no event calls", a.path);
  }
  if (a.events == nullptr) {
    if (const nvmlReturn_t rc = a.event_set_create(&a.events); rc != nv::kSuccess) {
      return Fail(ErrorCode::kUnavailable, "nvmlEventSetCreate: {}", a.Error(rc));
    }
  }
  unsigned count = 0;
  if (a.count(&count) != nv::kSuccess) return Fail(ErrorCode::kUnavailable, "no device count");
  const unsigned long long wanted =
      nv::kEventXidCritical | nv::kEventDoubleBitEcc | nv::kEventSingleBitEcc;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (a.handle_by_index(i, &device) != nv::kSuccess) continue;
    unsigned long long supported = wanted;
    if (a.supported_events != nullptr) (void)a.supported_events(device, &supported);
    // NOT_SUPPORTED leaves the set usable: register what the GPU supports, one call.
    (void)a.register_events(device, wanted & supported, a.events);
  }
  return {};
}

Result<std::optional<NvmlEvent>> Nvml::WaitEvent(Duration timeout) {
  Api& a = *api_;
  if (a.events == nullptr) return Fail(ErrorCode::kInvalidArgument, "WatchEvents first");
  nvmlEventData_t data{};
  const auto ms =
      static_cast<unsigned>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  const nvmlReturn_t rc = a.event_wait(a.events, &data, ms);
  if (rc == nv::kTimeout) return std::optional<NvmlEvent>();
  if (rc != nv::kSuccess) return Fail(ErrorCode::kUnavailable, "nvmlEventSetWait: {}", a.Error(rc));
  NvmlEvent event;
  event.type = data.eventType;
  event.data = data.eventData;
  unsigned count = 0;
  (void)a.count(&count);
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (a.handle_by_index(i, &device) == nv::kSuccess && device == data.device) {
      event.gpu_index = i;
      nvmlPciInfo_t pci{};
      if (a.pci_info != nullptr && a.pci_info(device, &pci) == nv::kSuccess) {
        event.pci_bus_id = NormalizeBusId(pci.busId);
      }
    }
  }
  return std::optional<NvmlEvent>(event);
}

Result<NvmlSnapshot> ReadNvmlSnapshot(const std::string& library_path) {
  auto nvml = Nvml::Load(library_path);
  if (!nvml) return tl::unexpected(nvml.error());
  return (*nvml)->Snapshot();
}

}  // namespace cmax::sys
