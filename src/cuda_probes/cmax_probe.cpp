// cmax-probe: runs cmax's CUDA probes (libcmax-probes.so, through dlopen) in a process of its
// own, so that cmax holds it to a deadline and outlives whatever the GPU or its driver does to
// it (a hung kernel, a crash in the driver). cmax reads what it prints
// (src/active/cuda_probes.hpp); a person can run it too.
//
//   cmax-probe [--library PATH] [--n N] quick           every GPU: GEMM, HBM copy, H2D, D2H
//   cmax-probe [--library PATH] [--n N] burn SECONDS    every GPU at once, until SECONDS or SIGTERM
//
// One JSON object a line on stdout:
//   {"devices":["0000:17:00.0",...]}
//   {"probe":"gemm_bf16","device":0,"bus_id":"0000:17:00.0","value":812.4,"seconds":0.71}
//   {"probe":"burn",...,"mismatches":0}            {"probe":...,"error":"cublasGemmEx: ..."}
//   {"heartbeat":3}                                 while a burn runs, every 0.2 s
//   {"unavailable":"why"}                           no CUDA here: exit 3
// Exit 0 when every probe ran (whatever it measured), 1 when one failed, 2 usage, 3 unavailable.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cuda_probes/probe_abi.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnTerm(int /*signal*/) {
  g_stop.store(true);
}
extern "C" int GoOn(void* /*context*/) {
  return g_stop.load() ? 0 : 1;
}

