#include "audit/grading.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include "core/json_read.hpp"
#include "core/strings.hpp"
#include "core/version.hpp"
#include "health/xid_catalog.hpp"
#include "net/nccl_recipe.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// What a rule concluded; GradeChecks turns it into a finding with the check's severity.
struct Verdict {
  // kFinding: what the check's severity says; kWarn and kFail: that, whatever the severity.
  enum class Kind { kPass, kFinding, kUnknown, kNotApplicable, kAttest, kWarn, kFail };
  Kind kind = Kind::kUnknown;
  std::string observed;
  std::string expected;
  std::string reason;
  std::vector<std::string> links;    // beyond the check's own: the advisories a version is below
  std::vector<std::string> missing;  // UNKNOWN because these keys were not collected
};

Verdict Pass(std::string observed, std::string reason = {}) {
  return {Verdict::Kind::kPass, std::move(observed), {}, std::move(reason)};
}
Verdict Found(std::string observed, std::string expected, std::string reason) {
  return {Verdict::Kind::kFinding, std::move(observed), std::move(expected), std::move(reason)};
}
Verdict Unknown(std::string reason) {
  return {Verdict::Kind::kUnknown, {}, {}, std::move(reason)};
}
Verdict NotApplicable(std::string reason) {
  return {Verdict::Kind::kNotApplicable, {}, {}, std::move(reason)};
}
Verdict Attest(std::string observed, std::string reason) {
  return {Verdict::Kind::kAttest, std::move(observed), {}, std::move(reason)};
}

struct Inputs {
  const AuditEvidence& evidence;
  const GradeContext& context;
};

// A key's value; nullptr when it was not collected.
const json* Get(const Inputs& in, std::string_view key) {
  const auto it = in.evidence.find(key);
  return it == in.evidence.end() ? nullptr : &it->second;
}

template <typename... Keys>
Verdict NotCollected(std::string_view key, Keys... more) {
  std::vector<std::string> keys = {std::string(key), std::string(more)...};
  Verdict verdict = Unknown(fmt::format("not collected: {}", Join(keys, ", ")));
  verdict.missing = std::move(keys);
  return verdict;
}

std::string Shown(const json& value) {
  return value.is_string() ? SanitizeUtf8(value.get<std::string>()) : value.dump();
}

// What the minimum table said of a version, as a verdict: below the minimum, the table's
// advisories and CVEs say what the version is exposed to.
Verdict GradedVersion(const Inputs& in, GradedComponent component, const std::string& version,
                      const VersionGrade& grade) {
  Verdict verdict{Verdict::Kind::kUnknown, SanitizeUtf8(version),
                  grade.minimum.empty() ? "" : ">= " + grade.minimum, grade.reason};
  switch (grade.status) {
    case CheckStatus::kPass: verdict.kind = Verdict::Kind::kPass; break;
    case CheckStatus::kWarn: verdict.kind = Verdict::Kind::kWarn; break;
    case CheckStatus::kFail: verdict.kind = Verdict::Kind::kFinding; break;
    default: verdict.kind = Verdict::Kind::kUnknown; break;
  }
  if (grade.status == CheckStatus::kFail || grade.status == CheckStatus::kWarn) {
    if (const ComponentMinimums* entry = in.context.minimums->Find(component.name)) {
      verdict.links = entry->advisories;
      for (const std::string& cve : entry->cves) {
        verdict.links.push_back("https://www.cve.org/CVERecord?id=" + cve);
      }
    }
  }
  return verdict;
}

// A component's version against the minimum table; null: not installed (N/A). `as` grades
// that text instead of the key's value (a kernel release reduced to its ABI).
Verdict VersionRule(const Inputs& in, std::string_view key, GradedComponent component,
                    std::string_view what, std::string_view as = {}) {
  const json* value = Get(in, key);
  if (value == nullptr) return NotCollected(key);
  if (value->is_null()) return NotApplicable(fmt::format("no {} here", what));
  if (!value->is_string()) return Unknown(fmt::format("{} is not a version string", key));
  if (in.context.minimums == nullptr) return Unknown("no minimum-version table");
  const std::string version = as.empty() ? value->get<std::string>() : std::string(as);
  return GradedVersion(in, component, version,
                       GradeVersion(*in.context.minimums, component.name, version, in.context.now));
}

// AMD's driver release against the minimum of each Instinct model here (amd_driver.hpp says how
// the release is proved to be the loaded module's).
Verdict AmdDriverRule(const Inputs& in) {
  const json* devices = Get(in, "gpu.amd.devices");
  if (devices == nullptr) return NotCollected("gpu.amd.devices");
  if (!devices->is_number_integer()) return Unknown("gpu.amd.devices is not a number");
  if (devices->get<int64_t>() <= 0) return NotApplicable("no AMD GPU here");
  const json* models = Get(in, "gpu.amd.models");
  if (models == nullptr) return NotCollected("gpu.amd.models");
  std::vector<std::string> named;
  if (models->is_array()) {
    for (const json& model : *models) {
      if (model.is_string()) named.push_back(model.get<std::string>());
    }
  }
  if (named.empty()) {
    return Unknown(fmt::format(
        "{} AMD GPU function(s), none named as an Instinct model (product_name, pci.ids): no "
        "minimum applies that cmax knows",
        devices->get<int64_t>()));
  }
  const json* version = Get(in, "gpu.amd.driver.version");
  if (version == nullptr) return NotCollected("gpu.amd.driver.version");
  if (!version->is_string()) {
    const json* driver = Get(in, "gpu.amd.driver");
    const bool has_problem =
        driver != nullptr && driver->is_object() && driver->contains("problem");
    const std::string problem = has_problem ? Shown((*driver)["problem"]) : "not read";
    Verdict verdict = Unknown(fmt::format(
        "the loaded amdgpu is not provably one of AMD's driver releases: {}; the provider must "
        "show which release (or fix) the loaded build is",
        problem));
    verdict.observed = "release unknown";
    return verdict;
  }
  if (in.context.minimums == nullptr) return Unknown("no minimum-version table");
  const std::string release = version->get<std::string>();
  constexpr GradedComponent kAmdDriver = "amd-driver";
  return GradedVersion(
      in, kAmdDriver, release,
      GradeVersionForModels(*in.context.minimums, kAmdDriver.name, named, release, in.context.now));
}

// A program found on PATH (its path) or not (null).
Verdict PresenceRule(const Inputs& in, std::string_view key, std::string_view what) {
  const json* value = Get(in, key);
  if (value == nullptr) return NotCollected(key);
  if (value->is_string() && !value->get_ref<const std::string&>().empty()) {
    return Pass(Shown(*value));
  }
  return Found("not found", std::string(what), fmt::format("no {} on this host", what));
}

// An integer setting that must be at most `ceiling`.
Verdict AtMostRule(const Inputs& in, std::string_view key, int64_t ceiling) {
  const json* value = Get(in, key);
  if (value == nullptr) return NotCollected(key);
  if (!value->is_number_integer()) return Unknown(fmt::format("{} is not a number", key));
  const auto v = value->get<int64_t>();
  const std::string expected = fmt::format("<= {}", ceiling);
  if (v <= ceiling) return Pass(std::to_string(v));
  return Found(std::to_string(v), expected, fmt::format("{} is {}, above {}", key, v, ceiling));
}

std::optional<bool> Flag(const Inputs& in, std::string_view key) {
  const json* value = Get(in, key);
  if (value == nullptr || !value->is_boolean()) return std::nullopt;
  return value->get<bool>();
}

// NVIDIA's software on a node known to have no NVIDIA GPU (an AMD or CPU node: no driver and
// no NVIDIA function on its PCI bus) does not apply, as the public audit guards its NVIDIA
// checks off on AMD nodes. An NVIDIA node whose driver did not load is still judged, and so is
// a node whose PCI bus was not read.
std::optional<Verdict> NoNvidiaDriver(const Inputs& in) {
  const json* driver = Get(in, "gpu.driver.version");
  const json* nvidia = Get(in, "gpu.nvidia.devices");
  if (driver != nullptr && driver->is_null() && nvidia != nullptr && *nvidia == 0) {
    return NotApplicable("no NVIDIA GPU here");
  }
  return std::nullopt;
}

// GPU checks need an NVIDIA driver; without one they do not apply.
std::optional<Verdict> NeedsDriver(const Inputs& in) {
  const json* driver = Get(in, "gpu.driver.version");
  if (driver == nullptr) return NotCollected("gpu.driver.version");
  if (driver->is_null()) return NotApplicable("no NVIDIA driver here");
  return std::nullopt;
}

// An idle GPU's ceiling by class. Power: the public audit's (Hopper 150 W, Blackwell 250 W,
// Grace Blackwell 300 W); temperature: cmax's own, the public audit names the check but gives
// no figure: an idle data-center GPU in a working chassis sits near its inlet temperature, and
// 50 C at idle points at airflow or cooling. nullopt: a class without a ceiling.
struct IdleCeiling {
  std::string family;
  double power_w = 0;
  double temperature_c = 0;
};
std::optional<IdleCeiling> IdleCeilingFor(std::string_view name) {
  const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  constexpr double kTemperature = 50;
  if (has("GB200") || has("GB300")) return IdleCeiling{"Grace Blackwell", 300, kTemperature};
  if (has("B100") || has("B200") || has("B300")) return IdleCeiling{"Blackwell", 250, kTemperature};
  if (has("H100") || has("H200") || has("H800") || has("H20") || has("GH200")) {
    return IdleCeiling{"Hopper", 150, kTemperature};
  }
  return std::nullopt;
}

