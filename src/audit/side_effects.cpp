#include "audit/side_effects.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "audit/local_evidence.hpp"
#include "core/json_read.hpp"
#include "core/strings.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// DCGM's quick diagnostic takes seconds; it is known to hang on some systems (DCGM #136, #247),
// hence a ceiling of its own.
constexpr Duration kDiagTimeout = std::chrono::seconds(120);
// Below this, a diagnostic cut short by the node's deadline would cost the node all its evidence.
constexpr Duration kDiagLeastTime = std::chrono::seconds(10);
// A program past its timeout gets SIGTERM, then SIGKILL after a grace, then a last wait: about
// 2 s in all (ProcessRunner); the rest is for framing the evidence before the node's alarm.
constexpr Duration kDeadlineMargin = std::chrono::seconds(5);
constexpr Duration kConnectLeastTime = std::chrono::seconds(1);
// The public audit's limit for the same import.
constexpr Duration kImportTimeout = std::chrono::seconds(30);
constexpr Duration kImportLeastTime = std::chrono::seconds(5);
constexpr const char* kImportImage = "docker://hello-world";

// The time a step may take: `ceiling`, or what the node's deadline leaves (less a margin);
// nothing when that is under `least`.
std::optional<Duration> TimeLeft(const SideEffectIo& io, Duration ceiling, Duration least) {
  if (!io.deadline || !io.now) return ceiling;
  const Duration left = *io.deadline - io.now() - kDeadlineMargin;
  if (left < least) return std::nullopt;
  return std::min(ceiling, left);
}

// The last non-blank line a program printed (its error, for enroot and most tools), cut short.
std::string LastLine(const sys::ProcessResult& ran) {
  const std::string& said = Trim(ran.stderr_text).empty() ? ran.stdout_text : ran.stderr_text;
  std::string_view text = Trim(said);
  if (const size_t newline = text.rfind('\n'); newline != std::string_view::npos) {
    text = Trim(text.substr(newline + 1));
  }
  constexpr size_t kMost = 300;
  return SanitizeUtf8(text.substr(0, kMost));
}

std::string Shown(const EgressTarget& target) {
  return target.host.find(':') != std::string::npos
             ? fmt::format("[{}]:{}", target.host, target.port)
             : fmt::format("{}:{}", target.host, target.port);
}

void Egress(const SideEffectOptions& options, const SideEffectIo& io, AuditEvidence& out) {
  if (options.egress_target.empty()) {
    out["network.egress.target"] = nullptr;  // none named: nothing to connect to
    return;
  }
  const auto target = ParseEgressTarget(options.egress_target);
  if (!target) {
    out["network.egress.target"] = SanitizeUtf8(options.egress_target);
    out["network.egress.detail"] = target.error().message;
    return;
  }
  const std::string shown = SanitizeUtf8(Shown(*target));
  out["network.egress.target"] = shown;
  if (!io.connect) return;
  const auto time = TimeLeft(io, io.timeout, kConnectLeastTime);
  if (!time) {
    out["network.egress.detail"] = "not tried: too little of the node's deadline left";
    return;
  }
  const auto connected = io.connect(target->host, target->port, *time);
  if (connected || connected.error().code != ErrorCode::kNotFound) {
    RecordSideEffect(out, "networking.outbound-internet",
                     fmt::format("opened one TCP connection to {} (nothing sent)", shown),
                     "nothing to undo: the connection was closed at once");
  }
  if (connected) {
    out["network.egress.reachable"] = true;
    out["network.egress.detail"] = "connected";
    return;
  }
  const ErrorCode code = connected.error().code;
  const bool not_reached = code == ErrorCode::kNotFound || code == ErrorCode::kTimeout ||
                           code == ErrorCode::kUnavailable;
  out["network.egress.reachable"] = not_reached ? json(false) : json(nullptr);
  out["network.egress.detail"] = SanitizeUtf8(connected.error().message);
}

