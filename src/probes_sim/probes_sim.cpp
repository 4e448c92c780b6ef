// libcmax-probes-sim.so: a stand-in for cmax's CUDA probes (libcmax-probes.so) with the same C
// ABI, for tests on machines without a GPU. Its figures come from the JSON file named by
// $CMAX_PROBES_SIM, read at each call:
//   {"devices": ["0000:17:00.0", ...],        CUDA's devices by PCI address
//    "unavailable": "why",                    cudaGetDeviceCount's error instead
//    "gemm_bf16": [812.5, ...], "hbm_copy": [...], "host_to_device": [...],
//    "device_to_host": [...], "burn": [...],  one figure a device
//    "mismatches": [0, ...],                  the burn's wrong elements a device
//    "errors": {"hbm_copy": "why", ...}}      a probe that fails on every device
// Its burn runs until the seconds are up or go_on says stop, and first creates the file named
// by $CMAX_PROBES_SIM_BURNING, so that a test can act while it runs.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "cuda_probes/probe_abi.h"

namespace {

using Json = nlohmann::json;

Json State() {
  const char* path = std::getenv("CMAX_PROBES_SIM");
  if (path == nullptr) return Json::object();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json doc = Json::parse(text.str(), nullptr, false);
  return doc.is_object() ? doc : Json::object();
}

int Failed(cmax_probe_result* result, const std::string& why) {
  std::snprintf(result->error, sizeof result->error, "%s", why.c_str());
  return 1;
}

// The figure of `probe` on `device`, or the failure the state names.
int Figure(const char* probe, int device, cmax_probe_result* result) {
  std::memset(result, 0, sizeof *result);
  const Json state = State();
  if (state.contains("errors") && state["errors"].contains(probe)) {
    return Failed(result, state["errors"][probe].get<std::string>());
  }
  if (!state.contains(probe) || !state[probe].is_array() ||
      device >= static_cast<int>(state[probe].size())) {
    return Failed(result, std::string("no figure for ") + probe + " in the stand-in's state");
  }
  result->value = state[probe][device].get<double>();
  result->seconds = 0.5;
  return 0;
}

}  // namespace

// C names, as the ABI has them.
// NOLINTBEGIN(readability-identifier-naming)
extern "C" {

int cmax_probe_abi_version(void) {
  return CMAX_PROBE_ABI_VERSION;
}

int cmax_probe_device_count(cmax_probe_result* result) {
  std::memset(result, 0, sizeof *result);
  const Json state = State();
  if (state.contains("unavailable")) return Failed(result, state["unavailable"].get<std::string>());
  result->value = state.contains("devices") ? static_cast<double>(state["devices"].size()) : 0;
  return 0;
}

int cmax_probe_device_pci_bus_id(int device, char* bus_id, int length, cmax_probe_result* result) {
  std::memset(result, 0, sizeof *result);
  const Json state = State();
  if (!state.contains("devices") || device >= static_cast<int>(state["devices"].size())) {
    return Failed(result, "invalid device ordinal");
  }
  std::snprintf(bus_id, static_cast<size_t>(length), "%s",
                state["devices"][device].get<std::string>().c_str());
  return 0;
}

int cmax_probe_gemm_bf16(int device, int /*n*/, int /*iterations*/, cmax_probe_result* result) {
  return Figure("gemm_bf16", device, result);
}

int cmax_probe_hbm_copy(int device, unsigned long long /*bytes*/, int /*iterations*/,
                        cmax_probe_result* result) {
  return Figure("hbm_copy", device, result);
}

int cmax_probe_host_copy(int device, int to_device, unsigned long long /*bytes*/,
                         int /*iterations*/, cmax_probe_result* result) {
  return Figure(to_device != 0 ? "host_to_device" : "device_to_host", device, result);
}

int cmax_probe_burn(int device, int /*n*/, double seconds, cmax_probe_go_on go_on, void* context,
                    cmax_probe_result* result) {
  if (Figure("burn", device, result) != 0) return 1;
  const double tflops = result->value;
  const Json state = State();
  if (state.contains("mismatches") && device < static_cast<int>(state["mismatches"].size())) {
    result->mismatches = state["mismatches"][device].get<unsigned long long>();
  }
  if (const char* burning = std::getenv("CMAX_PROBES_SIM_BURNING"); burning != nullptr) {
    const int fd = open(burning, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
  }
  // The stand-in's "work": it waits in short steps, as the real burn looks at go_on between
  // batches of multiplies.
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds && (go_on == nullptr || go_on(context) != 0)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  result->seconds = elapsed;
  result->value = tflops;
  return 0;
}

}  // extern "C"
// NOLINTEND(readability-identifier-naming)