// The idle GPUs' readings of `key` against their class's ceiling (`power` or temperature).
Verdict IdleRule(const Inputs& in, std::string_view key, bool power) {
  const json* readings = Get(in, key);
  if (readings == nullptr) return NotCollected(key);
  if (readings->is_null()) return NotApplicable("no NVIDIA driver here");
  if (!readings->is_array()) return Unknown(fmt::format("{} is not a list", key));
  if (readings->empty()) {
    return Unknown(
        "NVML sees no GPU although a driver is loaded (in a job without --gres, "
        "cgroups may hide them: --srun-arg=--gres=gpu:N)");
  }
  const char* unit = power ? "W" : "C";
  std::vector<std::string> over;
  std::vector<std::string> seen;
  size_t idle = 0;
  size_t unknown = 0;
  for (const json& gpu : *readings) {
    if (!gpu.is_object()) continue;
    const json is_idle = gpu.value("idle", json(nullptr));
    if (!is_idle.is_boolean()) {
      ++unknown;
      continue;
    }
    if (!is_idle.get<bool>()) continue;  // busy: its draw says nothing about idling
    const std::string name = gpu.value("name", std::string());
    const auto ceiling = IdleCeilingFor(name);
    const json value = gpu.value("value", json(nullptr));
    if (!ceiling || !value.is_number()) {
      ++unknown;
      continue;
    }
    ++idle;
    const double limit = power ? ceiling->power_w : ceiling->temperature_c;
    const std::string reading =
        fmt::format("GPU {} {:.0f} {}", gpu.value("gpu", 0), value.get<double>(), unit);
    seen.push_back(reading);
    if (value.get<double>() > limit) {
      over.push_back(
          fmt::format("{} ({} ceiling {:.0f} {})", reading, ceiling->family, limit, unit));
    }
  }
  if (!over.empty()) {
    return Found(Join(over, ", "), fmt::format("at or below the class's idle ceiling"),
                 fmt::format("idle GPUs above their ceiling: {}", Join(over, ", ")));
  }
  if (unknown > 0) {
    return Unknown(
        fmt::format("{} GPU(s) could not be judged (utilisation, reading or class "
                    "without a ceiling)",
                    unknown));
  }
  if (idle == 0) return NotApplicable("no GPU is idle now (each runs work)");
  return Pass(Join(seen, ", "));
}

// Kubernetes: a scheduler that knows the network, from what kubernetes.topology counted:
// Kueue Topology objects, Volcano HyperNodes, nodes labelled with an NVLink clique or a
// network-topology label. A list the API refused counts as not read.
Verdict KubeTopologyRule(const Inputs& in) {
  const json* topology = Get(in, "kubernetes.topology");
  if (topology == nullptr) return NotCollected("kubernetes.topology");
  if (!topology->is_object()) return Unknown("kubernetes.topology is not an object");
  std::vector<std::string> seen;
  bool all_read = true;
  for (const auto& [what, count] : topology->items()) {
    if (!count.is_number_integer()) {
      all_read = false;  // null: that list could not be read
      continue;
    }
    if (count.get<int64_t>() > 0) seen.push_back(fmt::format("{} {}", count.get<int64_t>(), what));
  }
  if (!seen.empty()) return Pass(Join(seen, ", "));
  if (!all_read) return Unknown("no topology seen, and some of the lists could not be read");
  return Found("none", "Kueue Topology, Volcano HyperNodes, or topology or clique labels",
               "the scheduler places pods without knowing the network");
}

// The BlueField-3 VIRTIO-net controller runs on the DPU's Arm cores: from the host cmax knows
// only whether there is one.
Verdict BlueFieldController(const Inputs& in, std::string_view what) {
  const json* devices = Get(in, "network.bluefield.devices");
  if (devices == nullptr) return NotCollected("network.bluefield.devices");
  if (devices->empty()) return NotApplicable("no BlueField-3 on this host");
  return Unknown(fmt::format(
      "{} BlueField-3 function(s); the VIRTIO-net controller runs on the DPU: {} is read "
      "there, not from the host",
      devices->size(), what));
}

// A subnet manager's or administrator's key on InfiniBand: only the provider can say.
Verdict SubnetKeyRule(const Inputs& in, std::string_view attestation, std::string_view why) {
  const json* rdma = Get(in, "network.rdma.type");
  if (rdma == nullptr) return NotCollected("network.rdma.type");
  if (*rdma != "infiniband") {
    return NotApplicable(fmt::format("the fabric is {}, not InfiniBand", Shown(*rdma)));
  }
  if (Flag(in, attestation).value_or(false)) {
    return Pass("InfiniBand; the provider attests a key of its own");
  }
  return Attest("InfiniBand", std::string(why));
}

// A value that must be a string naming something, or null for none.
const std::string* NameOrNull(const json& value) {
  return value.is_string() ? &value.get_ref<const std::string&>() : nullptr;
}

using Rule = std::function<Verdict(const Inputs&)>;