void DcgmDiag(const SideEffectOptions& options, const SideEffectIo& io, AuditEvidence& out) {
  const auto dcgmi = FindProgram(*io.fs, io.path, "dcgmi");
  if (!dcgmi) {
    out["health.dcgm.diag_r1"] = nullptr;
    return;
  }
  const auto not_run = [&](std::string why) {
    out["health.dcgm.diag_r1"] = {{"ran", false}, {"reason", std::move(why)}};
  };
  const auto driver = out.find("gpu.driver.version");
  if (driver == out.end() || !driver->second.is_string()) {
    return not_run("no NVIDIA driver is loaded");
  }
  if (!options.force) {
    // NVML's view, read by the audit just before: a GPU with a compute process or any
    // utilisation is a tenant's, and a diagnostic beside it would slow it and read wrong.
    const auto idle = out.find("gpu.idle.temperature_c");
    if (idle == out.end() || !idle->second.is_array() || idle->second.empty()) {
      return not_run("cannot tell whether the GPUs are idle (NVML was not read); --force runs it");
    }
    const auto busy = std::ranges::count_if(
        idle->second, [](const json& gpu) { return JsonAt(gpu, {"idle"}) != json(true); });
    if (busy > 0) {
      return not_run(fmt::format("{} of {} GPU(s) busy or of unknown use; --force runs it", busy,
                                 idle->second.size()));
    }
    // In a job step under device limits NVML sees only the step's GPUs, but the diagnostic
    // (through nv-hostengine) tests every GPU of the node: the driver lists them all.
    if (const auto all = io.fs->ListDir("/proc/driver/nvidia/gpus");
        all && all->size() > idle->second.size()) {
      return not_run(
          fmt::format("NVML sees {} of the {} GPUs the driver lists (device limits of "
                      "the job step): the others may be busy; --force runs it",
                      idle->second.size(), all->size()));
    }
  }
  const auto time = TimeLeft(io, kDiagTimeout, kDiagLeastTime);
  if (!time) return not_run("too little of the node's deadline left for it (--node-timeout)");
  const Duration limit = *time;
  sys::ProcessSpec spec{.argv = {*dcgmi, "diag", "-r", "1", "-j"}};
  spec.timeout = limit;
  spec.output_cap = size_t{4} << 20;
  spec.env_add = {"LC_ALL=C"};
  const auto ran = io.runner->Run(spec);
  const auto failed = [&](std::string why) {
    out["health.dcgm.diag_r1"] = {{"ran", true}, {"error", SanitizeUtf8(why)}};
  };
  if (!ran) return failed(ran.error().message);  // it did not start: nothing was done
  RecordSideEffect(out, "health.dcgm-diag",
                   "ran dcgmi diag -r 1 (DCGM's quick diagnostic: seconds of load on every GPU)",
                   "nothing to undo: it changes no setting");
  if (ran->timed_out) {
    return failed(
        fmt::format("no result within {} s", std::chrono::duration<double>(limit).count()));
  }
  // dcgmi exits non-zero when a test fails: the document says which.
  auto parsed = ParseDcgmDiag(ran->stdout_text);
  if (parsed) {
    out["health.dcgm.diag_r1"] = std::move(*parsed);
    return;
  }
  const std::string said = Trim(ran->stderr_text).empty() ? ran->stdout_text : ran->stderr_text;
  const std::string_view first = Trim(std::string_view(said).substr(0, said.find('\n')));
  constexpr size_t kMost = 200;
  failed(fmt::format("exit {}: {}{}", ran->exit_code, parsed.error().message,
                     first.empty() ? "" : fmt::format(" ({})", first.substr(0, kMost))));
}

void EnrootImport(const SideEffectIo& io, AuditEvidence& out) {
  const auto enroot = FindProgram(*io.fs, io.path, "enroot");
  if (!enroot) {
    out["containers.enroot.import_ok"] = nullptr;  // containers.enroot reports it missing
    return;
  }
  if (!io.make_scratch_dir || !io.remove_file || !io.remove_dir) return;
  const auto time = TimeLeft(io, kImportTimeout, kImportLeastTime);
  if (!time) {
    out["containers.enroot.import_error"] =
        "not run: too little of the node's deadline left for it (--node-timeout)";
    return;
  }
  const auto dir = io.make_scratch_dir();
  if (!dir) {
    out["containers.enroot.import_error"] =
        "not run: no folder of its own for the image: " + SanitizeUtf8(dir.error().message);
    return;
  }
  const std::string image = *dir + "/hello-world.sqsh";
  sys::ProcessSpec spec{.argv = {*enroot, "import", "--output", image, kImportImage}};
  spec.timeout = *time;
  spec.env_add = {"LC_ALL=C"};
  const auto ran = io.runner->Run(spec);
  auto removed = io.remove_file(image);
  if (removed) removed = io.remove_dir(*dir);
  RecordSideEffect(out, "containers.enroot-import",
                   fmt::format("ran enroot import {} into {} (its layers pulled from the registry)",
                               kImportImage, image),
                   removed ? "the image and its folder were removed; its layers stay in enroot's "
                             "cache ($ENROOT_CACHE_PATH, by default ~/.cache/enroot): delete them "
                             "there"
                           : fmt::format("remove the folder {} ({}) and the layers in enroot's "
                                         "cache ($ENROOT_CACHE_PATH, by default ~/.cache/enroot)",
                                         *dir, removed.error().message));
  if (!ran) {
    out["containers.enroot.import_error"] = SanitizeUtf8(ran.error().message);
    return;
  }
  if (ran->timed_out) {
    out["containers.enroot.import_ok"] = false;
    out["containers.enroot.import_error"] =
        fmt::format("no image within {} s", std::chrono::duration<double>(*time).count());
    return;
  }
  out["containers.enroot.import_ok"] = ran->exit_code == 0;
  if (ran->exit_code != 0) {
    const std::string last = LastLine(*ran);
    out["containers.enroot.import_error"] =
        fmt::format("exit {}{}", ran->exit_code, last.empty() ? "" : ": " + last);
  }
}

