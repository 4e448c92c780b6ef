#include "audit/local_evidence.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "audit/amd_driver.hpp"
#include "audit/environment_modules.hpp"
#include "audit/host_inventory.hpp"
#include "audit/hpc_sdk.hpp"
#include "audit/inventory_checks.hpp"
#include "audit/nccl_topology.hpp"
#include "audit/pci_evidence.hpp"
#include "core/strings.hpp"
#include "health/kernel_events.hpp"
#include "health/kernel_record.hpp"
#include "net/nccl_recipe.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// Files under /proc and /sys are small; the loader cache is the largest read (a few hundred KB).
constexpr size_t kSmallFile = size_t{64} << 10;
constexpr size_t kLoaderCache = size_t{16} << 20;

std::optional<std::string> Read(const sys::FileSystem& fs, const std::string& path,
                                size_t limit = kSmallFile) {
  auto text = fs.ReadFile(path, limit);
  if (!text) return std::nullopt;
  return std::move(*text);
}

std::string Trimmed(std::string_view text) {
  return std::string(Trim(text));
}

std::optional<int64_t> Integer(const std::string& text) {
  return ParseWhole<int64_t>(Trimmed(text));
}

json PathOrNull(const std::optional<std::string>& path) {
  return path ? json(*path) : json(nullptr);
}

// A program's output when it ran and succeeded in time; nothing otherwise.
std::optional<std::string> Output(sys::ProcessRunner& runner, const std::string& program,
                                  std::vector<std::string> args, Duration timeout) {
  sys::ProcessSpec spec;
  spec.argv = {program};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = timeout;
  spec.output_cap = kSmallFile;
  spec.env_add = {"LC_ALL=C"};
  auto result = runner.Run(spec);
  if (!result || !result->Succeeded()) return std::nullopt;
  return result->stdout_text + result->stderr_text;
}

// A version read from a program: null when the program is not there; left out (not collected)
// when it is there but did not answer in time or said nothing we read.
void ProgramVersion(AuditEvidence& out, const std::string& key,
                    const std::optional<std::string>& program, sys::ProcessRunner& runner,
                    std::vector<std::string> args, Duration timeout,
                    std::string (*parse)(std::string_view)) {
  if (!program) {
    out[key] = nullptr;
    return;
  }
  const auto text = Output(runner, *program, std::move(args), timeout);
  if (!text) return;
  if (std::string version = parse(*text); !version.empty()) out[key] = version;
}

// The driver as /proc/driver/nvidia says; null when it says nothing (see DriverFromNvml).
void Driver(const sys::FileSystem& fs, AuditEvidence& out) {
  const auto version = Read(fs, "/proc/driver/nvidia/version");
  const auto driver = version ? ParseNvidiaVersion(*version) : std::nullopt;
  if (!driver || driver->version.empty()) {
    out["gpu.driver.version"] = nullptr;
    return;
  }
  out["gpu.driver.version"] = driver->version;
  out["gpu.driver.source"] = "/proc/driver/nvidia/version";
  out["gpu.driver.open_kernel"] = driver->open_kernel_module;
  // DMA-BUF: the module exports it (the public audit looks for dma_buf* below the module).
  bool dma_buf = false;
  for (const char* dir : {"/sys/module/nvidia/parameters", "/sys/module/nvidia"}) {
    auto entries = fs.ListDir(dir);
    if (!entries) continue;
    dma_buf = dma_buf || std::any_of(entries->begin(), entries->end(),
                                     [](const std::string& e) { return e.starts_with("dma_buf"); });
  }
  out["gpu.driver.dma_buf"] = dma_buf;
  const auto params = Read(fs, "/proc/driver/nvidia/params");
  // "Name: value" in the driver's params; the module parameter file NVreg_Name first.
  const auto param = [&](std::string_view name) -> std::optional<std::string> {
    if (auto file = Read(fs, "/sys/module/nvidia/parameters/NVreg_" + std::string(name))) {
      return Trimmed(*file);
    }
    if (!params) return std::nullopt;
    const std::string label = std::string(name) + ":";
    for (std::string_view line : Split(*params, '\n')) {
      if (line.starts_with(label)) return Trimmed(line.substr(label.size()));
    }
    return std::nullopt;
  };
  if (const auto v = param("RmProfilingAdminOnly"); v && Integer(*v)) {
    out["gpu.driver.params.profiling_admin_only"] = *Integer(*v);
  }
  if (const auto v = param("EnableStreamMemOPs"); v && Integer(*v)) {
    out["gpu.driver.params.enable_stream_memops"] = *Integer(*v);
  }
  // Grace systems: how the GPU's memory is managed ("driver": CDMM, HBM stays the GPU's);
  // a driver that does not know the parameter says nothing (null).
  if (const auto v = param("CoherentGPUMemoryMode")) {
    std::string mode = *v;
    std::erase(mode, '"');
    out["gpu.driver.params.coherent_gpu_memory_mode"] = SanitizeUtf8(mode);
  } else {
    out["gpu.driver.params.coherent_gpu_memory_mode"] = nullptr;
  }
  // PeerMappingOverride lives in the registry keys: RegistryDwords="PeerMappingOverride=1;...".
  if (const auto dwords = param("RegistryDwords")) {
    out["gpu.driver.params.peer_mapping_override"] =
        dwords->find("PeerMappingOverride=1") != std::string::npos ? 1 : 0;
  } else if (params || fs.Exists("/sys/module/nvidia/parameters")) {
    out["gpu.driver.params.peer_mapping_override"] = 0;
  }
}

