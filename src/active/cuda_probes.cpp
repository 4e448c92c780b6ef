#include "active/cuda_probes.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fmt/format.h>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/strings.hpp"
#include "health/nvml_checks.hpp"
#include "sys/nvml_abi.hpp"

namespace cmax::active {
namespace {

using Json = nlohmann::json;

struct ProbeUse {
  std::string_view probe;   // cmax-probe's name
  std::string_view check;   // the finding's id
  std::string_view metric;  // the thresholds' metric
  std::string_view words;
  std::string_view unit;
  std::string_view peak;  // the class's published peak it is a share of, "" for none
};

// The quick probes. Host copies are held to the limits of nvbandwidth's copy-engine tests: the
// same transfer (pinned memory, cudaMemcpyAsync, the copy engine).
const std::vector<ProbeUse>& QuickProbes() {
  static const std::vector<ProbeUse> kUses = {
      {"gemm_bf16", "active.probe.gemm-bf16", "probe.gemm_bf16_tflops", "BF16 GEMM", "TFLOP/s",
       "bf16_dense_tflops"},
      {"hbm_copy", "active.probe.hbm-copy", "probe.hbm_copy_gbs", "memory copy", "GB/s", "hbm_gbs"},
      {"host_to_device", "active.probe.host-to-device", "nvbandwidth.host_to_device_gbs",
       "host to device", "GB/s", ""},
      {"device_to_host", "active.probe.device-to-host", "nvbandwidth.device_to_host_gbs",
       "device to host", "GB/s", ""},
  };
  return kUses;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "GPU 3" by NVML's index; "CUDA device 3" for a device NVML does not list.
std::string GpuName(const ProbeLine& line, const std::map<std::string, unsigned>& gpus) {
  const auto it = gpus.find(line.bus_id);
  return it != gpus.end() ? fmt::format("GPU {}", it->second)
                          : fmt::format("CUDA device {}", line.device);
}
std::string GpuLabel(const ProbeLine& line, const std::map<std::string, unsigned>& gpus) {
  const auto it = gpus.find(line.bus_id);
  return it != gpus.end() ? std::to_string(it->second) : "cuda" + std::to_string(line.device);
}

Finding Skip(const std::string& check_id, std::string message) {
  return {.check_id = check_id,
          .status = CheckStatus::kSkip,
          .observed = "not run",
          .message = std::move(message)};
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::string Words(const std::vector<std::string>& items) {
  return Join(items, "; ");
}

// What running cmax-probe came to: its output read, or the findings that stand instead for
// every check in `check_ids`.
struct ProbeRun {
  std::optional<ProbeOutput> output;
  std::vector<Finding> instead;
};
ProbeRun ReadRun(const ToolOutcome& ran, const std::vector<std::string>& check_ids,
                 const std::string& command) {
  ProbeRun run;
  const auto all = [&](const auto& make) {
    for (const std::string& id : check_ids) run.instead.push_back(make(id));
  };
  if (ran.instead) {
    all([&](const std::string& id) {
      Finding f = *ran.instead;
      f.check_id = id;
      return f;
    });
    return run;
  }
  auto output = ParseProbeOutput(ran.result->stdout_text);
  if (!output) {
    const std::string why =
        fmt::format("{} (exit {}): {}", command, ran.result->exit_code, output.error().message);
    all([&](const std::string& id) { return Unknown(id, why); });
    return run;
  }
  if (!output->unavailable.empty()) {
    const std::string why =
        fmt::format("no CUDA to run the probes with: {}", SanitizeUtf8(output->unavailable));
    all([&](const std::string& id) { return Skip(id, why); });
    return run;
  }
  if (ran.result->exit_code != 0 && ran.result->exit_code != 1) {
    const std::string why = fmt::format("{} exited {}: {}", command, ran.result->exit_code,
                                        SanitizeUtf8(Trim(ran.result->stderr_text)));
    all([&](const std::string& id) { return Unknown(id, why); });
    return run;
  }
  run.output = std::move(*output);
  return run;
}

// cmax-probe is found beside cmax, not on PATH.
ToolIo ProbeTools(const ProbeRunIo& io) {
  ToolIo tools = io.tools;
  tools.find_program = [program = io.program](const std::string&) {
    return !program.empty() && ::access(program.c_str(), X_OK) == 0 ? program : std::string();
  };
  return tools;
}

}  // namespace

Result<ProbeOutput> ParseProbeOutput(std::string_view text) {
  ProbeOutput out;
  int number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++number;
    line = Trim(line);
    if (line.empty()) continue;
    const Json doc = Json::parse(line, nullptr, false);
    const auto bad = [&](std::string_view why) {
      return Fail(ErrorCode::kCorrupt, "cmax-probe's line {}: {}: {}", number, why,
                  SanitizeUtf8(line.substr(0, 120)));
    };
    if (!doc.is_object()) return bad("not a JSON object");
    if (doc.contains("heartbeat")) continue;
    if (doc.contains("devices")) {
      if (!doc["devices"].is_array()) return bad("devices is not a list");
      for (const Json& d : doc["devices"]) {
        if (!d.is_string()) return bad("a device is not a PCI address");
        out.devices.push_back(Lower(d.get<std::string>()));
      }
    } else if (doc.contains("unavailable")) {
      if (!doc["unavailable"].is_string()) return bad("unavailable is not words");
      out.unavailable = doc["unavailable"].get<std::string>();
    } else if (doc.contains("stopped")) {
      out.stopped = true;
    } else if (doc.contains("probe")) {
      ProbeLine p;
      if (!doc["probe"].is_string() || !doc.contains("device") ||
          !doc["device"].is_number_integer()) {
        return bad("a probe without its name or device");
      }
      p.probe = doc["probe"].get<std::string>();
      p.device = doc["device"].get<int>();
      if (doc.contains("bus_id") && doc["bus_id"].is_string()) {
        p.bus_id = Lower(doc["bus_id"].get<std::string>());
      }
      if (doc.contains("error")) {
        p.error = doc["error"].is_string() ? doc["error"].get<std::string>() : "failed";
      } else if (doc.contains("value") && doc["value"].is_number()) {
        p.value = doc["value"].get<double>();
        if (doc.contains("seconds") && doc["seconds"].is_number()) {
          p.seconds = doc["seconds"].get<double>();
        }
      } else {
        return bad("a probe with neither a value nor an error");
      }
      if (doc.contains("mismatches") && doc["mismatches"].is_number_unsigned()) {
        p.mismatches = doc["mismatches"].get<uint64_t>();
      }
      out.lines.push_back(std::move(p));
    } else {
      return bad("not a line cmax-probe writes");
    }
  }
  if (out.devices.empty() && out.unavailable.empty()) {
    return Fail(ErrorCode::kCorrupt, "cmax-probe said neither its devices nor why it has none");
  }
  return out;
}

std::map<std::string, unsigned> IndexByBusId(const sys::NvmlSnapshot& snapshot) {
  std::map<std::string, unsigned> out;
  for (const sys::GpuReading& g : snapshot.gpus) {
    if (!g.pci_bus_id.empty()) out[Lower(g.pci_bus_id)] = g.index;
  }
  return out;
}

ProbeVerdict JudgeProbes(const ProbeOutput& output, const std::map<std::string, unsigned>& gpus,
                         const GpuClass* gpu_class, const ActiveThresholds& thresholds) {
  ProbeVerdict verdict;
  for (const ProbeUse& use : QuickProbes()) {
    const std::string check_id(use.check);
    const std::optional<Threshold> threshold =
        gpu_class != nullptr ? thresholds.For(*gpu_class, use.metric) : std::nullopt;
    const ProbeLine* worst = nullptr;
    std::vector<std::string> below;
    std::vector<std::string> failed;
    for (const ProbeLine& line : output.lines) {
      if (line.probe != use.probe) continue;
      if (!line.value) {
        failed.push_back(fmt::format("{}: {}", GpuName(line, gpus), SanitizeUtf8(line.error)));
        continue;
      }
      verdict.metrics.push_back({.name = fmt::format("active.probe.{}_{}", use.probe,
                                                     use.unit == "TFLOP/s" ? "tflops" : "gbs"),
                                 .labels = {{"gpu", GpuLabel(line, gpus)}},
                                 .value = *line.value,
                                 .unit = std::string(use.unit)});
      if (worst == nullptr || *line.value < *worst->value) worst = &line;
      if (threshold && *line.value < threshold->min) {
        below.push_back(fmt::format("{} ({})", GpuName(line, gpus), FigureText(*line.value)));
      }
    }
    if (!failed.empty()) {
      verdict.findings.push_back(
          {.check_id = check_id,
           .status = CheckStatus::kFail,
           .severity = Severity::kHigh,
           .observed = "CUDA error",
           .expected = std::string(use.words) + " measured",
           .message = fmt::format("{} failed on {}", use.words, Words(failed)),
           .remediation = "Run the probe again on this GPU alone "
                          "(cmax-probe quick) and read the kernel log "
                          "for an Xid before draining the node."});
      continue;
    }
    if (worst == nullptr) {
      verdict.findings.push_back(
          Unknown(check_id, fmt::format("{}: not in cmax-probe's output", use.words)));
      continue;
    }
    Finding f = JudgeFigure({.check_id = check_id,
                             .label = fmt::format("{} {}", GpuName(*worst, gpus), use.words),
                             .observed = *worst->value,
                             .unit = std::string(use.unit)},
                            gpu_class, threshold);
    // How far from the datasheet: what a buyer compares.
    if (gpu_class != nullptr && !use.peak.empty()) {
      if (const auto peak = gpu_class->peaks.find(std::string(use.peak));
          peak != gpu_class->peaks.end() && peak->second > 0) {
        f.message +=
            fmt::format(" ({:.1f} % of the published peak {} {})",
                        100 * *worst->value / peak->second, FigureText(peak->second), use.unit);
      }
    }
    if (below.size() > 1) {
      f.message += fmt::format("; {} below it: {}", below.size(), Join(below, ", "));
    }
    verdict.findings.push_back(std::move(f));
  }
  return verdict;
}

std::string ObserveBurn(const GpuLook& first, const GpuLook& look, double at_s, BurnWatch& watch) {
  ++watch.looks;
  std::vector<std::string> stop;
  for (const sys::NvmlEvent& e : look.events) {
    if ((e.type & nvml::kEventXidCritical) != 0) {
      watch.xids.push_back({.gpu = e.gpu_index, .xid = e.data, .at_s = at_s});
      stop.push_back(fmt::format("Xid {} on GPU {}", e.data, e.gpu_index));
    }
  }
  for (const sys::GpuReading& g : look.gpus) {
    if (g.lost) {
      if (!watch.lost_at_s.contains(g.index)) {
        watch.lost_at_s[g.index] = at_s;
        stop.push_back(fmt::format("GPU {} lost (fallen off the bus)", g.index));
      }
      continue;
    }
    if (g.temperature_c) {
      unsigned& peak = watch.peak_temperature_c[g.index];
      peak = std::max(peak, *g.temperature_c);
    }
    if (g.sm_clock_mhz) {
      auto [it, added] = watch.lowest_sm_clock_mhz.emplace(g.index, *g.sm_clock_mhz);
      if (!added) it->second = std::min(it->second, *g.sm_clock_mhz);
    }
    if (g.clock_event_reasons) {
      const uint64_t trouble = *g.clock_event_reasons & (0x8 | 0x40 | 0x80);
      if (trouble != 0) watch.trouble_reasons[g.index] |= trouble;
    }
    for (const sys::GpuReading& before : first.gpus) {
      if (before.index != g.index) continue;
      if (g.ecc_dbe_volatile && before.ecc_dbe_volatile &&
          *g.ecc_dbe_volatile > *before.ecc_dbe_volatile) {
        const uint64_t gained = *g.ecc_dbe_volatile - *before.ecc_dbe_volatile;
        if (watch.new_dbe[g.index] < gained) {
          watch.new_dbe[g.index] = gained;
          stop.push_back(fmt::format("{} new double-bit ECC error{} on GPU {}", gained,
                                     gained == 1 ? "" : "s", g.index));
        }
      }
      if (g.ecc_sbe_volatile && before.ecc_sbe_volatile &&
          *g.ecc_sbe_volatile > *before.ecc_sbe_volatile) {
        watch.new_sbe[g.index] = *g.ecc_sbe_volatile - *before.ecc_sbe_volatile;
      }
    }
  }
  if (!stop.empty() && watch.stopped_because.empty()) {
    watch.stopped_because = fmt::format("{} after {:.1f} s", Join(stop, ", "), at_s);
  }
  return Join(stop, ", ");
}

ProbeVerdict JudgeBurn(const ProbeOutput& output, const BurnWatch& watch,
                       const std::map<std::string, unsigned>& gpus, double seconds) {
  ProbeVerdict verdict;
  std::vector<std::string> critical;
  std::vector<std::string> failed;
  std::vector<double> figures;
  std::vector<const ProbeLine*> burns;
  for (const ProbeLine& line : output.lines) {
    if (line.probe != "burn") continue;
    burns.push_back(&line);
    if (!line.value) {
      failed.push_back(fmt::format("{}: {}", GpuName(line, gpus), SanitizeUtf8(line.error)));
      continue;
    }
    figures.push_back(*line.value);
    verdict.metrics.push_back({.name = "active.burn.tflops",
                               .labels = {{"gpu", GpuLabel(line, gpus)}},
                               .value = *line.value,
                               .unit = "TFLOP/s"});
    if (line.mismatches && *line.mismatches > 0) {
      critical.push_back(
          fmt::format("{} gave wrong results ({} element{} unlike the first "
                      "multiply's: silent data corruption)",
                      GpuName(line, gpus), *line.mismatches, *line.mismatches == 1 ? "" : "s"));
    }
  }
  for (const BurnWatch::Xid& x : watch.xids) {
    critical.push_back(fmt::format("Xid {} on GPU {} at {:.1f} s", x.xid, x.gpu, x.at_s));
  }
  for (const auto& [gpu, at] : watch.lost_at_s) {
    critical.push_back(fmt::format("GPU {} fell off the bus at {:.1f} s", gpu, at));
  }
  for (const auto& [gpu, n] : watch.new_dbe) {
    critical.push_back(
        fmt::format("{} new double-bit ECC error{} on GPU {}", n, n == 1 ? "" : "s", gpu));
  }
  for (const auto& [gpu, temperature] : watch.peak_temperature_c) {
    verdict.metrics.push_back({.name = "active.burn.peak_temperature_c",
                               .labels = {{"gpu", std::to_string(gpu)}},
                               .value = static_cast<double>(temperature),
                               .unit = "C"});
  }
  const std::string stopped =
      watch.stopped_because.empty()
          ? ""
          : fmt::format("; the burn was stopped: {}", watch.stopped_because);
  const double median = Median(figures);
  Finding integrity{.check_id = "active.burn",
                    .expected =
                        "no Xid, no lost GPU, no new double-bit ECC error, the same "
                        "result every multiply"};
  if (!critical.empty()) {
    integrity.status = CheckStatus::kFail;
    integrity.severity = Severity::kCritical;
    integrity.observed =
        fmt::format("{} problem{}", critical.size(), critical.size() == 1 ? "" : "s");
    integrity.message = Words(critical) + stopped;
    integrity.remediation =
        "Drain the node; the GPU named failed under load. Reset it (or reboot), run the burn "
        "again, and send it for repair if it fails again.";
  } else if (!failed.empty()) {
    integrity.status = CheckStatus::kFail;
    integrity.severity = Severity::kHigh;
    integrity.observed = "CUDA error";
    integrity.message = "the burn failed on " + Words(failed) + stopped;
    integrity.remediation = "Read the kernel log for an Xid at the time of the burn.";
  } else if (burns.empty()) {
    integrity.status = CheckStatus::kUnknown;
    integrity.severity = Severity::kMedium;
    integrity.observed = "no result";
    integrity.message = "cmax-probe gave no burn figure" + stopped;
  } else {
    integrity.status = CheckStatus::kPass;
    integrity.observed = fmt::format("{} GPU{}, {:g} s, {} TFLOP/s median", burns.size(),
                                     burns.size() == 1 ? "" : "s", seconds, FigureText(median));
    integrity.message = fmt::format(
        "{} under a {:g} s BF16 burn: no Xid, no lost GPU, no new "
        "double-bit ECC error, every result the same ({} looks "
        "through NVML)",
        integrity.observed, seconds, watch.looks);
  }
  verdict.findings.push_back(std::move(integrity));

  // Clocks: hardware held them down, or a GPU ran well below its siblings.
  std::vector<std::string> slow;
  for (const auto& [gpu, reasons] : watch.trouble_reasons) {
    slow.push_back(fmt::format("GPU {}: {}", gpu, health::TroubleReasons(reasons)));
  }
  constexpr double kSiblingShare = 0.90;
  for (const ProbeLine* line : burns) {
    if (line->value && figures.size() > 1 && *line->value < kSiblingShare * median) {
      slow.push_back(fmt::format("{} at {} TFLOP/s, {:.0f} % of the node's median {}",
                                 GpuName(*line, gpus), FigureText(*line->value),
                                 100 * *line->value / median, FigureText(median)));
    }
  }
  Finding clocks{.check_id = "active.burn.clocks",
                 .expected = "no hardware slowdown; every GPU within 90 % of the node's median"};
  if (figures.empty()) {
    clocks.status = CheckStatus::kUnknown;
    clocks.severity = Severity::kLow;
    clocks.observed = "no figure";
    clocks.message = "no burn figure to compare";
  } else if (!slow.empty()) {
    clocks.status = CheckStatus::kWarn;
    clocks.severity = Severity::kMedium;
    clocks.observed = fmt::format("{} slow", slow.size());
    clocks.message = Words(slow);
    clocks.remediation =
        "Look at the GPU's cooling and power (nvidia-smi -q -d PERFORMANCE,TEMPERATURE) and "
        "compare it with its neighbours.";
  } else {
    clocks.status = CheckStatus::kPass;
    clocks.observed = fmt::format("{} TFLOP/s median", FigureText(median));
    clocks.message = "no hardware slowdown, every GPU within 90 % of the node's median";
  }
  verdict.findings.push_back(std::move(clocks));
  return verdict;
}

ProbeVerdict RunCudaProbes(const std::map<std::string, unsigned>& gpus, const GpuClass* gpu_class,
                           const ActiveThresholds& thresholds, Duration deadline,
                           const ProbeRunIo& io) {
  std::vector<std::string> ids;
  for (const ProbeUse& use : QuickProbes()) ids.emplace_back(use.check);
  const ToolIo tools = ProbeTools(io);
  const ToolOutcome ran = RunTool({.check_id = "active.probe",
                                   .tool = "cmax-probe",
                                   .where = "installed beside cmax",
                                   .args = {"quick"},
                                   .env = io.env,
                                   .deadline = deadline},
                                  tools);
  ProbeRun run = ReadRun(ran, ids, "cmax-probe quick");
  if (!run.output) return {.findings = std::move(run.instead)};
  return JudgeProbes(*run.output, gpus, gpu_class, thresholds);
}

ProbeVerdict RunBurn(const std::map<std::string, unsigned>& gpus, double seconds, Duration grace,
                     Duration every, const LookAtGpus& look, const ProbeRunIo& io) {
  const std::vector<std::string> ids = {"active.burn", "active.burn.clocks"};
  // The watch runs beside the burn; the burn's output asks at each heartbeat whether to go on.
  BurnWatch watch;
  std::mutex mutex;
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::string look_error;
  std::thread watcher;
  if (look) {
    watcher = std::thread([&] {
      const auto start = std::chrono::steady_clock::now();
      auto first = look(Duration::zero());
      if (!first) {
        std::lock_guard<std::mutex> lock(mutex);
        look_error = first.error().message;
        return;
      }
      while (!done.load()) {
        auto next = look(every);
        if (!next) {
          std::lock_guard<std::mutex> lock(mutex);
          look_error = next.error().message;
          return;
        }
        const double at =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::lock_guard<std::mutex> lock(mutex);
        if (!ObserveBurn(*first, *next, at, watch).empty()) stop.store(true);
      }
    });
  }
  const ToolIo tools = ProbeTools(io);
  ToolRun run{.check_id = "active.burn",
              .tool = "cmax-probe",
              .where = "installed beside cmax",
              .args = {"burn", fmt::format("{:g}", seconds)},
              .env = io.env,
              .deadline = SecondsAsDuration(seconds) + grace,
              .on_output = [&stop](int, std::string_view) { return !stop.load(); }};
  const ToolOutcome ran = RunTool(run, tools);
  done.store(true);
  if (watcher.joinable()) watcher.join();
  ProbeRun read = ReadRun(ran, ids, "cmax-probe burn");
  if (!read.output) {
    // A burn killed at its deadline after the watch saw why (a GPU lost hangs CUDA's calls)
    // is reported for what the watch saw.
    if (!watch.stopped_because.empty()) {
      ProbeOutput none;
      return JudgeBurn(none, watch, gpus, seconds);
    }
    return {.findings = std::move(read.instead)};
  }
  ProbeVerdict verdict = JudgeBurn(*read.output, watch, gpus, seconds);
  if (!look_error.empty()) {
    verdict.findings.front().message +=
        fmt::format(" (NVML could not be watched: {})", SanitizeUtf8(look_error));
    if (verdict.findings.front().status == CheckStatus::kPass) {
      verdict.findings.front().status = CheckStatus::kUnknown;
      verdict.findings.front().severity = Severity::kLow;
    }
  }
  return verdict;
}

std::string ProbeProgramBeside(const std::string& cmax_binary) {
  return cmax_binary.substr(0, cmax_binary.rfind('/') + 1) + "cmax-probe";
}

Result<LookAtGpus> NvmlLook(const std::string& library_path) {
  auto loaded = sys::Nvml::Load(library_path);
  if (!loaded) return tl::unexpected(loaded.error());
  std::shared_ptr<sys::Nvml> nvml(std::move(*loaded));
  const bool events = static_cast<bool>(nvml->WatchEvents());
  return LookAtGpus([nvml, events](Duration wait) -> Result<GpuLook> {
    GpuLook look;
    if (events) {
      Duration next_wait = wait;
      while (true) {
        auto event = nvml->WaitEvent(next_wait);
        if (!event || !*event) break;
        look.events.push_back(**event);
        next_wait = Duration::zero();
      }
    } else {
      std::this_thread::sleep_for(wait);
    }
    auto snapshot = nvml->Snapshot();
    if (!snapshot) return tl::unexpected(snapshot.error());
    look.gpus = std::move(snapshot->gpus);
    return look;
  });
}

}  // namespace cmax::active