// The worst status among a test's results ("Fail" > "Warn" > "Pass" > the rest), lower case.
int Rank(const std::string& status) {
  if (status == "fail") return 3;
  if (status == "warn") return 2;
  if (status == "pass") return 1;
  return 0;
}

// "GPU 0: the warning" for the first result of the test's worst status that says something.
std::string FirstProblem(const json& results, const std::string& status) {
  if (!results.is_array()) return {};
  for (const json& r : results) {
    if (ToLower(TextAt(r, {"status"})) != status) continue;
    std::string entity;
    if (const json& group = JsonAt(r, {"entity_group"}); group.is_string()) {
      const json& id = JsonAt(r, {"entity_id"});
      entity = group.get<std::string>() + (id.is_null() ? "" : " " + id.dump());
    } else if (const json& gpu = JsonAt(r, {"gpu_id"}); !gpu.is_null()) {
      entity = "GPU " + (gpu.is_string() ? gpu.get<std::string>() : gpu.dump());
    } else if (const json& gpus = JsonAt(r, {"gpu_ids"}); !gpus.is_null()) {
      entity = "GPU " + (gpus.is_string() ? gpus.get<std::string>() : gpus.dump());
    }
    std::string said;
    if (const json& warnings = JsonAt(r, {"warnings"}); warnings.is_array()) {
      for (const json& w : warnings) {
        said = TextAt(w, {"warning"});
        if (said.empty()) said = TextAt(w, {"message"});
        if (!said.empty()) break;
      }
    }
    if (said.empty()) said = TextAt(r, {"info"});
    if (entity.empty() && said.empty()) continue;
    return entity.empty() ? said : said.empty() ? entity : entity + ": " + said;
  }
  return {};
}

}  // namespace

Result<EgressTarget> ParseEgressTarget(std::string_view text) {
  EgressTarget target;
  std::string_view host = text;
  std::string_view port;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return Fail(ErrorCode::kInvalidArgument, "--egress-target {}: no closing ]", text);
    }
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) {
      return Fail(ErrorCode::kInvalidArgument, "--egress-target {}: ':PORT' expected after ]",
                  text);
    }
    if (!rest.empty()) port = rest.substr(1);
  } else if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--egress-target {}: an IPv6 address goes in brackets ([ADDRESS]:PORT)", text);
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  const bool bad_host = host.empty() || std::ranges::any_of(host, [](char c) {
                          return static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '@' ||
                                 static_cast<unsigned char>(c) >= 0x7f;
                        });
  if (bad_host) {
    return Fail(ErrorCode::kInvalidArgument, "--egress-target {}: HOST[:PORT] expected",
                SanitizeUtf8(text));
  }
  target.host = std::string(host);
  if (!port.empty() || text.ends_with(':')) {
    const std::optional<unsigned> value = ParseWhole<unsigned>(port);
    if (!value || *value == 0 || *value > 65535) {
      return Fail(ErrorCode::kInvalidArgument, "--egress-target {}: the port must be 1-65535",
                  SanitizeUtf8(text));
    }
    target.port = static_cast<uint16_t>(*value);
  }
  return target;
}