// Where /proc has no driver (a container that does not mount it; the lab, whose GPUs are
// simulated) NVML may still name it: then its version is graded, and what only /proc says
// stays unread.
void DriverFromNvml(const std::optional<Result<sys::NvmlSnapshot>>& nvml, AuditEvidence& out) {
  if (!out.at("gpu.driver.version").is_null() || !nvml || !*nvml ||
      (*nvml)->driver_version.empty()) {
    return;
  }
  out["gpu.driver.version"] = SanitizeUtf8((*nvml)->driver_version);
  out["gpu.driver.source"] = "nvml";
}

void Modules(const sys::FileSystem& fs, AuditEvidence& out) {
  const auto modules = Read(fs, "/proc/modules", size_t{1} << 20);
  if (!modules) return;
  const auto loaded = [&](std::string_view name) {
    return modules->starts_with(std::string(name) + " ") ||
           modules->find("\n" + std::string(name) + " ") != std::string::npos;
  };
  out["gpu.driver.peermem_loaded"] = loaded("nvidia_peermem");
  out["gpu.gdrcopy.module"] = loaded("gdrdrv");
}

// Returns the cache's text, which the RDMA stack reads too (one read of a file of megabytes).
std::optional<std::string> LoaderCache(const sys::FileSystem& fs, AuditEvidence& out) {
  auto cache = Read(fs, "/etc/ld.so.cache", kLoaderCache);
  if (!cache) return std::nullopt;
  const auto gdrapi = CachedLibraries(*cache, "libgdrapi.so");
  out["gpu.gdrcopy.library"] = gdrapi.empty() ? json(nullptr) : json(gdrapi.front());
  out["software.nccl.libraries"] = CachedLibraries(*cache, "libnccl.so");
  return cache;
}

void Governors(const sys::FileSystem& fs, AuditEvidence& out) {
  auto cpus = fs.ListDir("/sys/devices/system/cpu");
  if (!cpus) return;
  std::map<std::string, int> counts;
  for (const std::string& cpu : *cpus) {
    if (!cpu.starts_with("cpu") || cpu.size() < 4 || cpu[3] < '0' || cpu[3] > '9') continue;
    const auto governor = Read(fs, "/sys/devices/system/cpu/" + cpu + "/cpufreq/scaling_governor");
    if (governor) ++counts[SanitizeUtf8(Trimmed(*governor))];
  }
  out["host.cpu.governors"] = counts.empty() ? json(nullptr) : json(counts);
}

void Rdma(const sys::FileSystem& fs, AuditEvidence& out) {
  const std::string root = "/sys/class/infiniband";
  auto devices = fs.ListDir(root);
  json names = json::array();
  json firmware = json::array();
  std::string fabric = "none";
  if (devices) {
    for (const std::string& device : *devices) {
      names.push_back(SanitizeUtf8(device));
      const auto vendor = Read(fs, root + "/" + device + "/device/vendor");
      const auto fw = Read(fs, root + "/" + device + "/fw_ver");
      // A ConnectX whose firmware cannot be read, or a device whose vendor cannot, is kept as
      // null: the check is then UNKNOWN, never a PASS on the devices that could be read.
      if (!vendor || Trimmed(*vendor) == "0x15b3") {
        firmware.push_back(fw && !Trimmed(*fw).empty() ? json(Trimmed(*fw)) : json(nullptr));
      }
      auto ports = fs.ListDir(root + "/" + device + "/ports");
      if (!ports) continue;
      for (const std::string& port : *ports) {
        const auto layer = Read(fs, root + "/" + device + "/ports/" + port + "/link_layer");
        if (!layer) continue;
        if (Trimmed(*layer) == "InfiniBand") fabric = "infiniband";
        if (Trimmed(*layer) == "Ethernet" && fabric == "none") fabric = "roce";
      }
    }
  }
  out["network.ib.device_names"] = names;
  json interfaces = json::array();
  if (auto listed = fs.ListDir("/sys/class/net")) {
    std::ranges::sort(*listed);
    for (const std::string& name : *listed) interfaces.push_back(SanitizeUtf8(name));
  }
  out["network.interfaces"] = interfaces;
  out["network.ib.devices[].fw_ver"] = firmware;
  out["network.rdma.type"] = fabric;
}

void Kernels(const sys::FileSystem& fs, AuditEvidence& out) {
  if (const auto release = Read(fs, "/proc/sys/kernel/osrelease")) {
    out["host.kernel.release"] = Trimmed(*release);
  }
  auto boot = fs.ListDir("/boot");
  json installed = json::array();
  if (boot) {
    for (const std::string& name : *boot) {
      if (name.starts_with("vmlinuz-")) installed.push_back(SanitizeUtf8(name.substr(8)));
    }
  }
  out["host.kernel.installed"] = installed.empty() ? json(nullptr) : installed;
}

}  // namespace