const std::map<std::string, Rule, std::less<>>& Rules() {
  static const std::map<std::string, Rule, std::less<>> kRules = {
      {"versions.nvidia-driver",
       [](const Inputs& in) {
         return VersionRule(in, "gpu.driver.version", "nvidia-driver", "NVIDIA driver");
       }},
      {"versions.amd-driver", AmdDriverRule},
      {"versions.nvidia-container-toolkit",
       [](const Inputs& in) {
         return VersionRule(in, "containers.nvidia_ctk.version", "nvidia-container-toolkit",
                            "NVIDIA Container Toolkit");
       }},
      {"versions.cuda-toolkit",
       [](const Inputs& in) {
         return VersionRule(in, "software.nvcc.release", "cuda-toolkit", "CUDA toolkit (nvcc)");
       }},
      {"versions.runc",
       [](const Inputs& in) { return VersionRule(in, "containers.runc.version", "runc", "runc"); }},
      {"versions.docker",
       [](const Inputs& in) {
         return VersionRule(in, "containers.docker.server_version", "docker", "Docker daemon");
       }},
      {"versions.dcgm",
       [](const Inputs& in) { return VersionRule(in, "health.dcgm.version", "dcgm", "DCGM"); }},
      {"versions.dcgm-exporter",
       [](const Inputs& in) {
         if (auto na = NoNvidiaDriver(in)) return *na;
         return VersionRule(in, "health.dcgm_exporter.version", "dcgm-exporter", "dcgm-exporter");
       }},
      {"versions.connectx-firmware",
       [](const Inputs& in) -> Verdict {
         const std::string key = "network.ib.devices[].fw_ver";
         const json* devices = Get(in, key);
         if (devices == nullptr) return NotCollected(key);
         if (!devices->is_array()) return Unknown(key + " is not a list");
         if (devices->empty()) return NotApplicable("no ConnectX device here");
         // Every device graded; the worst decides (a PASS needs every one read and fixed).
         Verdict worst = Pass("");
         bool first = true;
         for (const json& firmware : *devices) {
           AuditEvidence one{{key, firmware}};
           Verdict verdict =
               firmware.is_null()
                   ? Unknown("a ConnectX device's firmware could not be read")
                   : VersionRule({one, in.context}, key, "connectx-firmware", "ConnectX firmware");
           const auto rank = [](Verdict::Kind kind) {
             switch (kind) {
               case Verdict::Kind::kFinding: return 3;
               case Verdict::Kind::kUnknown: return 2;
               case Verdict::Kind::kWarn: return 1;
               default: return 0;
             }
           };
           if (first || rank(verdict.kind) > rank(worst.kind)) {
             worst.kind = verdict.kind;
             worst.expected = verdict.expected;
             worst.reason = verdict.reason;
           }
           worst.observed += (first ? "" : ", ") + Shown(firmware);
           first = false;
         }
         return worst;
       }},
      {"software.perf-event-paranoid",
       [](const Inputs& in) {
         return AtMostRule(in, "host.sysctl.kernel.perf_event_paranoid", 1);
       }},
      {"software.kptr-restrict",
       [](const Inputs& in) { return AtMostRule(in, "host.sysctl.kernel.kptr_restrict", 0); }},
      {"software.perf-installed",
       [](const Inputs& in) { return PresenceRule(in, "software.perf.path", "perf"); }},
      {"software.ncu-installed",
       [](const Inputs& in) {
         if (auto na = NoNvidiaDriver(in)) return *na;
         return PresenceRule(in, "software.ncu.path", "ncu");
       }},
      {"software.hpcx",
       [](const Inputs& in) { return PresenceRule(in, "software.hpcx.path", "HPC-X"); }},
      {"health.nhc-installed",
       [](const Inputs& in) { return PresenceRule(in, "health.nhc.path", "nhc"); }},
      {"containers.enroot",
       [](const Inputs& in) { return PresenceRule(in, "containers.enroot.path", "enroot"); }},
      {"containers.enroot-import",
       [](const Inputs& in) -> Verdict {
         const json* ok = Get(in, "containers.enroot.import_ok");
         const json* error = Get(in, "containers.enroot.import_error");
         const std::string said = error ? Shown(*error) : "";
         if (ok == nullptr) {
           if (said.empty()) return NotCollected("containers.enroot.import_ok");
           return Unknown("enroot import gave no answer: " + said);
         }
         if (ok->is_null()) return NotApplicable("enroot is not installed (containers.enroot)");
         if (!ok->is_boolean()) return Unknown("containers.enroot.import_ok is not true or false");
         if (ok->get<bool>()) return Pass("imported docker://hello-world");
         return Found("import failed: " + said, "an image imported within 30 s",
                      "enroot could not import docker://hello-world: " + said);
       }},
      {"containers.singularity",
       [](const Inputs& in) {
         return PresenceRule(in, "containers.apptainer.path", "apptainer or singularity");
       }},
      {"software.nccl-installed",
       [](const Inputs& in) -> Verdict {
         if (auto na = NoNvidiaDriver(in)) return *na;
         const json* libraries = Get(in, "software.nccl.libraries");
         if (libraries == nullptr) return NotCollected("software.nccl.libraries");
         if (!libraries->is_array()) return Unknown("software.nccl.libraries is not a list");
         if (libraries->empty()) return Found("none", "libnccl.so", "no libnccl.so found");
         return Pass(Shown(libraries->front()));
       }},
      {"hardware.gdrcopy",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const json* library = Get(in, "gpu.gdrcopy.library");
         const auto module = Flag(in, "gpu.gdrcopy.module");
         const auto device = Flag(in, "gpu.gdrcopy.device");
         if (library == nullptr || !module || !device) {
           return NotCollected("gpu.gdrcopy.library", "gpu.gdrcopy.module", "gpu.gdrcopy.device");
         }
         std::vector<std::string> missing;
         if (!library->is_string()) missing.emplace_back("libgdrapi");
         if (!*module) missing.emplace_back("the gdrdrv module");
         if (!*device) missing.emplace_back("/dev/gdrdrv");
         if (missing.empty()) return Pass("libgdrapi, gdrdrv loaded, /dev/gdrdrv");
         std::string list;
         for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
         return Found("missing: " + list, "libgdrapi, gdrdrv, /dev/gdrdrv",
                      "GDRCopy is not whole: " + list + " missing");
       }},
      {"hardware.gpudirect-rdma",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const auto open = Flag(in, "gpu.driver.open_kernel");
         const auto dma_buf = Flag(in, "gpu.driver.dma_buf");
         if (!open || !dma_buf) return NotCollected("gpu.driver.open_kernel", "gpu.driver.dma_buf");
         if (*open || *dma_buf) {
           return Pass(*open ? "open kernel module" : "DMA-BUF support in the nvidia module");
         }
         return Found("proprietary module without DMA-BUF", "open kernel module or DMA-BUF",
                      "no DMA-BUF path for GPUDirect RDMA");
       }},
      {"hardware.nvidia-peermem-legacy",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const auto peermem = Flag(in, "gpu.driver.peermem_loaded");
         const auto dma_buf = Flag(in, "gpu.driver.dma_buf");
         if (!peermem || !dma_buf) {
           return NotCollected("gpu.driver.peermem_loaded", "gpu.driver.dma_buf");
         }
         // The open kernel module gives DMA-BUF too (the modern path), as the public audit
         // counts it.
         const bool open_module = Flag(in, "gpu.driver.open_kernel").value_or(false);
         if (*peermem && !*dma_buf && !open_module) {
           return Found("nvidia_peermem only", "DMA-BUF",
                        "GPUDirect RDMA rests on nvidia_peermem alone");
         }
         if (*dma_buf) return Pass("DMA-BUF");
         return Pass(open_module ? "open kernel module" : "no nvidia_peermem");
       }},
      {"software.ncu-profiling",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const json* ncu = Get(in, "software.ncu.path");
         if (ncu != nullptr && ncu->is_null()) return NotApplicable("no ncu here");
         return AtMostRule(in, "gpu.driver.params.profiling_admin_only", 0);
       }},
      {"hardware.cpu-governor",
       [](const Inputs& in) -> Verdict {
         const json* governors = Get(in, "host.cpu.governors");
         if (governors == nullptr) return NotCollected("host.cpu.governors");
         if (governors->is_null()) return NotApplicable("no cpufreq here (common in VMs)");
         if (!governors->is_object() || governors->empty()) {
           return Unknown("host.cpu.governors is not a count per governor");
         }
         std::string seen;
         bool other = false;
         for (const auto& [name, count] : governors->items()) {
           seen += fmt::format("{}{} on {} CPUs", seen.empty() ? "" : ", ", SanitizeUtf8(name),
                               count.dump());
           other = other || name != "performance";
         }
         if (!other) return Pass(seen);
         return Found(seen, "performance", "CPUs run a governor other than performance");
       }},
      {"software.resource-limits",
       [](const Inputs& in) -> Verdict {
         const json* memlock = Get(in, "host.limits.memlock");
         const json* nofile = Get(in, "host.limits.nofile");
         if (memlock == nullptr || nofile == nullptr) {
           return NotCollected("host.limits.memlock", "host.limits.nofile");
         }
         constexpr int64_t kMinFiles = 65536;
         const bool memlock_ok = *memlock == "unlimited";
         const bool nofile_ok = *nofile == "unlimited" || (nofile->is_number_integer() &&
                                                           nofile->get<int64_t>() >= kMinFiles);
         const std::string seen =
             fmt::format("memlock {}, nofile {}", Shown(*memlock), Shown(*nofile));
         if (memlock_ok && nofile_ok) return Pass(seen);
         return Found(seen, "memlock unlimited, nofile >= 65536",
                      !memlock_ok ? "locked memory is limited (RDMA registers memory)"
                                  : "too few open files allowed");
       }},
      {"access.sudo",
       [](const Inputs& in) -> Verdict {
         const auto sudo = Flag(in, "access.sudo_noninteractive");
         if (!sudo) return NotCollected("access.sudo_noninteractive");
         if (*sudo) return Pass("sudo -n true succeeds");
         return Found("sudo -n true fails", "sudo", "no passwordless sudo for this user");
       }},
      {"access.user-management",
       [](const Inputs& in) -> Verdict {
         const json* useradd = Get(in, "access.useradd");
         const json* groupadd = Get(in, "access.groupadd");
         if (useradd == nullptr || groupadd == nullptr) {
           return NotCollected("access.useradd", "access.groupadd");
         }
         if (useradd->is_string() && groupadd->is_string()) return Pass("useradd, groupadd");
         return Found(useradd->is_string() ? "no groupadd" : "no useradd", "useradd and groupadd",
                      "user management tools missing");
       }},
      {"isolation.guest-kernel-current",
       [](const Inputs& in) -> Verdict {
         const json* running = Get(in, "host.kernel.release");
         const json* installed = Get(in, "host.kernel.installed");
         if (running == nullptr || installed == nullptr) {
           return NotCollected("host.kernel.release", "host.kernel.installed");
         }
         if (installed->is_null()) return NotApplicable("no package database of kernels here");
         if (!running->is_string() || !installed->is_array()) {
           return Unknown("the kernel releases are not strings");
         }
         std::string newest;
         for (const json& release : *installed) {
           if (!release.is_string()) continue;
           const auto cmp = CompareVersionText(
               release.get<std::string>(), newest.empty() ? running->get<std::string>() : newest);
           if (cmp && *cmp > 0) newest = release.get<std::string>();
         }
         if (newest.empty()) return Pass(Shown(*running));
         return Found(
             fmt::format("running {}; {} installed", Shown(*running), SanitizeUtf8(newest)),
             "the newest installed kernel running",
             "a newer kernel is installed but not running: reboot into it");
       }},
      {"networking.nccl-autoconfig",
       [](const Inputs& in) -> Verdict {
         const json* conf = Get(in, "network.nccl.conf");
         if (conf == nullptr) return NotCollected("network.nccl.conf");
         if (conf->is_null()) return Pass("no /etc/nccl.conf");
         if (!conf->is_object()) return Unknown("network.nccl.conf is not a map of settings");
         // The rule `cmax nccl recipe` applies, on the file's settings.
         std::map<std::string, std::string> settings;
         for (const auto& [name, value] : conf->items()) settings[name] = Shown(value);
         std::string set;
         for (const std::string& name : net::TuningOverrides(settings)) {
           set += fmt::format("{}{}={}", set.empty() ? "" : ", ", name, settings[name]);
         }
         if (set.empty()) return Pass("leaves NCCL's tuning alone");
         return Found(set, "none of NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS",
                      "/etc/nccl.conf overrides NCCL's own choice");
       }},
      {"networking.nccl-devices",
       [](const Inputs& in) -> Verdict {
         const json* selection = Get(in, "network.nccl.device_selection");
         const json* hcas = Get(in, "network.ib.device_names");
         const json* interfaces = Get(in, "network.interfaces");
         if (selection == nullptr) return NotCollected("network.nccl.device_selection");
         if (hcas == nullptr) return NotCollected("network.ib.device_names");
         if (interfaces == nullptr) return NotCollected("network.interfaces");
         if (!selection->is_object() || !hcas->is_array() || !interfaces->is_array()) {
           return Unknown("the NCCL device selection's evidence has an unexpected shape");
         }
         const auto names = [](const json& list) {
           std::vector<std::string> out;
           for (const json& n : list)
             out.push_back(n.is_string() ? n.get<std::string>() : n.dump());
           return out;
         };
         const std::pair<const char*, std::vector<std::string>> kinds[] = {
             {"NCCL_IB_HCA", names(*hcas)}, {"NCCL_SOCKET_IFNAME", names(*interfaces)}};
         std::vector<std::string> set;
         std::vector<std::string> problems;
         for (const auto& [name, present] : kinds) {
           const json& entry = JsonAt(*selection, {name});
           if (entry.is_null()) continue;
           const json& value = JsonAt(entry, {"value"});
           if (!value.is_string()) return Unknown(fmt::format("{} is not a string", name));
           const std::string text = SanitizeUtf8(value.get<std::string>());
           set.push_back(fmt::format("{}={}", name, text));
           // The rule `cmax nccl recipe` applies.
           for (std::string& p : net::DeviceSelectionProblems(
                    name, text, TextAt(entry, {"source"}), present,
                    std::string_view(name) == "NCCL_IB_HCA" ? "RDMA device"
                                                            : "network interface")) {
             problems.push_back(std::move(p));
           }
         }
         if (set.empty()) {
           return NotApplicable(
               "neither NCCL_IB_HCA nor NCCL_SOCKET_IFNAME is set (environment, /etc/nccl.conf): "
               "NCCL chooses its devices itself");
         }
         if (problems.empty()) return Pass(Join(set, ", "));
         Verdict verdict =
             Found(Join(set, ", "), "selections of devices this node has", Join(problems, "; "));
         verdict.kind = Verdict::Kind::kFail;
         return verdict;
       }},
      {"networking.hca-naming",
       [](const Inputs& in) -> Verdict {
         const json* names = Get(in, "network.ib.device_names");
         if (names == nullptr) return NotCollected("network.ib.device_names");
         if (!names->is_array()) return Unknown("network.ib.device_names is not a list");
         if (names->empty()) return NotApplicable("no RDMA device here");
         static const std::regex kPredictable(R"(mlx5_[0-9]+|roce_p[0-9]+_rail[0-9]+)");
         std::string odd;
         std::string all;
         for (const json& name : *names) {
           const std::string text = name.is_string() ? name.get<std::string>() : name.dump();
           all += (all.empty() ? "" : ", ") + SanitizeUtf8(text);
           if (!std::regex_match(text, kPredictable))
             odd += (odd.empty() ? "" : ", ") + SanitizeUtf8(text);
         }
         if (odd.empty()) return Pass(all);
         return Found(all, "mlx5_N or roce_pN_railN", "unpredictable RDMA device names: " + odd);
       }},
      {"orchestration.slurm-pmix",
       [](const Inputs& in) -> Verdict {
         const json* types = Get(in, "scheduler.slurm.mpi_types");
         if (types == nullptr) return NotCollected("scheduler.slurm.mpi_types");
         if (!types->is_array()) return Unknown("scheduler.slurm.mpi_types is not a list");
         std::string all;
         bool pmix = false;
         for (const json& type : *types) {
           const std::string text = type.is_string() ? type.get<std::string>() : type.dump();
           all += (all.empty() ? "" : ", ") + SanitizeUtf8(text);
           pmix = pmix || text.starts_with("pmix");
         }
         if (pmix) return Pass(all);
         return Found(all.empty() ? "none" : all, "pmix", "srun offers no PMIx");
       }},
      {"containers.nvidia-container-toolkit",
       [](const Inputs& in) -> Verdict {
         const json* ctk = Get(in, "containers.nvidia_ctk.version");
         if (ctk == nullptr) return NotCollected("containers.nvidia_ctk.version");
         if (ctk->is_string()) return Pass(Shown(*ctk));
         if (auto na = NeedsDriver(in)) return *na;
         return Found("not installed", "nvidia-ctk",
                      "containers on this GPU host cannot use the GPUs");
       }},
      {"orchestration.worker-check",
       [](const Inputs& in) -> Verdict {
         const json* coverage = Get(in, "audit.coverage.nodes_read");
         if (coverage == nullptr || !coverage->is_object() || !coverage->contains("read") ||
             !coverage->contains("total")) {
           return NotCollected("audit.coverage.nodes_read");
         }
         const std::string seen = fmt::format("{} of {} nodes read", (*coverage)["read"].dump(),
                                              (*coverage)["total"].dump());
         if ((*coverage)["read"] == (*coverage)["total"]) return Pass(seen);
         return Found(seen, "every node", "the audit could not read every node");
       }},
      {"access.external-idp",
       [](const Inputs& in) -> Verdict {
         const auto sssd = Flag(in, "access.sssd");
         const json* pam = Get(in, "access.pam_modules");
         if (!sssd || pam == nullptr || !pam->is_array()) {
           return NotCollected("access.sssd", "access.pam_modules");
         }
         if (*sssd) return Pass("sssd");
         if (!pam->empty()) return Pass(Shown(pam->front()));
         return Found("local accounts only", "sssd, or a PAM module for LDAP, OIDC or OAuth2",
                      "logins do not come from an identity provider");
       }},
      {"hardware.vm-iommu",
       [](const Inputs& in) -> Verdict {
         const json* cmdline = Get(in, "host.kernel.cmdline");
         const json* groups = Get(in, "host.iommu.groups");
         if (cmdline == nullptr || groups == nullptr || !cmdline->is_string() ||
             !groups->is_number_integer()) {
           return NotCollected("host.kernel.cmdline", "host.iommu.groups");
         }
         const json* driver = Get(in, "gpu.driver.version");
         const json* rdma = Get(in, "network.ib.device_names");
         const bool devices = (driver != nullptr && driver->is_string()) ||
                              (rdma != nullptr && rdma->is_array() && !rdma->empty());
         if (!devices) return NotApplicable("no GPU driver or RDMA device here");
         static const std::regex kPassThrough(
             R"((^|\s)(iommu=pt|iommu=off|iommu\.passthrough=(1|on|y)|intel_iommu=off|amd_iommu=off)(\s|$))");
         const std::string& line = cmdline->get_ref<const std::string&>();
         if (std::regex_search(line, kPassThrough)) return Pass("IOMMU in passthrough or off");
         if (groups->get<int64_t>() == 0) return Pass("no IOMMU groups: the IOMMU is off");
         return Found(fmt::format("{} IOMMU groups, no iommu=pt", groups->get<int64_t>()),
                      "iommu=pt", "DMA from the GPUs and NICs goes through a translating IOMMU");
       }},
      {"access.slurm-commands",
       [](const Inputs& in) -> Verdict {
         const json* commands = Get(in, "scheduler.slurm.commands");
         if (commands == nullptr) return NotCollected("scheduler.slurm.commands");
         if (!commands->is_object()) return Unknown("scheduler.slurm.commands is not an object");
         std::vector<std::string> missing;
         for (const auto& [name, where] : commands->items()) {
           if (!where.is_string()) missing.push_back(name);
         }
         if (missing.empty()) return Pass(fmt::format("all {} on PATH", commands->size()));
         return Found(Join(missing, ", ") + " missing",
                      "sinfo, squeue, scontrol, salloc, sbatch, "
                      "srun, sacct",
                      fmt::format("{} not on PATH", Join(missing, ", ")));
       }},
      {"orchestration.pyxis",
       [](const Inputs& in) -> Verdict {
         const auto pyxis = Flag(in, "scheduler.slurm.srun_container_image");
         if (!pyxis) return NotCollected("scheduler.slurm.srun_container_image");
         if (*pyxis) return Pass("srun --container-image");
         return Found("no --container-image", "Pyxis", "srun has no --container-image (no Pyxis)");
       }},
      {"orchestration.slurm-accounting",
       [](const Inputs& in) -> Verdict {
         const json* storage = Get(in, "scheduler.slurm.accounting_storage_type");
         if (storage == nullptr) return NotCollected("scheduler.slurm.accounting_storage_type");
         const auto sacct = Flag(in, "scheduler.slurm.sacct_ok");
         const std::string type = storage->is_string() ? Shown(*storage) : "";
         if (type.empty() || type == "accounting_storage/none") {
           return Found(type.empty() ? "unset" : type, "accounting_storage/slurmdbd",
                        "Slurm keeps no job accounting (AccountingStorageType)");
         }
         if (!sacct) return NotCollected("scheduler.slurm.sacct_ok");
         if (!*sacct) return Found(type + ", sacct fails", "sacct answers", "sacct fails");
         return Pass(type);
       }},
      {"networking.topology-configured",
       [](const Inputs& in) -> Verdict {
         if (in.context.target == AuditTarget::kKubernetes) return KubeTopologyRule(in);
         const json* plugin = Get(in, "scheduler.slurm.topology_plugin");
         if (plugin == nullptr) return NotCollected("scheduler.slurm.topology_plugin");
         const std::string name = plugin->is_string() ? Shown(*plugin) : "";
         if (name.empty() || name == "topology/default" || name == "topology/none") {
           return Found(name.empty() ? "unset" : name, "topology/tree or topology/block",
                        "Slurm places jobs without knowing the network (TopologyPlugin)");
         }
         return Pass(name);
       }},
      {"health.dcgm-installed",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const json* dcgmi = Get(in, "health.dcgm.version");
         const json* engine = Get(in, "health.dcgm.hostengine");
         if (dcgmi == nullptr) return NotCollected("health.dcgm.version");
         if (engine == nullptr) return NotCollected("health.dcgm.hostengine");
         if (dcgmi->is_string()) return Pass("dcgmi " + Shown(*dcgmi));
         if (engine->is_string()) return Pass(Shown(*engine));
         return Found("not found", "dcgmi or nv-hostengine", "no DCGM on this node");
       }},
      {"health.dcgm-in-slurm-healthcheck",
       [](const Inputs& in) -> Verdict {
         const json* dcgmi = Get(in, "health.dcgm.version");
         if (dcgmi == nullptr) return NotCollected("health.dcgm.version");
         if (dcgmi->is_null()) return NotApplicable("no DCGM on this node");
         const json* program = Get(in, "scheduler.slurm.health_check_program");
         if (program == nullptr) return NotCollected("scheduler.slurm.health_check_program");
         if (!program->is_string()) {
           return Found("no HealthCheckProgram", "one that calls dcgmi",
                        "Slurm runs no health check, so DCGM is never asked");
         }
         const auto calls = Flag(in, "scheduler.slurm.health_check_calls_dcgm");
         if (!calls) return Unknown(fmt::format("{} could not be read", Shown(*program)));
         if (*calls) return Pass(Shown(*program) + " calls DCGM");
         return Found(Shown(*program), "one that calls dcgmi",
                      fmt::format("{} never calls dcgmi or nv-hostengine", Shown(*program)));
       }},
      {"software.mofed",
       [](const Inputs& in) -> Verdict {
         const json* stack = Get(in, "network.rdma.stack");
         if (stack == nullptr) return NotCollected("network.rdma.stack");
         if (!stack->is_object()) return Unknown("network.rdma.stack is not an object");
         if (stack->value("devices", 0) == 0) return NotApplicable("no RDMA devices here");
         if (stack->contains("ofed") && (*stack)["ofed"].is_string()) {
           return Pass(Shown((*stack)["ofed"]));
         }
         if (!stack->contains("rdma_core")) return NotCollected("network.rdma.stack.rdma_core");
         if (stack->value("rdma_core", false)) return Pass("rdma-core (libibverbs)");
         return Found("neither", "MOFED/DOCA-OFED or rdma-core",
                      "RDMA devices without a verbs stack (no ofed_info, no libibverbs)");
       }},
      {"health.xid-7d",
       [](const Inputs& in) -> Verdict {
         const json* log = Get(in, "health.kernel.xid_counts_7d");
         if (log == nullptr) return NotCollected("health.kernel.xid_counts_7d");
         if (!log->is_object() || !log->contains("xid") || !(*log)["xid"].is_object()) {
           return Unknown("health.kernel.xid_counts_7d has no Xid counts");
         }
         // What each code means comes from today's catalogue, so a regrade follows it.
         const health::XidCatalog& catalog = health::XidCatalog::Builtin();
         std::vector<std::string> seen;
         bool serious = false;
         for (const auto& [code_text, count] : (*log)["xid"].items()) {
           const std::optional<int> code = ParseWhole<int>(code_text);
           if (!code) continue;
           const health::EventMeaning meaning = catalog.Xid(*code);
           serious = serious || meaning.action == RecommendedAction::kResetGpu ||
                     meaning.action == RecommendedAction::kRebootNode ||
                     meaning.action == RecommendedAction::kDrainAndRma;
           seen.push_back(fmt::format("Xid {} x{} ({})", *code,
                                      count.is_number() ? count.dump() : "?",
                                      ActionName(meaning.action)));
         }
         const std::string source = log->value("source", std::string("the kernel log"));
         if (seen.empty()) {
           if (log->value("truncated", false)) {
             return Unknown(fmt::format("the kernel log from {} was cut short", source));
           }
           // A log that starts later than a week ago (a journal kept since boot only, or dmesg)
           // cannot say the week was clean: a reboot may have taken an Xid with it.
           const json oldest = log->value("oldest", json(nullptr));
           std::optional<WallTime> from;
           if (oldest.is_string()) {
             if (auto parsed = ParseIso8601(oldest.get<std::string>())) from = *parsed;
           }
           if (!from || *from > in.context.now - std::chrono::hours(24 * 7 - 1)) {
             return Unknown(fmt::format(
                 "no Xid, but {} reaches back only to {}, not 7 days", source,
                 oldest.is_string() ? oldest.get<std::string>() : std::string("an unknown time")));
           }
           return Pass(fmt::format("no Xid in {} records", log->value("records", 0)),
                       fmt::format("no Xid in the last 7 days ({})", source));
         }
         const std::string observed = Join(seen, ", ");
         if (serious) {
           return {Verdict::Kind::kFail, observed, "no Xid that needs a reset, reboot or RMA",
                   fmt::format("Xids in the last 7 days that need a reset, reboot or RMA: {}",
                               observed)};
         }
         return {Verdict::Kind::kWarn, observed, "no Xid",
                 fmt::format("Xids in the last 7 days: {}", observed)};
       }},
      {"hardware.idle-gpu-temperature",
       [](const Inputs& in) { return IdleRule(in, "gpu.idle.temperature_c", false); }},
      {"hardware.idle-gpu-power",
       [](const Inputs& in) { return IdleRule(in, "gpu.idle.power_w", true); }},
      {"networking.nvshmem-readiness",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const json* fabric = Get(in, "network.rdma.type");
         if (fabric == nullptr) return NotCollected("network.rdma.type");
         std::vector<std::string> missing;
         for (const auto& [key, what] :
              {std::pair{"gpu.driver.params.enable_stream_memops", "EnableStreamMemOPs=1"},
               {"gpu.driver.params.peer_mapping_override", "PeerMappingOverride=1"}}) {
           const json* value = Get(in, key);
           if (value == nullptr) return NotCollected(key);
           if (!value->is_number_integer() || value->get<int64_t>() != 1) missing.push_back(what);
         }
         const auto gdrcopy = Flag(in, "gpu.gdrcopy.module");
         if (!gdrcopy) return NotCollected("gpu.gdrcopy.module");
         if (!*gdrcopy) missing.push_back("GDRCopy (gdrdrv)");
         if (*fabric != "infiniband" && *fabric != "roce") {
           missing.push_back(
               fmt::format("an InfiniBand or RoCE path (the fabric is {})", Shown(*fabric)));
         }
         if (missing.empty())
           return Pass("stream memops, peer mapping, GDRCopy, " + Shown(*fabric));
         return Found(Join(missing, ", ") + " missing", "all of them",
                      "GPU-initiated RDMA (NVSHMEM, DeepEP) lacks: " + Join(missing, ", "));
       }},
      {"health.dcgm-exporter-running",
       [](const Inputs& in) -> Verdict {
         // A node without an NVIDIA driver (a CPU node of the cluster) needs no exporter.
         if (const json* driver = Get(in, "gpu.driver.version"); driver && driver->is_null()) {
           return NotApplicable("no NVIDIA driver here");
         }
         const auto listening = Flag(in, "health.dcgm_exporter.listening");
         const auto service = Flag(in, "health.dcgm_exporter.service");
         if (!listening) return NotCollected("health.dcgm_exporter.listening");
         if (in.context.target == AuditTarget::kKubernetes) {  // from the exporter's pods
           if (*listening) return Pass("a ready dcgm-exporter pod");
           if (service.value_or(false)) {
             return {Verdict::Kind::kWarn, "its dcgm-exporter pod is not ready", "a ready pod",
                     "the dcgm-exporter pod on this node is not ready"};
           }
           return Found("no dcgm-exporter pod", "dcgm-exporter",
                        "no dcgm-exporter pod on this node");
         }
         if (*listening) return Pass("listening on :9400");
         if (service.value_or(false)) {
           return {Verdict::Kind::kWarn, "dcgm-exporter.service installed, nothing on :9400",
                   "listening on :9400", "dcgm-exporter is installed but not running"};
         }
         return Found("nothing on :9400", "dcgm-exporter", "no dcgm-exporter on this node");
       }},
      {"health.dcgm-diag",
       [](const Inputs& in) -> Verdict {
         const json* diag = Get(in, "health.dcgm.diag_r1");
         if (diag == nullptr) return NotCollected("health.dcgm.diag_r1");
         if (diag->is_null()) return NotApplicable("dcgmi is not installed");
         if (!diag->is_object()) return Unknown("health.dcgm.diag_r1 is not an object");
         if (JsonAt(*diag, {"ran"}) != json(true)) {
           return Unknown("not run: " + TextAt(*diag, {"reason"}));
         }
         if (const std::string error = TextAt(*diag, {"error"}); !error.empty()) {
           return Unknown("dcgmi diag -r 1 gave no result: " + SanitizeUtf8(error));
         }
         const json& failed = JsonAt(*diag, {"failed"});
         const json& warned = JsonAt(*diag, {"warned"});
         const auto list = [](const json& names) {
           std::vector<std::string> out;
           if (names.is_array()) {
             for (const json& n : names) out.push_back(Shown(n));
           }
           return out;
         };
         const std::string tests =
             fmt::format("{} test(s), {} passed", Shown(JsonAt(*diag, {"tests"})),
                         Shown(JsonAt(*diag, {"passed"})));
         if (failed.is_array() && !failed.empty()) {
           return {Verdict::Kind::kFail, Join(list(failed), "; "), "every test passes",
                   fmt::format("dcgmi diag -r 1: {} failed ({})", failed.size(), tests)};
         }
         if (warned.is_array() && !warned.empty()) {
           return {Verdict::Kind::kWarn, Join(list(warned), "; "), "every test passes",
                   fmt::format("dcgmi diag -r 1: {} warned ({})", warned.size(), tests)};
         }
         if (JsonAt(*diag, {"passed"}) == json(0)) {
           return Unknown(fmt::format("dcgmi diag -r 1 ran no test to the end ({})", tests));
         }
         return Pass(tests);
       }},
      {"networking.outbound-internet",
       [](const Inputs& in) -> Verdict {
         const json* target = Get(in, "network.egress.target");
         if (target == nullptr) return NotCollected("network.egress.target");
         if (target->is_null()) {
           return NotApplicable(
               "no --egress-target named: it connects only to a host the user names");
         }
         const std::string where = Shown(*target);
         const json* reachable = Get(in, "network.egress.reachable");
         const json* detail_value = Get(in, "network.egress.detail");
         const std::string detail = detail_value ? Shown(*detail_value) : "";
         if (reachable == nullptr || !reachable->is_boolean()) {
           return Unknown(fmt::format("could not tell whether {} is reachable{}", where,
                                      detail.empty() ? "" : ": " + detail));
         }
         if (reachable->get<bool>()) {
           return {Verdict::Kind::kWarn, "reached " + where, "not reached, or an alert raised",
                   fmt::format("a compute node reached {}: the provider must say whether "
                               "that raised an alert",
                               where)};
         }
         return Pass(fmt::format("{} not reached ({})", where, detail));
       }},
      {"containers.docker-on-workers",
       [](const Inputs& in) -> Verdict {
         const auto access = Flag(in, "containers.docker.user_access");
         if (!access) return NotCollected("containers.docker.user_access");
         if (*access) return Pass("the Docker daemon answers the auditing user");
         return Found("no access", "docker answers",
                      "docker is missing here, or its daemon does not answer the auditing user");
       }},
      {"isolation.kubernetes-nodes-proxy",
       [](const Inputs& in) -> Verdict {
         const json* subjects = Get(in, "kubernetes.rbac.nodes_proxy_subjects");
         if (subjects == nullptr) return NotCollected("kubernetes.rbac.nodes_proxy_subjects");
         if (!subjects->is_array()) {
           return Unknown("kubernetes.rbac.nodes_proxy_subjects is not a list");
         }
         if (subjects->empty()) {
           return Pass("none but the administrators and the API server reach nodes/proxy");
         }
         std::vector<std::string> names;
         for (const json& s : *subjects) names.push_back(Shown(s));
         return Found(Join(names, "; "), "none",
                      fmt::format("{} subject(s) can reach every kubelet through nodes/proxy: {}",
                                  names.size(), Join(names, "; ")));
       }},
      {"orchestration.kubelet-cpu-manager",
       [](const Inputs& in) -> Verdict {
         const json* policy = Get(in, "kubernetes.kubelet.cpu_manager_policy");
         if (policy == nullptr) return NotCollected("kubernetes.kubelet.cpu_manager_policy");
         if (!policy->is_string()) return Unknown("the kubelet's CPU manager policy is unreadable");
         const std::string name = Shown(*policy);
         if (name == "static") return Pass(name);
         return Found(name, "static", fmt::format("the kubelet's CPU manager policy is {}", name));
       }},
      {"storage.default-storageclass",
       [](const Inputs& in) -> Verdict {
         const json* name = Get(in, "kubernetes.storage.default_class");
         if (name == nullptr) return NotCollected("kubernetes.storage.default_class");
         if (const std::string* n = NameOrNull(*name)) return Pass(SanitizeUtf8(*n));
         return Found("none", "one StorageClass marked default",
                      "no StorageClass is the default: a claim without a class stays Pending");
       }},
      {"storage.rwx",
       [](const Inputs& in) -> Verdict {
         const json* default_class = Get(in, "kubernetes.storage.default_class");
         const json* rwx = Get(in, "kubernetes.storage.rwx_provisioner");
         if (default_class == nullptr) return NotCollected("kubernetes.storage.default_class");
         if (rwx == nullptr) return NotCollected("kubernetes.storage.rwx_provisioner");
         const std::string* shared = NameOrNull(*rwx);
         const std::string* fallback = NameOrNull(*default_class);
         if (shared != nullptr && fallback != nullptr) {
           return Pass(
               fmt::format("{} (default {})", SanitizeUtf8(*shared), SanitizeUtf8(*fallback)));
         }
         if (shared == nullptr) {
           return Found("no ReadWriteMany class", "a shared filesystem's class",
                        "no StorageClass offers ReadWriteMany (no shared filesystem's CSI "
                        "driver, no ReadWriteMany volume bound)");
         }
         return Found(SanitizeUtf8(*shared) + ", no default", "a default StorageClass",
                      "a ReadWriteMany class exists but no StorageClass is the default");
       }},
      {"isolation.januscape",
       [](const Inputs& in) -> Verdict {
         const json* kind = Get(in, "host.virtualization.kind");
         if (kind == nullptr) return NotCollected("host.virtualization.kind");
         if (*kind != "vm") return NotApplicable("not a virtual machine");
         const json* flag = Get(in, "host.cpu.flags.virt");
         const auto kvm = Flag(in, "host.dev.kvm");
         const json* nested = Get(in, "host.kvm.nested");
         if (flag == nullptr || !kvm || nested == nullptr) {
           return NotCollected("host.cpu.flags.virt", "host.dev.kvm", "host.kvm.nested");
         }
         const bool has_flag = flag->is_string();
         const bool has_nested = nested->is_boolean() && nested->get<bool>();
         const int present =
             static_cast<int>(has_flag) + static_cast<int>(*kvm) + static_cast<int>(has_nested);
         const std::string seen =
             fmt::format("{}, /dev/kvm {}, nested {}", has_flag ? Shown(*flag) : "no vmx/svm",
                         *kvm ? "present" : "absent", has_nested ? "on" : "off");
         if (present == 0) return Pass(seen);
         if (present == 3) {
           return Found(seen, "no nested virtualisation in tenant VMs",
                        "this guest can run its own KVM guests: the host needs the Januscape "
                        "patch");
         }
         return Unknown(fmt::format("some of nested virtualisation's parts are here ({})", seen));
       }},
      {"isolation.fragnesia",
       [](const Inputs& in) -> Verdict {
         const json* id = Get(in, "host.os.id");
         const json* version = Get(in, "host.os.version_id");
         const json* release = Get(in, "host.kernel.release");
         if (id == nullptr || version == nullptr || release == nullptr) {
           return NotCollected("host.os.id", "host.os.version_id", "host.kernel.release");
         }
         const std::string kernel = release->is_string() ? release->get<std::string>() : "";
         // Ubuntu 24.04's own 6.8.0 kernels ("6.8.0-124-generic"): the ABI is the number after.
         if (*id != "ubuntu" || *version != "24.04" || !kernel.starts_with("6.8.0-")) {
           return NotApplicable("not an Ubuntu 24.04 6.8.0 kernel");
         }
         const std::string rest = kernel.substr(6);
         const std::string abi = rest.substr(0, rest.find_first_not_of("0123456789"));
         if (abi.empty()) return Unknown(fmt::format("no ABI in {}", SanitizeUtf8(kernel)));
         // The table's ABI is the generic kernel's; other flavours (nvidia, aws, azure) number
         // their ABIs on their own.
         if (!kernel.ends_with("-generic") && !kernel.ends_with("-generic-64k")) {
           return NotApplicable(
               fmt::format("{}: a 6.8.0 flavour whose fixed ABI the table does not hold",
                           SanitizeUtf8(kernel)));
         }
         Verdict verdict = VersionRule(in, "host.kernel.release", "linux-ubuntu-noble",
                                       "Ubuntu 24.04 kernel", "6.8.0-" + abi);
         verdict.observed = SanitizeUtf8(kernel);
         return verdict;
       }},
      {"hardware.arm-smmu-cmdqv",
       [](const Inputs& in) -> Verdict {
         const json* arch = Get(in, "host.arch");
         if (arch == nullptr) return NotCollected("host.arch");
         if (*arch != "aarch64") return NotApplicable("not an Arm host");
         const json* kind = Get(in, "host.virtualization.kind");
         if (kind == nullptr) return NotCollected("host.virtualization.kind");
         if (*kind != "vm") return NotApplicable("not a virtual machine");
         const json* smmu = Get(in, "host.smmu.cmdqv");
         if (smmu == nullptr || !smmu->is_object()) return NotCollected("host.smmu.cmdqv");
         if (!smmu->value("smmuv3", false)) return NotApplicable("no SMMUv3 in this guest");
         if (smmu->value("cmdqv", false)) return Pass("SMMUv3 with CMDQV");
         return Found("SMMUv3 without CMDQV", "tegra241-cmdqv",
                      "the guest's SMMU has no command queue virtualisation: invalidations trap "
                      "to the host");
       }},
      {"software.cuda-visible-devices",
       [](const Inputs& in) -> Verdict {
         const json* step = Get(in, "scheduler.step.cuda_visible_devices");
         if (step == nullptr) return NotCollected("scheduler.step.cuda_visible_devices");
         if (!step->is_object()) return Unknown("the job step's variables are not an object");
         const auto set = [&](const char* name) {
           const json v = step->value(name, json(nullptr));
           return v.is_string() && !v.get<std::string>().empty() && v != "-1" && v != "void" &&
                  v != "none" && v != "NoDevFiles";
         };
         // SLURM_GPUS_ON_NODE is a count; the others list GPUs ("0" is the first).
         const json on_node = step->value("SLURM_GPUS_ON_NODE", json(nullptr));
         const bool counted = set("SLURM_GPUS_ON_NODE") && on_node != "0";
         if (!set("SLURM_STEP_GPUS") && !set("SLURM_JOB_GPUS") && !counted) {
           return NotApplicable(
               "the audit's job step was given no GPUs (--srun-arg=--gres=gpu:1 gives it one)");
         }
         if (set("CUDA_VISIBLE_DEVICES")) {
           return Pass("CUDA_VISIBLE_DEVICES=" + Shown(JsonAt(*step, {"CUDA_VISIBLE_DEVICES"})));
         }
         if (set("NVIDIA_VISIBLE_DEVICES")) {
           return Pass("NVIDIA_VISIBLE_DEVICES=" +
                       Shown(JsonAt(*step, {"NVIDIA_VISIBLE_DEVICES"})));
         }
         return Found("unset", "CUDA_VISIBLE_DEVICES naming the step's GPUs",
                      "a job step with GPUs sees no CUDA_VISIBLE_DEVICES: every process may reach "
                      "every GPU");
       }},
      {"networking.nccl-ib-qps",
       [](const Inputs& in) -> Verdict {
         const json* qps = Get(in, "network.nccl.ib_qps_per_connection");
         const json* tiers = Get(in, "network.fabric.tiers");
         if (qps == nullptr) return NotCollected("network.nccl.ib_qps_per_connection");
         if (tiers == nullptr) return NotCollected("network.fabric.tiers");
         // JsonAt: a const json's operator[] on a missing key is undefined, not null.
         const json& count = JsonAt(*qps, {"value"});
         const json& multi_tier = JsonAt(*tiers, {"multi_tier"});
         if (!count.is_number_integer() || !multi_tier.is_boolean()) {
           return Unknown("the queue pairs or the fabric's tiers are not known");
         }
         const int64_t value = count.get<int64_t>();
         const int64_t nodes = tiers->value("nodes", int64_t{0});
         const std::string seen = fmt::format("{} QP(s) per connection ({}), {} nodes", value,
                                              qps->value("source", std::string("?")), nodes);
         if (!multi_tier.get<bool>()) return Pass(seen + ": one tier");
         if (value >= 2) return Pass(seen);
         return Found(seen, "NCCL_IB_QPS_PER_CONNECTION >= 2 on a multi-tier fabric",
                      "one queue pair per connection gives ECMP one flow to spread");
       }},
      {"isolation.bmc-ipmi",
       [](const Inputs& in) -> Verdict {
         const json* devices = Get(in, "host.ipmi.devices");
         const json* answered = Get(in, "host.ipmi.mc_info");
         if (devices == nullptr || answered == nullptr || !devices->is_array()) {
           return NotCollected("host.ipmi.devices", "host.ipmi.mc_info");
         }
         if (devices->empty()) return Pass("no IPMI device node");
         std::vector<std::string> names;
         for (const json& d : *devices) names.push_back(Shown(d));
         const std::string seen = Join(names, ", ");
         if (answered->is_null()) {
           return Unknown(
               fmt::format("{} here, and no ipmitool to see whether the BMC answers", seen));
         }
         if (answered->get<bool>()) {
           return Found(seen + ": the BMC answers", "no BMC reachable from a tenant's node",
                        "the BMC answers IPMI from inside the node: a tenant can reach it");
         }
         return Pass(seen + ": the BMC does not answer the auditing user");
       }},
      {"hardware.vboost",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         // B300 and GB300 have no vboost slider (as the public audit says).
         if (const json* names = Get(in, "gpu.name"); names != nullptr && names->is_array()) {
           static const std::regex kNoSlider(R"((^|[^A-Za-z0-9])G?B300([^0-9]|$))");
           for (const json& name : *names) {
             if (name.is_string() && std::regex_search(name.get<std::string>(), kNoSlider)) {
               return NotApplicable(fmt::format("{} has no vboost slider", Shown(name)));
             }
           }
         }
         const json* vboost = Get(in, "gpu.controls.vboost");
         if (vboost == nullptr) return NotCollected("gpu.controls.vboost");
         if (vboost->is_null()) return NotApplicable("no nvidia-smi here");
         if (!vboost->is_object()) return Unknown("gpu.controls.vboost has an unexpected shape");
         const json allowed = vboost->value("allowed", json());
         const auto said = vboost->find("detail");
         const std::string detail = said != vboost->end() && said->is_string()
                                        ? SanitizeUtf8(said->get<std::string>())
                                        : std::string();
         if (vboost->value("method", json()) == "root") {
           Verdict verdict = Unknown(
               "the audit ran as root, to whom sudo's policy does not apply; whether the driver "
               "takes a change is known only by making one, which the audit does not do (run "
               "it as a tenant's user to ask sudo)");
           verdict.observed = "root";
           return verdict;
         }
         if (allowed == true) {
           return Pass("sudo allows nvidia-smi boost-slider --vboost",
                       "sudo's policy permits it for this user (sudo -n -k -l; where the user has "
                       "another rule without a password, this one may still ask for one); the "
                       "driver's acceptance is not tried (the audit sets nothing)");
         }
         if (allowed == false) {
           return Found("refused", "permitted by sudo's policy",
                        detail.empty() ? "sudo does not allow nvidia-smi boost-slider --vboost"
                        : detail.starts_with("sudo") ? detail
                                                     : "sudo: " + detail);
         }
         return Unknown(detail.empty() ? "sudo did not say" : detail);
       }},
      {"hardware.hbm-memory-exposure",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const json* names = Get(in, "gpu.name");
         if (names == nullptr || !names->is_array()) return NotCollected("gpu.name");
         const bool grace = std::ranges::any_of(*names, [](const json& n) {
           const std::string name = n.is_string() ? n.get<std::string>() : "";
           return name.find("GH200") != name.npos || name.find("GB200") != name.npos ||
                  name.find("GB300") != name.npos;
         });
         if (!grace) return NotApplicable("not a Grace Hopper or Grace Blackwell system");
         const json* nodes = Get(in, "host.numa.nodes");
         if (nodes == nullptr || !nodes->is_array()) return NotCollected("host.numa.nodes");
         constexpr int64_t kExposedKib = int64_t{64} << 20;  // 64 GiB
         std::vector<std::string> exposed;
         for (const json& node : *nodes) {
           const json mem = node.value("mem_kib", json(nullptr));
           const json cpus = node.value("cpus", json(nullptr));  // null: the list was unreadable
           if (cpus == 0 && mem.is_number_integer() && mem.get<int64_t>() >= kExposedKib) {
             exposed.push_back(
                 fmt::format("node {} {} GiB", node.value("node", -1), mem.get<int64_t>() >> 20));
           }
         }
         if (!exposed.empty()) {
           return {Verdict::Kind::kFail,
                   Join(exposed, ", "),
                   "no memory-only NUMA node",
                   fmt::format("GPU memory is onlined as system memory ({})", Join(exposed, ", ")),
                   {}};
         }
         const json* mode = Get(in, "gpu.driver.params.coherent_gpu_memory_mode");
         if (mode == nullptr) return NotCollected("gpu.driver.params.coherent_gpu_memory_mode");
         if (mode->is_string() && *mode == "driver") return Pass("CDMM (driver)");
         const std::string seen = mode->is_string() ? Shown(*mode) : "not set";
         const Verdict::Kind kind = in.context.target == AuditTarget::kKubernetes
                                        ? Verdict::Kind::kFail
                                        : Verdict::Kind::kWarn;
         return {kind,
                 seen,
                 "CoherentGPUMemoryMode=driver",
                 "the driver is not in CDMM mode: HBM may be onlined as system memory",
                 {}};
       }},
      {"networking.ib-pkeys",
       [](const Inputs& in) -> Verdict {
         const json* ports = Get(in, "network.ib.ports[].pkeys");
         if (ports == nullptr) return NotCollected("network.ib.ports[].pkeys");
         if (!ports->is_array()) return Unknown("network.ib.ports[].pkeys is not a list");
         if (ports->empty()) return NotApplicable("no InfiniBand port here");
         std::vector<std::string> default_only;
         std::vector<std::string> seen;
         for (const json& port : *ports) {
           const std::string name = port.value("port", std::string("?"));
           const json keys = port.value("pkeys", json(nullptr));
           if (!keys.is_array()) return Unknown(fmt::format("{}'s PKeys could not be read", name));
           std::vector<std::string> list;
           for (const json& key : keys) list.push_back(Shown(key));
           if (list.empty()) return Unknown(fmt::format("{}'s PKeys could not be read", name));
           seen.push_back(fmt::format("{} {}", name, Join(list, "/")));
           if (list == std::vector<std::string>{"0xffff"}) default_only.push_back(name);
         }
         if (default_only.empty()) return Pass(Join(seen, ", "));
         return Found(Join(seen, ", "), "a tenant PKey besides the default",
                      fmt::format("only the default full-member PKey 0xffff on {}: tenants "
                                  "sharing the fabric can reach each other",
                                  Join(default_only, ", ")));
       }},
      {"isolation.nvlink-boundary",
       [](const Inputs& in) -> Verdict {
         if (auto na = NeedsDriver(in)) return *na;
         const auto nvlink = Flag(in, "gpu.topology.nvlink");
         if (!nvlink) return NotCollected("gpu.topology.nvlink");
         if (!*nvlink) return NotApplicable("no NVLink between these GPUs");
         if (Flag(in, "attestation.nvlink_domain_exclusive").value_or(false)) {
           return Pass("NVLink; the provider attests the domain is this tenant's alone");
         }
         return Attest("NVLink", "only the provider can say whether the NVLink domain is shared");
       }},
      {"software.lmod-modules",
       [](const Inputs& in) -> Verdict {
         const json* modules = Get(in, "software.modules.available");
         if (modules == nullptr) return NotCollected("software.modules.available");
         const std::string expected = "modules for cuda, hpcx or nccl";
         if (modules->is_null()) {
           return Found("no module command", expected,
                        "neither Lmod nor Environment Modules is installed on this node");
         }
         const json& key = JsonAt(*modules, {"key"});
         const std::string system = TextAt(*modules, {"system"});
         if (key.empty()) {
           return Found(
               system + ", no cuda, hpcx or nccl module", expected,
               fmt::format("{} offers none of the modules users load first (in {})", system,
                           Join(JsonAt(*modules, {"paths"}).get<std::vector<std::string>>(), ":")));
         }
         return Pass(system + ": " + Join(key.get<std::vector<std::string>>(), ", "));
       }},
      {"orchestration.slurm-prolog-duration",
       [](const Inputs& in) -> Verdict {
         const json* prolog = Get(in, "scheduler.slurm.prolog_seconds");
         if (prolog == nullptr) return NotCollected("scheduler.slurm.prolog_seconds");
         const json& value = JsonAt(*prolog, {"value"});
         if (!value.is_number()) {
           const std::string note = TextAt(*prolog, {"note"});
           return Unknown(note.empty() ? "scheduler.slurm.prolog_seconds is not a number" : note);
         }
         const double seconds = value.get<double>();
         const std::string observed = fmt::format("{:.1f} s", seconds);
         if (seconds < 30) return Pass(observed);
         return Found(observed, "< 30 s",
                      fmt::format("the audit's task started {:.1f} s after its job (from {}): "
                                  "every job waits that long for the prolog",
                                  seconds, TextAt(*prolog, {"source"})));
       }},
      {"access.ssh-between-nodes",
       [](const Inputs& in) -> Verdict {
         const json* ssh = Get(in, "access.ssh_to_compute_node");
         if (ssh == nullptr) return NotCollected("access.ssh_to_compute_node");
         if (ssh->is_null()) return NotApplicable("the audit's job has one node: none to reach");
         const json& ok = JsonAt(*ssh, {"ok"});
         const std::string to = TextAt(*ssh, {"to"});
         if (!ok.is_boolean()) return Unknown(TextAt(*ssh, {"detail"}));
         if (ok.get<bool>()) return Pass("ssh to " + to);
         return Found(fmt::format("ssh to {} failed: {}", to, TextAt(*ssh, {"detail"})),
                      "ssh in batch mode to a node of one's own job",
                      "users cannot ssh between the nodes of their job (MPI launchers, "
                      "debuggers and monitoring need it)");
       }},
      {"software.nvhpc",
       [](const Inputs& in) -> Verdict {
         if (auto na = NoNvidiaDriver(in)) return *na;
         const json* release = Get(in, "software.nvhpc.release");
         if (release == nullptr) return NotCollected("software.nvhpc.release");
         if (release->is_null()) {
           return Found("not installed", "the current or previous HPC SDK release, whole",
                        "no release under /opt/nvidia/hpc_sdk on this node");
         }
         const json* compilers = Get(in, "software.nvhpc.compilers");
         const json* payload = Get(in, "software.nvhpc.payload");
         if (compilers == nullptr || payload == nullptr) {
           return NotCollected("software.nvhpc.compilers", "software.nvhpc.payload");
         }
         if (!compilers->is_object() || compilers->empty() ||
             !JsonAt(*payload, {"missing"}).is_array()) {
           return Unknown("the HPC SDK's evidence has an unexpected shape");
         }
         const std::string version = Shown(*release);
         std::vector<std::string> wrong;
         for (const auto& [name, said] : compilers->items()) {
           if (said.is_null()) {
             wrong.push_back("no " + name);
           } else if (said != *release) {
             wrong.push_back(fmt::format("{} is {}", name, Shown(said)));
           }
         }
         for (const json& part : JsonAt(*payload, {"missing"})) {
           wrong.push_back("no " + Shown(part));
         }
         if (!wrong.empty()) {
           Verdict verdict = Found(version + ": " + Join(wrong, ", "), "a whole release",
                                   "the HPC SDK release is incomplete or mixed");
           verdict.kind = Verdict::Kind::kFail;
           return verdict;
         }
         return VersionRule(in, "software.nvhpc.release", "nvhpc", "HPC SDK");
       }},
      {"networking.nccl-topo-file",
       [](const Inputs& in) -> Verdict {
         const json* file = Get(in, "network.nccl.topo_file");
         if (file == nullptr) return NotCollected("network.nccl.topo_file");
         if (file->is_null()) {
           return NotApplicable(
               "no topology file: NCCL_TOPO_FILE is not set (environment, /etc/nccl.conf) and "
               "NCCL's default /var/run/nvidia-topologyd/virtualTopology.xml is not there");
         }
         const json& found = JsonAt(*file, {"found"});
         const json& problem = JsonAt(*file, {"problem"});
         if (!found.is_boolean() || !(problem.is_null() || problem.is_string())) {
           return Unknown("the topology file's evidence has an unexpected shape");
         }
         const std::string named =
             fmt::format("{} (from {})", TextAt(*file, {"path"}), TextAt(*file, {"source"}));
         const char* expected =
             "a topology file NCCL's reader loads (<system version=\"1\">), at an "
             "absolute path";
         std::string broken;
         if (problem.is_string()) {
           broken = named + ": " + Shown(problem);
         } else if (!found.get<bool>()) {
           broken = named + ": not there (NCCL warns and detects the topology itself)";
         }
         if (!broken.empty()) {
           Verdict verdict = Found(broken, expected, broken + "; NCCL cannot use it");
           verdict.kind = Verdict::Kind::kFail;
           return verdict;
         }
         const json* digest = Get(in, "network.nccl.topo_file_sha256");
         const std::string sha = digest != nullptr && digest->is_string()
                                     ? digest->get<std::string>().substr(0, 16)
                                     : std::string("?");
         return Unknown(fmt::format(
             "{} is a topology file NCCL's reader loads (sha256 {}...); whether containers see it "
             "needs one started, which cmax does not do",
             named, sha));
       }},
      {"hardware.pcie-acs",
       [](const Inputs& in) -> Verdict {
         const json* pairs = Get(in, "pci.acs.path_bridges");
         if (pairs == nullptr) return NotCollected("pci.acs.path_bridges");
         const json* kind = Get(in, "host.virtualization.kind");
         if (in.context.target == AuditTarget::kVm || (kind != nullptr && *kind == "vm")) {
           return Unknown("inside a VM the bridges and their ACS are the hypervisor's emulation");
         }
         if (pairs->empty()) return NotApplicable("no GPU with an RDMA NIC on this host");
         // Each redirecting bridge once, with its redirect bits and the first pair it lies between.
         std::map<std::string, std::string> redirecting;
         std::set<std::string> unread;
         size_t shared = 0;
         if (!pairs->is_array()) return Unknown("pci.acs.path_bridges is not a list");
         for (const json& pair : *pairs) {
           if (JsonAt(pair, {"shared"}).is_null()) continue;
           ++shared;
           const json& bridges = JsonAt(pair, {"bridges"});
           if (!bridges.is_array() || bridges.empty()) {
             unread.insert(TextAt(pair, {"shared"}));  // a shared bridge with nothing read
             continue;
           }
           for (const json& bridge : bridges) {
             const std::string name = TextAt(bridge, {"bridge"});
             if (JsonAt(bridge, {"acsctl"}).is_null()) {
               unread.insert(name);
             } else if (JsonAt(bridge, {"redirects"}) == json(true) &&
                        !redirecting.contains(name)) {
               const std::string acsctl = TextAt(bridge, {"acsctl"});
               std::vector<std::string_view> bits;
               for (std::string_view bit : Split(acsctl, ' ')) {
                 if (bit == "ReqRedir+" || bit == "CmpltRedir+" || bit == "EgressCtrl+") {
                   bits.push_back(bit);
                 }
               }
               redirecting[name] =
                   fmt::format("bridge {} {} (GPU {}, NIC {})", name, fmt::join(bits, " "),
                               TextAt(pair, {"gpu"}), TextAt(pair, {"nic"}));
             }
           }
         }
         if (shared == 0) {
           return NotApplicable(
               "no GPU shares a PCIe switch with an RDMA NIC: their traffic crosses the root "
               "complex whatever ACS says");
         }
         if (!redirecting.empty()) {
           std::vector<std::string> shown;
           for (const auto& [name, text] : redirecting) {
             if (shown.size() < 3) shown.push_back(text);
           }
           const size_t more = redirecting.size() - shown.size();
           return Found(Join(shown, "; ") + (more > 0 ? fmt::format(" and {} more", more) : ""),
                        "ReqRedir- CmpltRedir- EgressCtrl- between a GPU and its NIC",
                        "ACS redirection sends GPUDirect RDMA traffic up to the root complex "
                        "instead of across the switch");
         }
         if (!unread.empty()) {
           return Unknown(fmt::format(
               "the ACS registers of {} bridge(s) are readable by root only (lspci -vvv as root)",
               unread.size()));
         }
         return Pass(
             fmt::format("{} GPU-NIC pair(s) under a shared switch, no ACS redirection", shared));
       }},
      {"isolation.dpu-host-isolation",
       [](const Inputs& in) -> Verdict {
         const json* devices = Get(in, "network.bluefield.devices");
         if (devices == nullptr) return NotCollected("network.bluefield.devices");
         if (devices->empty()) return NotApplicable("no BlueField DPU on this host");
         const auto rshim = Flag(in, "network.bluefield.rshim");
         const auto tmfifo = Flag(in, "network.bluefield.tmfifo");
         if (!rshim || !tmfifo) {
           return NotCollected("network.bluefield.rshim", "network.bluefield.tmfifo");
         }
         std::vector<std::string> reachable;
         if (*rshim) reachable.emplace_back("/dev/rshim*");
         if (*tmfifo) reachable.emplace_back("tmfifo_net*");
         if (!reachable.empty()) {
           Verdict verdict = Found(Join(reachable, ", "), "no RShim path from the host",
                                   "the host reaches the DPU's own operating system (RShim)");
           verdict.kind = Verdict::Kind::kFail;
           return verdict;
         }
         return Pass(fmt::format("{} BlueField function(s); no /dev/rshim*, no tmfifo_net*",
                                 devices->size()),
                     "INTERNAL_CPU_RSHIM not read (mlxconfig, as root)");
       }},
      {"versions.virtio-net-bluefield",
       [](const Inputs& in) -> Verdict {
         return BlueFieldController(in, "its version (virtnet version)");
       }},
      {"isolation.virtio-net-bluefield-exposure",
       [](const Inputs& in) -> Verdict {
         return BlueFieldController(in, "whether it is live or latent");
       }},
      {"networking.ib-sm-key",
       [](const Inputs& in) -> Verdict {
         return SubnetKeyRule(in, "attestation.ib_sm_key",
                              "the subnet manager answers an SMInfo query with the SM key zeroed "
                              "to anyone who does not hold it, so a tenant cannot read it");
       }},
      {"networking.ib-sa-key",
       [](const Inputs& in) -> Verdict {
         return SubnetKeyRule(in, "attestation.ib_sa_key",
                              "a tenant's SA queries carry no key, and the SA answers them the "
                              "same whether its own key is the default or not");
       }},
      {"isolation.pcie-passthrough",
       [](const Inputs& in) -> Verdict {
         if (in.context.target == AuditTarget::kVm) {
           return NotApplicable("inside a VM: the host's isolation is the provider's");
         }
         if (Flag(in, "attestation.pcie_isolation").value_or(false)) {
           return Pass("the provider attests PCIe isolation");
         }
         return Attest("", "a tenant cannot verify the host's PCIe isolation");
       }},
      {"isolation.ufm-secured",
       [](const Inputs& in) -> Verdict {
         const json* rdma = Get(in, "network.rdma.type");
         if (rdma == nullptr) return NotCollected("network.rdma.type");
         if (*rdma != "infiniband") {
           return NotApplicable(fmt::format("the fabric is {}, not InfiniBand", Shown(*rdma)));
         }
         if (Flag(in, "attestation.ufm_secured").value_or(false)) {
           return Pass("InfiniBand; the provider attests a secured subnet manager");
         }
         return Attest("InfiniBand", "tenant isolation on the fabric is the subnet manager's");
       }},
  };
  return kRules;
}