void Say(const nlohmann::json& line) {
  std::puts(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

struct Api {
  int (*abi_version)() = nullptr;
  int (*device_count)(cmax_probe_result*) = nullptr;
  int (*pci_bus_id)(int, char*, int, cmax_probe_result*) = nullptr;
  int (*gemm)(int, int, int, cmax_probe_result*) = nullptr;
  int (*hbm_copy)(int, unsigned long long, int, cmax_probe_result*) = nullptr;
  int (*host_copy)(int, int, unsigned long long, int, cmax_probe_result*) = nullptr;
  int (*burn)(int, int, double, cmax_probe_go_on, void*, cmax_probe_result*) = nullptr;
};

template <typename F>
bool Bind(void* library, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  return slot != nullptr;
}

// The library beside this program's folder: bin/cmax-probe, lib/libcmax-probes.so.
std::string DefaultLibrary() {
  if (const char* path = std::getenv("CMAX_PROBES_LIB"); path != nullptr && *path != '\0') {
    return path;
  }
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return "libcmax-probes.so";
  self.resize(static_cast<size_t>(n));
  const std::string bin = self.substr(0, self.rfind('/'));
  return bin.substr(0, bin.rfind('/') + 1) + "lib/libcmax-probes.so";
}

int Unavailable(const std::string& why) {
  Say({{"unavailable", why}});
  return 3;
}

nlohmann::json Line(const char* probe, int device, const std::string& bus_id,
                    const cmax_probe_result& r, int rc) {
  nlohmann::json line = {{"probe", probe}, {"device", device}, {"bus_id", bus_id}};
  if (rc != 0) {
    line["error"] = std::string(r.error);
  } else {
    line["value"] = r.value;
    line["seconds"] = r.seconds;
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  std::string library_path;
  int n = 8192;
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--library" && i + 1 < argc) {
      library_path = argv[++i];
    } else if (arg == "--n" && i + 1 < argc) {
      n = std::atoi(argv[++i]);
    } else {
      words.push_back(arg);
    }
  }
  const bool quick = words.size() == 1 && words[0] == "quick";
  const bool burn = words.size() == 2 && words[0] == "burn";
  const double burn_seconds = burn ? std::atof(words[1].c_str()) : 0;
  if ((!quick && !burn) || (burn && burn_seconds <= 0) || n < 256) {
    std::fprintf(stderr, "usage: cmax-probe [--library PATH] [--n N>=256] quick | burn SECONDS\n");
    return 2;
  }
  const bool named = !library_path.empty() || std::getenv("CMAX_PROBES_LIB") != nullptr;
  if (library_path.empty()) library_path = DefaultLibrary();
  // The library cmax builds beside itself is absent when it was built without the toolkit.
  if (access(library_path.c_str(), F_OK) != 0) {
    return Unavailable(library_path + (named ? " is not there"
                                             : " is not there: cmax was built without the "
                                               "CUDA toolkit (nvcc)"));
  }
  void* library = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return Unavailable(std::string("cannot load ") + dlerror());
  Api api;
  if (!Bind(library, "cmax_probe_abi_version", api.abi_version) ||
      !Bind(library, "cmax_probe_device_count", api.device_count) ||
      !Bind(library, "cmax_probe_device_pci_bus_id", api.pci_bus_id) ||
      !Bind(library, "cmax_probe_gemm_bf16", api.gemm) ||
      !Bind(library, "cmax_probe_hbm_copy", api.hbm_copy) ||
      !Bind(library, "cmax_probe_host_copy", api.host_copy) ||
      !Bind(library, "cmax_probe_burn", api.burn)) {
    return Unavailable(library_path + " lacks a probe entry point: not a cmax probe library");
  }
  if (api.abi_version() != CMAX_PROBE_ABI_VERSION) {
    return Unavailable(library_path + " is of probe ABI " + std::to_string(api.abi_version()) +
                       ", this cmax-probe of " + std::to_string(CMAX_PROBE_ABI_VERSION) +
                       ": rebuild cmax");
  }

  cmax_probe_result r{};
  if (api.device_count(&r) != 0) return Unavailable(std::string("CUDA: ") + r.error);
  const int devices = static_cast<int>(r.value);
  if (devices <= 0) return Unavailable("CUDA sees no GPU");
  std::vector<std::string> bus_ids;
  for (int d = 0; d < devices; ++d) {
    char bus_id[32] = {};
    bus_ids.emplace_back(api.pci_bus_id(d, bus_id, sizeof bus_id, &r) == 0 ? bus_id : "");
  }
  Say({{"devices", bus_ids}});

  int status = 0;
  if (quick) {
    constexpr unsigned long long kCopyBytes = 1ULL << 30;
    constexpr unsigned long long kHostBytes = 256ULL << 20;
    for (int d = 0; d < devices; ++d) {
      int rc = api.gemm(d, n, 50, &r);
      Say(Line("gemm_bf16", d, bus_ids[d], r, rc));
      status |= rc != 0 ? 1 : 0;
      rc = api.hbm_copy(d, kCopyBytes, 50, &r);
      Say(Line("hbm_copy", d, bus_ids[d], r, rc));
      status |= rc != 0 ? 1 : 0;
      rc = api.host_copy(d, 1, kHostBytes, 20, &r);
      Say(Line("host_to_device", d, bus_ids[d], r, rc));
      status |= rc != 0 ? 1 : 0;
      rc = api.host_copy(d, 0, kHostBytes, 20, &r);
      Say(Line("device_to_host", d, bus_ids[d], r, rc));
      status |= rc != 0 ? 1 : 0;
    }
    return status;
  }

  // The burn: every GPU at once (the node's power and heat are part of what is tested), until
  // the time is up or cmax says stop (SIGTERM: it saw an Xid, a lost GPU, or its deadline).
  struct sigaction term {};
  term.sa_handler = OnTerm;
  sigaction(SIGTERM, &term, nullptr);
  sigaction(SIGINT, &term, nullptr);
  std::vector<cmax_probe_result> results(static_cast<size_t>(devices));
  std::vector<int> codes(static_cast<size_t>(devices), 0);
  std::atomic<int> running{devices};
  std::vector<std::thread> threads;
  for (int d = 0; d < devices; ++d) {
    threads.emplace_back([&, d] {
      codes[d] = api.burn(d, n, burn_seconds, GoOn, nullptr, &results[d]);
      running.fetch_sub(1);
    });
  }
  for (int beat = 0; running.load() > 0; ++beat) {
    Say({{"heartbeat", beat}});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (std::thread& t : threads) t.join();
  for (int d = 0; d < devices; ++d) {
    nlohmann::json line = Line("burn", d, bus_ids[d], results[d], codes[d]);
    if (codes[d] == 0) line["mismatches"] = results[d].mismatches;
    Say(line);
    status |= codes[d] != 0 ? 1 : 0;
  }
  if (g_stop.load()) Say({{"stopped", true}});
  return status;
}