Result<json> ParseDcgmDiag(std::string_view text) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Fail(ErrorCode::kCorrupt, "not a JSON document");
  }
  const json* root = nullptr;
  for (const char* key : {"DCGM Diagnostic", "DCGM GPU Diagnostic"}) {
    if (doc.contains(key) && doc[key].is_object()) root = &doc[key];
  }
  if (root == nullptr) return Fail(ErrorCode::kCorrupt, "no \"DCGM Diagnostic\" object");
  if (const std::string error = TextAt(*root, {"runtime_error"}); !error.empty()) {
    return Fail(ErrorCode::kCorrupt, "the diagnostic could not run: {}", SanitizeUtf8(error));
  }
  const json& categories = JsonAt(*root, {"test_categories"});
  if (!categories.is_array()) return Fail(ErrorCode::kCorrupt, "no test_categories list");
  std::string version = TextAt(doc, {"metadata", "version"});
  if (version.empty()) version = TextAt(*root, {"version"});
  json out = {{"ran", true},
              {"version", SanitizeUtf8(version)},
              {"tests", 0},
              {"passed", 0},
              {"skipped", 0},
              {"failed", json::array()},
              {"warned", json::array()}};
  int tests = 0;
  int passed = 0;
  int skipped = 0;
  for (const json& category : categories) {
    const json& list = JsonAt(category, {"tests"});
    if (!list.is_array()) continue;
    for (const json& test : list) {
      if (!test.is_object()) continue;
      const std::string name = SanitizeUtf8(TextAt(test, {"name"}));
      const json& results = JsonAt(test, {"results"});
      std::string status = ToLower(TextAt(test, {"test_summary", "status"}));
      if (status.empty() && results.is_array()) {
        for (const json& r : results) {
          const std::string s = ToLower(TextAt(r, {"status"}));
          if (Rank(s) > Rank(status) || status.empty()) status = s;
        }
      }
      ++tests;
      if (status == "pass") {
        ++passed;
      } else if (status == "fail" || status == "warn") {
        const std::string problem = SanitizeUtf8(FirstProblem(results, status));
        out[status == "fail" ? "failed" : "warned"].push_back(
            problem.empty() ? name : name + ": " + problem);
      } else {
        ++skipped;
      }
    }
  }
  if (tests == 0) return Fail(ErrorCode::kCorrupt, "no test in the document");
  out["tests"] = tests;
  out["passed"] = passed;
  out["skipped"] = skipped;
  return out;
}

void TakeSideEffects(const SideEffectOptions& options, const SideEffectIo& io, AuditEvidence& out) {
  if (!options.allowed) return;
  const auto wanted = [&](std::string_view check) {
    return options.checks.contains(check) && !(io.interrupted && io.interrupted());
  };
  if (wanted("networking.outbound-internet")) Egress(options, io, out);
  if (wanted("health.dcgm-diag")) DcgmDiag(options, io, out);
  if (wanted("containers.enroot-import")) EnrootImport(io, out);
}

void RecordSideEffect(AuditEvidence& out, std::string_view check, std::string did,
                      std::string undo) {
  json& log = out["audit.side_effects"];
  if (!log.is_array()) log = json::array();
  log.push_back({{"check", check}, {"did", std::move(did)}, {"undo", std::move(undo)}});
}

bool TakesSideEffect(const SideEffectOptions& options, std::string_view check) {
  return options.allowed && options.checks.contains(check);
}

SideEffectOptions ForChecks(SideEffectOptions options,
                            const std::vector<const CheckSpec*>& selected) {
  options.checks.clear();
  for (const CheckSpec* check : selected) {
    if (!check->side_effect.empty()) options.checks.insert(check->id);
  }
  return options;
}

std::string SideEffectsPlan(const SideEffectOptions& options) {
  if (!options.allowed) return "read-only";
  std::vector<std::string> what;
  if (options.checks.contains("health.dcgm-diag")) {
    what.emplace_back(options.force ? "dcgmi diag -r 1 on every node, busy or not (--force)"
                                    : "dcgmi diag -r 1 on nodes whose GPUs are idle");
  }
  if (options.checks.contains("networking.outbound-internet") && !options.egress_target.empty()) {
    what.push_back("one TCP connection from each node to " + options.egress_target);
  }
  if (options.checks.contains("containers.enroot-import")) {
    what.emplace_back("an enroot import of docker://hello-world on each node");
  }
  if (options.checks.contains("access.ssh-between-nodes")) {
    what.emplace_back("an ssh login (BatchMode, known hosts only) from each node to the next");
  }
  if (what.empty()) return "read-only: no side effect of the checks asked for applies";
  return "with side effects: " + Join(what, "; ");
}

std::string SideEffectsSummary(const std::vector<const AuditEvidence*>& nodes) {
  std::map<std::string, size_t> done;  // what was done -> on how many nodes
  for (const AuditEvidence* evidence : nodes) {
    const auto log = evidence->find("audit.side_effects");
    if (log == evidence->end() || !log->second.is_array()) continue;
    for (const json& entry : log->second) ++done[TextAt(entry, {"did"})];
  }
  std::vector<std::string> parts;
  for (const auto& [did, count] : done)
    parts.push_back(fmt::format("{} on {} node(s)", did, count));
  return Join(parts, "; ");
}

}  // namespace cmax::audit