Finding ToFinding(const CheckSpec& check, const Verdict& verdict) {
  Finding finding;
  finding.check_id = check.id;
  finding.observed = verdict.observed;
  finding.expected = verdict.expected;
  finding.message = verdict.reason.empty() ? check.title : verdict.reason;
  finding.links = check.links;
  for (const std::string& link : verdict.links) {
    if (std::ranges::find(finding.links, link) == finding.links.end())
      finding.links.push_back(link);
  }
  switch (verdict.kind) {
    case Verdict::Kind::kPass:
      finding.status = CheckStatus::kPass;
      finding.severity = Severity::kInfo;
      return finding;
    case Verdict::Kind::kNotApplicable:
      finding.status = CheckStatus::kSkip;
      finding.severity = Severity::kInfo;
      return finding;
    case Verdict::Kind::kUnknown:
      finding.status = CheckStatus::kUnknown;
      finding.severity = Severity::kMedium;
      return finding;
    case Verdict::Kind::kAttest:
      finding.status = CheckStatus::kAttest;
      finding.severity =
          check.severity == AuditSeverity::kCritical ? Severity::kHigh : Severity::kMedium;
      finding.remediation = check.remediation;
      return finding;
    case Verdict::Kind::kWarn:
      finding.status = CheckStatus::kWarn;
      finding.severity = Severity::kMedium;
      finding.remediation = check.remediation;
      return finding;
    case Verdict::Kind::kFail:
      finding.status = CheckStatus::kFail;
      finding.severity = Severity::kHigh;
      finding.remediation = check.remediation;
      return finding;
    case Verdict::Kind::kFinding: break;
  }
  finding.remediation = check.remediation;
  switch (check.severity) {
    case AuditSeverity::kMissing:
    case AuditSeverity::kVersion:
      finding.status = CheckStatus::kFail;
      finding.severity = Severity::kHigh;
      break;
    case AuditSeverity::kConfig:
      finding.status = CheckStatus::kWarn;
      finding.severity = Severity::kMedium;
      break;
    case AuditSeverity::kCritical:
      finding.status = CheckStatus::kFail;
      finding.severity = Severity::kCritical;
      break;
  }
  return finding;
}