std::optional<std::string> FindProgram(const sys::FileSystem& fs, const std::string& path_list,
                                       std::string_view name,
                                       const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs;
  for (const std::string_view dir : Split(path_list, ':')) {
    if (!dir.empty()) dirs.emplace_back(dir);
  }
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/" + std::string(name);
    if (fs.Exists(candidate) && !fs.IsDirectory(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string ParseNvccRelease(std::string_view output) {
  const size_t at = output.find("release ");
  if (at == std::string_view::npos) return {};
  std::string_view rest = output.substr(at + 8);
  const size_t end = rest.find_first_not_of("0123456789.");
  return std::string(rest.substr(0, end));
}

std::string FirstVersionWord(std::string_view output) {
  // dcgmi prints a blank line first ("\ndcgmi  version: 4.7.0").
  while (output.starts_with('\n') || output.starts_with('\r') || output.starts_with(' ')) {
    output.remove_prefix(1);
  }
  const std::string_view first_line = output.substr(0, output.find('\n'));
  size_t at = 0;
  while (at < first_line.size()) {
    const size_t start = first_line.find_first_not_of(" \t:,", at);
    if (start == std::string_view::npos) break;
    const size_t end = first_line.find_first_of(" \t,", start);
    std::string_view word = first_line.substr(start, end - start);
    if (word.starts_with('v') && word.size() > 1) word.remove_prefix(1);
    if (!word.empty() && word[0] >= '0' && word[0] <= '9' &&
        word.find('.') != std::string_view::npos) {
      return SanitizeUtf8(word);
    }
    if (end == std::string_view::npos) break;
    at = end;
  }
  return {};
}

std::map<std::string, std::string> ParseKeyValues(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string line = Trimmed(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out[SanitizeUtf8(Trimmed(line.substr(0, eq)))] = SanitizeUtf8(Trimmed(line.substr(eq + 1)));
  }
  return out;
}

std::optional<std::string> SoftLimit(std::string_view limits, std::string_view row) {
  const size_t at = limits.find(row);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = limits.substr(at + row.size());
  rest = rest.substr(0, rest.find('\n'));
  const size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(start);
  return std::string(rest.substr(0, rest.find(' ')));
}

std::vector<std::string> CachedLibraries(std::string_view cache, std::string_view stem) {
  std::set<std::string> found;
  const std::string needle = "/" + std::string(stem);
  // The cache's strings are NUL-terminated absolute paths: each string once (searching out
  // from every match was quadratic in a forged cache of matches and no NUL: minutes at 16 MB).
  for (size_t begin = 0; begin < cache.size();) {
    const size_t end = cache.find('\0', begin);
    if (end == std::string_view::npos) break;  // no NUL after it: no path of the cache
    const std::string_view path = cache.substr(begin, end - begin);
    if (path.size() <= 4096 && path.starts_with('/') &&
        path.find(needle) != std::string_view::npos) {
      found.insert(SanitizeUtf8(path));
    }
    begin = end + 1;
  }
  return {found.begin(), found.end()};
}

std::vector<std::string> ParseMpiTypes(std::string_view output) {
  std::set<std::string> types;
  for (std::string_view line : Split(output, '\n')) {
    line = Trim(line);
    if (line.starts_with("srun:")) line = Trim(line.substr(5));
    // Headers: "MPI plugin types are...", "specific pmix plugin versions available: pmix_v4".
    if (const size_t colon = line.find("available:"); colon != std::string_view::npos) {
      for (std::string_view word : Split(line.substr(colon + 10), ',')) {
        if (!Trim(word).empty()) types.insert(SanitizeUtf8(Trim(word)));
      }
      continue;
    }
    if (line.empty() || line.find(' ') != std::string_view::npos) continue;
    types.insert(SanitizeUtf8(line));
  }
  return {types.begin(), types.end()};
}

KernelXidCounts CountKernelXids(std::string_view log, std::optional<WallTime> since,
                                int default_year) {
  KernelXidCounts counts;
  health::KernelEventParser parser;
  for (std::string_view line : Split(log, '\n')) {
    if (Trim(line).empty()) continue;
    auto record = health::ParseLogLine(line, default_year);
    if (!record) continue;
    if (since && record->wall_time && *record->wall_time < *since) continue;
    ++counts.records;
    if (record->wall_time && (!counts.oldest || *record->wall_time < *counts.oldest)) {
      counts.oldest = record->wall_time;
    }
    for (const health::KernelEvent& event : parser.Feed(*record)) {
      if (event.kind == health::KernelEventKind::kXid) ++counts.xid[event.code];
      if (event.kind == health::KernelEventKind::kSxid) ++counts.sxid[event.code];
    }
  }
  return counts;
}

std::optional<bool> SacctAnswers(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                                 const std::string& path, Duration timeout) {
  const auto sacct = FindProgram(fs, path, "sacct");
  if (!sacct) return std::nullopt;
  sys::ProcessSpec spec{.argv = {*sacct, "--noheader", "-X", "-o", "JobID", "-S", "now-1minutes"},
                        .env_add = {"LC_ALL=C"},
                        .timeout = timeout};
  spec.output_cap = kSmallFile;
  auto ran = runner.Run(spec);
  if (!ran || ran->timed_out || ran->interrupted) return std::nullopt;
  return ran->exit_code == 0;
}

Result<sys::NvmlSnapshot> SnapshotNvml() {
  auto nvml = sys::Nvml::Load();
  if (!nvml) return tl::unexpected(nvml.error());
  return (*nvml)->Snapshot();
}

namespace {

// The Docker daemon as the auditing user reaches it: its version, and whether it answered at
// all (no daemon, or no permission on its socket, is "no access"; a timeout is not collected).
void DockerServer(const sys::FileSystem& fs, sys::ProcessRunner& runner, const std::string& path,
                  Duration timeout, AuditEvidence& out) {
  const auto docker = FindProgram(fs, path, "docker");
  if (!docker) {
    out["containers.docker.server_version"] = nullptr;
    out["containers.docker.user_access"] = false;
    return;
  }
  sys::ProcessSpec spec{.argv = {*docker, "version", "--format", "{{.Server.Version}}"},
                        .env_add = {"LC_ALL=C"},
                        .timeout = timeout};
  spec.output_cap = kSmallFile;
  auto ran = runner.Run(spec);
  if (!ran || ran->timed_out || ran->interrupted) return;
  out["containers.docker.user_access"] = ran->exit_code == 0;
  if (ran->exit_code != 0) return;
  if (std::string version = FirstVersionWord(ran->stdout_text); !version.empty()) {
    out["containers.docker.server_version"] = version;
  }
}

// The Slurm client's view from this node: its commands, its MPI plugins, Pyxis, and the
// controller's configuration (accounting, topology, health check). Nothing here changes state:
// `srun --mpi=list` and `srun --help` print and exit without a job; sacct reads.
void SlurmClient(const sys::FileSystem& fs, sys::ProcessRunner& runner, const std::string& path,
                 Duration timeout, bool accounting, const std::string& slurm_conf,
                 AuditEvidence& out) {
  json commands = json::object();
  for (const char* name : {"sinfo", "squeue", "scontrol", "salloc", "sbatch", "srun", "sacct"}) {
    commands[name] = PathOrNull(FindProgram(fs, path, name));
  }
  out["scheduler.slurm.commands"] = commands;
  out["health.dcgm.hostengine"] = PathOrNull(FindProgram(fs, path, "nv-hostengine", {"/usr/bin"}));
  if (!slurm_conf.empty() && !fs.Exists(slurm_conf)) {
    out["scheduler.slurm.config_missing"] = SanitizeUtf8(slurm_conf);
    return;
  }
  if (const auto srun = FindProgram(fs, path, "srun")) {
    if (const auto list = Output(runner, *srun, {"--mpi=list"}, timeout)) {
      out["scheduler.slurm.mpi_types"] = ParseMpiTypes(*list);
    }
    if (const auto help = Output(runner, *srun, {"--help"}, timeout)) {
      out["scheduler.slurm.srun_container_image"] =
          help->find("--container-image") != std::string::npos;
    }
  }
  if (const auto scontrol = FindProgram(fs, path, "scontrol")) {
    if (const auto config = Output(runner, *scontrol, {"show", "config"}, timeout)) {
      const auto values = ParseKeyValues(*config);
      const auto value = [&](const char* key) -> json {
        const auto it = values.find(key);
        if (it == values.end() || it->second.empty() || it->second == "(null)") return nullptr;
        return it->second;
      };
      out["scheduler.slurm.accounting_storage_type"] = value("AccountingStorageType");
      out["scheduler.slurm.topology_plugin"] = value("TopologyPlugin");
      const json program = value("HealthCheckProgram");
      out["scheduler.slurm.health_check_program"] = program;
      // What the health check runs: its own text, and NHC's configuration when it is NHC.
      if (program.is_string()) {
        // Read whole or not at all: a part of it cannot say that dcgmi is never called.
        std::optional<std::string> text = Read(fs, program.get<std::string>(), size_t{1} << 20);
        if (text && program.get<std::string>().ends_with("nhc")) {
          const auto conf = Read(fs, "/etc/nhc/nhc.conf", size_t{1} << 20);
          text = conf ? std::optional(*text + *conf) : std::nullopt;
        }
        if (text) {
          out["scheduler.slurm.health_check_calls_dcgm"] =
              text->find("dcgmi") != std::string::npos ||
              text->find("nv-hostengine") != std::string::npos;
        }
      }
    }
  }
  if (accounting) {
    if (const auto ok = SacctAnswers(fs, runner, path, timeout)) {
      out["scheduler.slurm.sacct_ok"] = *ok;
    }
  }
}

// Xid and SXid counts over the last 7 days of the kernel log: the journal when there is one,
// else the ring buffer through dmesg (since boot, dated), else not collected.
void KernelXids(const sys::FileSystem& fs, sys::ProcessRunner& runner, const std::string& path,
                const LocalProbeOptions& options, AuditEvidence& out) {
  constexpr size_t kLogCap = size_t{64} << 20;
  const std::optional<WallTime> since =
      options.now ? std::optional(*options.now - std::chrono::hours(24 * 7)) : std::nullopt;
  const int year = UtcYear(options.now.value_or(
      std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now())));
  struct Source {
    const char* program;
    std::vector<std::string> args;
  };
  const Source sources[] = {
      {"journalctl", {"-k", "-q", "--no-pager", "-o", "short-iso", "--since=-7d"}},
      {"dmesg", {"--time-format=iso"}}};
  for (const Source& source : sources) {
    const auto program = FindProgram(fs, path, source.program, {"/usr/bin", "/bin"});
    if (!program) continue;
    sys::ProcessSpec spec{.argv = {*program}, .env_add = {"LC_ALL=C"}, .timeout = options.timeout};
    spec.argv.insert(spec.argv.end(), source.args.begin(), source.args.end());
    spec.output_cap = kLogCap;
    auto ran = runner.Run(spec);
    if (!ran || !ran->Succeeded() || Trim(ran->stdout_text).empty()) continue;
    const KernelXidCounts counts = CountKernelXids(ran->stdout_text, since, year);
    json xid = json::object();
    json sxid = json::object();
    for (const auto& [code, n] : counts.xid) xid[std::to_string(code)] = n;
    for (const auto& [code, n] : counts.sxid) sxid[std::to_string(code)] = n;
    out["health.kernel.xid_counts_7d"] = {
        {"source", Join(spec.argv, " ")},
        {"records", counts.records},
        {"oldest", counts.oldest ? json(FormatIso8601(*counts.oldest)) : json(nullptr)},
        {"truncated", ran->stdout_truncated},
        {"xid", xid},
        {"sxid", sxid}};
    return;
  }
}

// Each GPU's temperature and power with whether it is idle (no compute process, utilisation
// 0): the readings the idle checks judge. Only where a driver is; null where none is.
void IdleGpus(const std::optional<Result<sys::NvmlSnapshot>>& nvml, AuditEvidence& out) {
  const auto driver = out.find("gpu.driver.version");
  if (driver == out.end()) return;
  if (driver->second.is_null()) {
    out["gpu.idle.temperature_c"] = nullptr;
    out["gpu.idle.power_w"] = nullptr;
    return;
  }
  if (!nvml) return;
  const Result<sys::NvmlSnapshot>& snapshot = *nvml;
  if (!snapshot) {
    out["gpu.nvml.error"] = SanitizeUtf8(snapshot.error().message);
    return;
  }
  json temperatures = json::array();
  json powers = json::array();
  json names = json::array();
  for (const sys::GpuReading& gpu : snapshot->gpus) {
    json idle = nullptr;
    if (gpu.utilization_percent && gpu.compute_processes) {
      idle = *gpu.utilization_percent == 0 && *gpu.compute_processes == 0;
    }
    const std::string name = SanitizeUtf8(gpu.name);
    names.push_back(name);
    const json base = {{"gpu", gpu.index}, {"name", name}, {"idle", idle}};
    json temperature = base;
    temperature["value"] = gpu.temperature_c ? json(*gpu.temperature_c) : json(nullptr);
    temperatures.push_back(temperature);
    json power = base;
    power["value"] = gpu.power_mw ? json(*gpu.power_mw / 1000.0) : json(nullptr);
    powers.push_back(power);
  }
  out["gpu.idle.temperature_c"] = temperatures;
  out["gpu.idle.power_w"] = powers;
  out["gpu.name"] = names;
  // NVLink: a GPU with an active link is in an NVLink domain. None seen says "no NVLink" only
  // when every GPU answered about its links (a lost GPU, or a driver that would not say, could
  // be the one with links).
  const bool nvlink = std::ranges::any_of(snapshot->gpus, [](const sys::GpuReading& gpu) {
    return gpu.nvlink_links && *gpu.nvlink_links > gpu.nvlink_inactive.value_or(0);
  });
  const bool all_answered = !snapshot->gpus.empty() &&
                            std::ranges::all_of(snapshot->gpus, [](const sys::GpuReading& gpu) {
                              return !gpu.lost && (gpu.nvlink_links.has_value() || gpu.nvlink_none);
                            });
  if (nvlink || all_answered) out["gpu.topology.nvlink"] = nvlink;
}

// Whether anything listens on TCP `port` (state 0A in /proc/net/tcp and tcp6); nullopt when
// neither table could be read whole.
std::optional<bool> Listening(const sys::FileSystem& fs, unsigned port) {
  const std::string hex = fmt::format(":{:04X} ", port);
  bool read = false;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    const auto text = Read(fs, table, size_t{16} << 20);
    if (!text) continue;
    read = true;
    for (std::string_view line : Split(*text, '\n')) {
      const std::vector<std::string_view> fields = SplitFields(line);
      if (fields.size() > 3 && fields[1].ends_with(hex.substr(0, hex.size() - 1)) &&
          fields[3] == "0A") {
        return true;
      }
    }
  }
  return read ? std::optional(false) : std::nullopt;
}

void DcgmExporter(const sys::FileSystem& fs, AuditEvidence& out) {
  const auto listening = Listening(fs, 9400);
  if (!listening) return;  // cannot tell
  out["health.dcgm_exporter.listening"] = *listening;
  bool service = false;
  for (const char* dir :
       {"/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"}) {
    service = service || fs.Exists(std::string(dir) + "/dcgm-exporter.service");
  }
  out["health.dcgm_exporter.service"] = service;
}

// Each InfiniBand port's PKeys (the non-empty entries of its table, as the kernel prints them).
void IbPkeys(const sys::FileSystem& fs, AuditEvidence& out) {
  const std::string root = "/sys/class/infiniband";
  const auto devices = fs.ListDir(root);
  if (!devices) return;
  json ports = json::array();
  for (const std::string& device : *devices) {
    const auto numbers = fs.ListDir(root + "/" + device + "/ports");
    if (!numbers) continue;
    for (const std::string& port : *numbers) {
      const std::string dir = root + "/" + device + "/ports/" + port;
      const auto layer = Read(fs, dir + "/link_layer");
      if (!layer || Trimmed(*layer) != "InfiniBand") continue;
      json keys = json::array();
      const auto entries = fs.ListDir(dir + "/pkeys");
      if (!entries) {
        ports.push_back({{"port", SanitizeUtf8(device + "/" + port)}, {"pkeys", nullptr}});
        continue;
      }
      std::set<std::string> seen;
      for (const std::string& entry : *entries) {
        const auto key = Read(fs, dir + "/pkeys/" + entry);
        if (!key) continue;
        const std::string value = ToLower(Trimmed(*key));
        if (value != "0x0000" && value != "0x0" && !value.empty()) seen.insert(SanitizeUtf8(value));
      }
      keys = seen;
      ports.push_back({{"port", SanitizeUtf8(device + "/" + port)}, {"pkeys", keys}});
    }
  }
  out["network.ib.ports[].pkeys"] = ports;
}

// The RDMA stack beside the devices: MOFED/DOCA-OFED (ofed_info) or rdma-core (libibverbs).
void RdmaStack(const sys::FileSystem& fs, sys::ProcessRunner& runner, const std::string& path,
               const std::optional<std::string>& loader_cache, Duration timeout,
               AuditEvidence& out) {
  json stack = json::object();
  const auto devices = fs.ListDir("/sys/class/infiniband");
  stack["devices"] = devices ? static_cast<int64_t>(devices->size()) : 0;
  stack["ofed"] = nullptr;
  if (const auto ofed_info = FindProgram(fs, path, "ofed_info")) {
    if (const auto text = Output(runner, *ofed_info, {"-s"}, timeout)) {
      std::string version = Trimmed(*text).substr(0, 200);
      if (!version.empty() && version.back() == ':') version.pop_back();  // "MLNX_OFED_...:"
      stack["ofed"] = SanitizeUtf8(version);
    }
  }
  if (const auto& cache = loader_cache) {
    stack["rdma_core"] = !CachedLibraries(*cache, "libibverbs.so").empty();
  }
  out["network.rdma.stack"] = stack;
}

// What this host is: its OS, architecture and kind (bare metal, VM, container), and what a
// guest could do with virtualisation (Januscape) or the SMMU (Grace guests' CMDQV).
void HostIdentity(const sys::FileSystem& fs, const HostFacts& host, AuditEvidence& out) {
  if (!host.os.id.empty()) {
    out["host.os.id"] = SanitizeUtf8(host.os.id);
    out["host.os.version_id"] = SanitizeUtf8(host.os.version_id);
  }
  if (!host.arch.empty()) out["host.arch"] = SanitizeUtf8(host.arch);
  const std::string environment = DetectEnvironment(host).environment;
  out["host.virtualization.kind"] = environment == "bare-metal" ? "none" : environment;
  if (const auto cpuinfo = Read(fs, "/proc/cpuinfo", size_t{4} << 20)) {
    json virt = nullptr;
    for (std::string_view line : Split(*cpuinfo, '\n')) {
      if (!line.starts_with("flags")) continue;
      for (std::string_view flag : Split(line.substr(line.find(':') + 1), ' ')) {
        if (flag == "vmx" || flag == "svm") virt = std::string(flag);
      }
      break;  // every CPU lists the same flags
    }
    out["host.cpu.flags.virt"] = virt;
  }
  out["host.dev.kvm"] = fs.Exists("/dev/kvm");
  json nested = nullptr;  // no KVM module loaded
  for (const char* file :
       {"/sys/module/kvm_intel/parameters/nested", "/sys/module/kvm_amd/parameters/nested"}) {
    if (const auto value = Read(fs, file)) {
      const std::string v = Trimmed(*value);
      nested = v == "Y" || v == "1";
    }
  }
  out["host.kvm.nested"] = nested;
  if (host.arch == "aarch64") {
    const auto iommus = fs.ListDir("/sys/class/iommu");
    const bool smmuv3 = iommus && std::ranges::any_of(*iommus, [](const std::string& name) {
                          return name.starts_with("smmu3");
                        });
    const bool cmdqv = fs.IsDirectory("/sys/bus/platform/drivers/tegra241-cmdqv") ||
                       fs.IsDirectory("/sys/bus/platform/drivers/tegra241_cmdqv");
    out["host.smmu.cmdqv"] = {{"smmuv3", smmuv3}, {"cmdqv", cmdqv}};
  }
}

// Each NUMA node's memory and CPUs: a node with memory and no CPU on a Grace system is GPU
// memory onlined as system memory.
void NumaNodes(const sys::FileSystem& fs, AuditEvidence& out) {
  auto entries = fs.ListDir("/sys/devices/system/node");
  if (!entries) return;
  json nodes = json::array();
  for (const std::string& entry : *entries) {
    if (!entry.starts_with("node") || entry.size() == 4) continue;
    const auto id = Integer(entry.substr(4));
    if (!id) continue;
    const std::string dir = "/sys/devices/system/node/" + entry;
    const auto meminfo = Read(fs, dir + "/meminfo");
    const auto cpulist = Read(fs, dir + "/cpulist");
    if (!meminfo || !cpulist) continue;
    json node = {{"node", *id}, {"mem_kib", nullptr}};
    const auto total = meminfo->find("MemTotal:");
    if (total != std::string::npos) {
      std::string_view rest = std::string_view(*meminfo).substr(total + 9);
      const size_t end = rest.find("kB");
      if (const auto kib = Integer(Trimmed(rest.substr(0, end)))) node["mem_kib"] = *kib;
    }
    // An empty list is a node without CPUs; one that cannot be read says nothing.
    const std::string list = Trimmed(*cpulist);
    const auto cpus = list.empty() ? Result<int>(0) : CountCpuList(list);
    node["cpus"] = cpus ? json(*cpus) : json(nullptr);
    nodes.push_back(std::move(node));
  }
  std::sort(nodes.begin(), nodes.end(), [](const json& a, const json& b) {
    return a["node"].get<int64_t>() < b["node"].get<int64_t>();
  });
  out["host.numa.nodes"] = nodes;
}

// IPMI device nodes, and whether the BMC answers `ipmitool mc info` (a read-only query) from
// here; not asked without a device or without ipmitool.
void Ipmi(const sys::FileSystem& fs, sys::ProcessRunner& runner, const std::string& path,
          Duration timeout, AuditEvidence& out) {
  json devices = json::array();
  for (const char* node : {"/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"}) {
    if (fs.Exists(node)) devices.push_back(node);
  }
  out["host.ipmi.devices"] = devices;
  const auto ipmitool = devices.empty() ? std::nullopt : FindProgram(fs, path, "ipmitool");
  if (!ipmitool) {
    out["host.ipmi.mc_info"] = nullptr;
    return;
  }
  // Answered or refused; a query that timed out or could not start says neither (null).
  sys::ProcessSpec spec{
      .argv = {*ipmitool, "mc", "info"}, .env_add = {"LC_ALL=C"}, .timeout = timeout};
  spec.output_cap = kSmallFile;
  auto ran = runner.Run(spec);
  if (!ran || ran->timed_out || ran->interrupted) {
    out["host.ipmi.mc_info"] = nullptr;
    return;
  }
  out["host.ipmi.mc_info"] = ran->exit_code == 0;
}

// Inside a job step: what it was given and what CUDA sees; and NCCL's queue pairs per
// connection (the variable, else /etc/nccl.conf, else NCCL's default of 1).
void StepEnvironment(const LocalProbeOptions& options, const AuditEvidence& so_far,
                     AuditEvidence& out) {
  const auto var = [&](const char* name) -> json {
    const auto it = options.environment.find(name);
    return it == options.environment.end() || it->second.empty() ? json(nullptr)
                                                                 : json(SanitizeUtf8(it->second));
  };
  if (options.environment.contains("SLURM_STEP_ID")) {
    json step = json::object();
    for (const char* name : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "SLURM_STEP_GPUS",
                             "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE"}) {
      step[name] = var(name);
    }
    out["scheduler.step.cuda_visible_devices"] = step;
  }
  json qps = var("NCCL_IB_QPS_PER_CONNECTION");
  std::string source = "NCCL_IB_QPS_PER_CONNECTION";
  if (qps.is_null()) {
    const auto conf = so_far.find("network.nccl.conf");
    if (conf != so_far.end() && conf->second.is_object() &&
        conf->second.contains("NCCL_IB_QPS_PER_CONNECTION")) {
      qps = conf->second["NCCL_IB_QPS_PER_CONNECTION"];
      source = "/etc/nccl.conf";
    }
  }
  // The devices NCCL is told to use, where the environment (first) or /etc/nccl.conf says.
  json selection = json::object();
  for (const char* name : {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"}) {
    json value = var(name);
    std::string from = "environment";
    const auto conf = so_far.find("network.nccl.conf");
    if (value.is_null() && conf != so_far.end() && conf->second.is_object() &&
        conf->second.contains(name)) {
      value = conf->second[name];
      from = "/etc/nccl.conf";
    }
    selection[name] =
        value.is_null() ? json(nullptr) : json{{"value", std::move(value)}, {"source", from}};
  }
  out["network.nccl.device_selection"] = selection;
  if (qps.is_null()) {
    out["network.nccl.ib_qps_per_connection"] = {{"value", 1}, {"source", "NCCL's default"}};
  } else if (const auto n = Integer(qps.get<std::string>())) {
    out["network.nccl.ib_qps_per_connection"] = {{"value", *n}, {"source", source}};
  }
}

}  // namespace

// hardware.vboost: whether this user may set the GPUs' voltage boost, asked of sudo's policy
// (`sudo -n -l COMMAND` answers whether it would run the command, without running it) rather
// than by setting it as the public audit does: a change would have to be undone, and nvidia-smi
// documents no form of the current value to restore. Where there is no NVIDIA driver it is not
// asked (the check is N/A); null: no nvidia-smi.
void Vboost(const sys::FileSystem& fs, sys::ProcessRunner& runner, const std::string& path,
            bool root, Duration timeout, AuditEvidence& out) {
  const auto driver = out.find("gpu.driver.version");
  if (driver == out.end() || driver->second.is_null()) return;
  const auto smi = FindProgram(fs, path, "nvidia-smi");
  if (!smi) {
    out["gpu.controls.vboost"] = nullptr;
    return;
  }
  if (root) {
    out["gpu.controls.vboost"] = {{"method", "root"}, {"allowed", nullptr}};
    return;
  }
  json vboost = {{"method", "sudo"}, {"allowed", false}};
  const auto sudo = FindProgram(fs, path, "sudo");
  if (!sudo) {
    vboost["detail"] = "no sudo here";
    out["gpu.controls.vboost"] = vboost;
    return;
  }
  // -k: a cached credential neither answers for the policy nor is refreshed (no write).
  sys::ProcessSpec spec{.argv = {*sudo, "-n", "-k", "-l", *smi, "boost-slider", "--vboost", "2"},
                        .env_add = {"LC_ALL=C"},
                        .timeout = timeout};
  spec.output_cap = kSmallFile;
  auto ran = runner.Run(spec);
  if (!ran || ran->timed_out || ran->exit_code < 0) {
    vboost["allowed"] = nullptr;
    vboost["detail"] = ran ? "sudo did not answer in time" : SanitizeUtf8(ran.error().message);
  } else {
    // sudo's words when it refuses ("a password is required"); what it would run when not.
    const std::string said = ran->exit_code == 0 ? ran->stdout_text : ran->stderr_text;
    const std::string first =
        SanitizeUtf8(std::string(Trim(said.substr(0, said.find('\n')))).substr(0, 200));
    vboost["detail"] = first;
    // A refusal is exit 1, silent or saying why; any other failure is sudo's own (a broken
    // sudoers file, no new privileges, a nosuid mount): not an answer.
    const bool refused =
        ran->exit_code == 1 &&
        (first.empty() || first.find("password is required") != std::string::npos ||
         first.find("not allowed") != std::string::npos ||
         first.find("may not run sudo") != std::string::npos);
    if (ran->exit_code == 0) {
      vboost["allowed"] = true;
    } else if (refused) {
      vboost["allowed"] = false;
    } else {
      vboost["allowed"] = nullptr;
    }
  }
  out["gpu.controls.vboost"] = vboost;
}

AuditEvidence CollectLocalEvidence(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                                   const LocalProbeOptions& options) {
  AuditEvidence out;
  const std::string& path = options.path;
  const std::vector<std::string> sbin = {"/usr/sbin", "/sbin"};
  // NVML asked once: the driver's version where /proc has none (a container given the device
  // but not /proc/driver/nvidia), and the idle readings; never where no driver is loaded.
  Driver(fs, out);
  std::optional<Result<sys::NvmlSnapshot>> nvml;
  const bool driver_here =
      !out.at("gpu.driver.version").is_null() || fs.Exists("/dev/nvidiactl") || options.nvml_named;
  if (options.nvml && driver_here) nvml = options.nvml();
  DriverFromNvml(nvml, out);
  Modules(fs, out);
  const std::optional<std::string> loader_cache = LoaderCache(fs, out);
  Governors(fs, out);
  Rdma(fs, out);
  Kernels(fs, out);
  out["gpu.gdrcopy.device"] = fs.Exists("/dev/gdrdrv");
  out["audit.coverage.nodes_read"] = {{"read", 1}, {"total", 1}};  // the local target: this host
  if (const auto cmdline = Read(fs, "/proc/cmdline")) {
    out["host.kernel.cmdline"] = SanitizeUtf8(Trimmed(*cmdline));
    const auto groups = fs.ListDir("/sys/kernel/iommu_groups");
    out["host.iommu.groups"] = groups ? static_cast<int64_t>(groups->size()) : 0;
  }
  out["access.sssd"] = fs.Exists("/etc/sssd/sssd.conf");
  json pam = json::array();
  if (auto files = fs.ListDir("/etc/pam.d")) {
    std::set<std::string> modules;
    for (const std::string& file : *files) {
      const auto text = Read(fs, "/etc/pam.d/" + file);
      if (!text) continue;
      for (const char* module : {"pam_sss", "pam_ldap", "pam_oauth2", "pam_oidc", "pam_okta",
                                 "pam_google_authenticator"}) {
        if (text->find(module) != std::string::npos) modules.insert(module);
      }
    }
    pam = modules;
  }
  out["access.pam_modules"] = pam;
  for (const auto& [key, file] :
       {std::pair{"host.sysctl.kernel.perf_event_paranoid", "/proc/sys/kernel/perf_event_paranoid"},
        {"host.sysctl.kernel.kptr_restrict", "/proc/sys/kernel/kptr_restrict"}}) {
    if (const auto text = Read(fs, file)) {
      if (const auto value = Integer(*text)) out[key] = *value;
    }
  }
  if (const auto limits = Read(fs, "/proc/self/limits")) {
    for (const auto& [key, row] : {std::pair{"host.limits.memlock", "Max locked memory"},
                                   {"host.limits.nofile", "Max open files"}}) {
      const auto limit = SoftLimit(*limits, row);
      if (!limit) continue;
      const auto number = Integer(*limit);
      out[key] = number ? json(*number) : json(*limit);
    }
  }
  if (const auto conf = Read(fs, "/etc/nccl.conf")) {
    out["network.nccl.conf"] = net::ParseNcclConf(*conf);  // as `cmax nccl recipe` reads it
  } else if (!fs.Exists("/etc/nccl.conf")) {
    out["network.nccl.conf"] = nullptr;
  }
  const auto conf = out.find("network.nccl.conf");
  CollectNcclTopologyFile(fs, options.environment, conf == out.end() ? nullptr : &conf->second,
                          out);
  out["software.perf.path"] = PathOrNull(FindProgram(fs, path, "perf"));
  out["software.ncu.path"] = PathOrNull(
      FindProgram(fs, path, "ncu", {"/usr/local/cuda/bin", "/usr/local/cuda/nsight-compute"}));
  out["health.nhc.path"] = PathOrNull(FindProgram(fs, path, "nhc", sbin));
  out["containers.enroot.path"] = PathOrNull(FindProgram(fs, path, "enroot"));
  auto apptainer = FindProgram(fs, path, "apptainer");
  if (!apptainer) apptainer = FindProgram(fs, path, "singularity");
  out["containers.apptainer.path"] = PathOrNull(apptainer);
  out["access.useradd"] = PathOrNull(FindProgram(fs, path, "useradd", sbin));
  out["access.groupadd"] = PathOrNull(FindProgram(fs, path, "groupadd", sbin));
  std::optional<std::string> hpcx = FindProgram(fs, path, "hpcx");
  if (!hpcx && fs.IsDirectory("/opt/hpcx")) hpcx = "/opt/hpcx";
  out["software.hpcx.path"] = PathOrNull(hpcx);
  CollectHpcSdk(fs, runner, options.timeout, out);
  // sudo: root needs none; anyone else must get it without a password prompt.
  const auto status = Read(fs, "/proc/self/status");
  const bool root = status && status->find("\nUid:\t0\t") != std::string::npos;
  if (root) {
    out["access.sudo_noninteractive"] = true;
  } else if (const auto sudo = FindProgram(fs, path, "sudo")) {
    out["access.sudo_noninteractive"] =
        Output(runner, *sudo, {"-n", "true"}, options.timeout).has_value();
  } else {
    out["access.sudo_noninteractive"] = false;
  }
  Vboost(fs, runner, path, root, options.timeout, out);
  ProgramVersion(out, "software.nvcc.release",
                 FindProgram(fs, path, "nvcc", {"/usr/local/cuda/bin"}), runner, {"--version"},
                 options.timeout, ParseNvccRelease);
  ProgramVersion(out, "containers.runc.version", FindProgram(fs, path, "runc"), runner,
                 {"--version"}, options.timeout, FirstVersionWord);
  ProgramVersion(out, "containers.nvidia_ctk.version", FindProgram(fs, path, "nvidia-ctk"), runner,
                 {"--version"}, options.timeout, FirstVersionWord);
  ProgramVersion(out, "health.dcgm.version", FindProgram(fs, path, "dcgmi"), runner, {"--version"},
                 options.timeout, FirstVersionWord);
  DockerServer(fs, runner, path, options.timeout, out);
  SlurmClient(fs, runner, path, options.timeout, options.ask_accounting, options.slurm_conf, out);
  KernelXids(fs, runner, path, options, out);
  IdleGpus(nvml, out);
  DcgmExporter(fs, out);
  IbPkeys(fs, out);
  RdmaStack(fs, runner, path, loader_cache, options.timeout, out);
  HostIdentity(fs, options.host ? *options.host : CollectHost(fs, ""), out);
  StepEnvironment(options, out, out);
  NumaNodes(fs, out);
  CollectPciEvidence(fs, out);
  CollectAmdDriver(fs, runner, path, options.timeout, out);
  CollectEnvironmentModules(fs, options.environment, out);
  Ipmi(fs, runner, path, options.timeout, out);
  // Last, with everything read: whether the GPUs are idle decides whether the diagnostic runs.
  SideEffectIo side_effect_io = options.side_effect_io;
  side_effect_io.fs = &fs;
  side_effect_io.runner = &runner;
  side_effect_io.path = path;
  side_effect_io.timeout = options.timeout;
  TakeSideEffects(options.side_effects, side_effect_io, out);
  return out;
}

}  // namespace cmax::audit
