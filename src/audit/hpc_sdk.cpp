#include "audit/hpc_sdk.hpp"

#include <algorithm>
#include <regex>

#include "core/strings.hpp"
#include "core/version.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

constexpr const char* kRoot = "/opt/nvidia/hpc_sdk";
// What a whole release holds besides its compilers: the CUDA toolkits, the math libraries
// (cuBLAS, cuFFT, cuSOLVER ...), the communication libraries (NCCL, NVSHMEM, HPC-X's Open MPI)
// and the profilers (Nsight Systems and Compute).
constexpr const char* kPayload[] = {"cuda", "math_libs", "comm_libs", "profilers", "compilers/lib"};
constexpr const char* kCompilers[] = {"nvc", "nvc++", "nvfortran"};

bool IsRelease(std::string_view name) {
  static const std::regex kRelease(R"(\d{2}\.\d{1,2})");
  return std::regex_match(name.begin(), name.end(), kRelease);
}

}  // namespace

std::string ParseHpcSdkCompilerRelease(std::string_view output) {
  static const std::regex kLine(
      R"((?:^|\n)\s*nv(?:c|c\+\+|fortran)\s+(\d{2}\.\d{1,2})(?:-\d+)?\b)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(output.begin(), output.end(), m, kLine)) return {};
  return m[1].str();
}

void CollectHpcSdk(const sys::FileSystem& fs, sys::ProcessRunner& runner, Duration timeout,
                   AuditEvidence& out) {
  // The newest release of this machine's architecture folder (a shared /opt may hold the other
  // one's too, whose compilers cannot run here), else of any.
  std::string newest;
  std::string home;
  if (auto arches = fs.ListDir(kRoot)) {
#if defined(__aarch64__)
    const std::string own = "Linux_aarch64";
#else
    const std::string own = "Linux_x86_64";
#endif
    if (std::ranges::find(*arches, own) != arches->end()) *arches = {own};
    for (const std::string& arch : *arches) {
      if (!arch.starts_with("Linux_")) continue;
      const auto releases = fs.ListDir(std::string(kRoot) + "/" + arch);
      if (!releases) continue;
      for (const std::string& release : *releases) {
        if (!IsRelease(release)) continue;
        const auto a = ParseVersion(release);
        const auto b = ParseVersion(newest);
        if (newest.empty() || (a && b && CompareVersions(*a, *b) > 0)) {
          newest = release;
          home = std::string(kRoot) + "/" + arch + "/" + release;
        }
      }
    }
  }
  if (newest.empty()) {
    out["software.nvhpc.release"] = nullptr;
    return;
  }
  out["software.nvhpc.release"] = newest;
  json compilers = json::object();
  for (const char* compiler : kCompilers) {
    const std::string program = home + "/compilers/bin/" + compiler;
    compilers[compiler] = nullptr;
    if (!fs.Exists(program)) continue;
    sys::ProcessSpec spec{
        .argv = {program, "--version"}, .env_add = {"LC_ALL=C"}, .timeout = timeout};
    spec.output_cap = size_t{64} << 10;
    auto ran = runner.Run(spec);
    if (!ran || !ran->Succeeded()) continue;
    if (std::string release = ParseHpcSdkCompilerRelease(ran->stdout_text + ran->stderr_text);
        !release.empty()) {
      compilers[compiler] = release;
    }
  }
  out["software.nvhpc.compilers"] = compilers;
  json missing = json::array();
  for (const char* part : kPayload) {
    if (!fs.IsDirectory(home + "/" + part)) missing.push_back(part);
  }
  out["software.nvhpc.payload"] = {{"path", SanitizeUtf8(home)}, {"missing", missing}};
}

}  // namespace cmax::audit