std::string TargetsText(const CheckSpec& check) {
  std::string out;
  for (const AuditTarget target : check.targets) {
    out += (out.empty() ? "" : ", ") + std::string(TargetName(target));
  }
  return out;
}

}  // namespace

std::vector<std::string> GradableChecks() {
  std::vector<std::string> out;
  for (const auto& [id, rule] : Rules()) out.push_back(id);
  return out;
}

std::vector<Finding> GradeChecks(const std::vector<const CheckSpec*>& checks,
                                 const AuditEvidence& evidence, const GradeContext& context) {
  std::vector<Finding> out;
  const Inputs in{evidence, context};
  for (const CheckSpec* check : checks) {
    Verdict verdict;
    if (!check->AppliesTo(context.target)) {
      verdict = NotApplicable(fmt::format("applies to {} only", TargetsText(*check)));
    } else if (!check->side_effect.empty() && !context.allow_side_effects) {
      verdict =
          NotApplicable(fmt::format("needs a side effect ({}): not run without "
                                    "--allow-side-effects",
                                    check->side_effect));
    } else if (const auto rule = Rules().find(check->id); rule == Rules().end()) {
      verdict = Unknown("this version of cmax does not collect it yet");
    } else {
      // Evidence comes from other machines, other cmax versions and stored runs: a value of an
      // unexpected shape makes the check UNKNOWN, never the whole audit an internal error.
      try {
        verdict = rule->second(in);
      } catch (const nlohmann::json::exception& e) {
        verdict = Unknown(fmt::format("its evidence has an unexpected shape ({})", e.what()));
      }
    }
    if (verdict.kind == Verdict::Kind::kUnknown && context.unread != nullptr) {
      std::string why(context.unread_otherwise);
      for (const std::string& key : verdict.missing) {
        if (const auto it = context.unread->find(key); it != context.unread->end()) {
          why = it->second;
          break;
        }
      }
      if (!verdict.missing.empty() && !why.empty()) verdict.reason += fmt::format(" ({})", why);
    }
    out.push_back(ToFinding(*check, verdict));
  }
  return out;
}

}  // namespace cmax::audit
