#include "evaluate/plan_file.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>
#include <yaml-cpp/yaml.h>

#include "active/thresholds.hpp"
#include "core/keys.hpp"
#include "core/strings.hpp"
#include "core/yaml_document.hpp"
#include "endpoint/api.hpp"
#include "health/log_scanner.hpp"
#include "net/nccl_platforms.hpp"
#include "net/netns_lab.hpp"
#include "train/train_log_run.hpp"

namespace cmax::evaluate {
namespace {

int LineOf(const YAML::Node& node) {
  return node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
}

// What a plan's `env` must hold; the entries are not quoted back, since a value may be a secret.
constexpr const char* kEnvIsSettings =
    "env is a list of NAME=VALUE, NAME of letters, digits and '_' (the entries are not shown)";

Error Invalid(const YAML::Node& node, const std::string& message) {
  return Error{ErrorCode::kInvalidArgument, fmt::format("plan line {}: {}", LineOf(node), message)};
}

Result<void> OnlyKeys(const YAML::Node& map, const std::vector<std::string_view>& known,
                      std::string_view where) {
  if (!map.IsMap()) return tl::unexpected(Invalid(map, fmt::format("{} must be a map", where)));
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    if (std::ranges::find(known, key) == known.end()) {
      return tl::unexpected(UnknownKey("plan", key, LineOf(it->first), known));
    }
    // YAML reads the first of two equal keys: the second's phases would be dropped unsaid.
    if (!seen.insert(key).second) {
      return tl::unexpected(Invalid(it->first, fmt::format("{} appears twice in {}", key, where)));
    }
  }
  return {};
}

// A text of one line, 1 to `max` characters; empty when the key is absent.
Result<std::string> Text(const YAML::Node& map, const char* key, size_t max = 4096) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return std::string();
  if (!node.IsScalar() || !IsOneLine(node.Scalar(), max)) {
    return tl::unexpected(
        Invalid(node, fmt::format("{} must be text of 1 to {} printable characters", key, max)));
  }
  return node.Scalar();
}

Result<std::string> Path(const YAML::Node& map, const char* key, const std::string& base_dir) {
  auto text = Text(map, key);
  if (!text || text->empty() || text->front() == '/' || base_dir.empty()) return text;
  return base_dir + "/" + *text;
}

template <typename T>
Result<void> Number(const YAML::Node& map, const char* key, double min, double max, T& out) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return {};
  double value = std::nan("");
  try {
    value = node.as<double>();
  } catch (const YAML::Exception&) {
  }
  const bool whole = std::is_integral_v<T>;
  if (!std::isfinite(value) || value < min || value > max ||
      (whole && value != std::floor(value))) {
    return tl::unexpected(
        Invalid(node, fmt::format("{} must be {} from {} to {}", key,
                                  whole ? "a whole number" : "a number", min, max)));
  }
  out = static_cast<T>(value);
  return {};
}

// Phase names label evidence keys and findings: short, plain, and unique in the plan.
Result<std::string> PhaseName(const YAML::Node& entry, std::set<std::string>& seen) {
  const YAML::Node node = entry["name"];
  auto name = Text(entry, "name", 64);
  if (!name) return name;
  if (name->empty()) return tl::unexpected(Invalid(entry, "each phase needs a name"));
  const bool plain = std::ranges::all_of(*name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
  if (!plain) {
    return tl::unexpected(
        Invalid(node, "a phase's name is letters, digits, '-', '_' and '.' only"));
  }
  if (std::ranges::find(kReservedPhaseNames, *name) != std::end(kReservedPhaseNames)) {
    return tl::unexpected(Invalid(
        node, fmt::format("\"{}\" is the name of a phase of every run: choose another", *name)));
  }
  if (!seen.insert(*name).second) {
    return tl::unexpected(Invalid(node, fmt::format("a second phase named \"{}\"", *name)));
  }
  return name;
}

// An evaluation of more phases of one kind than this is no plan a person wrote.
constexpr size_t kMaxPhases = 1000;

// The entries of a list section, each a map.
Result<std::vector<YAML::Node>> Entries(const YAML::Node& root, const char* key) {
  std::vector<YAML::Node> out;
  const YAML::Node list = root[key];
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) {
    return tl::unexpected(Invalid(list, fmt::format("{} must be a list", key)));
  }
  if (list.size() > kMaxPhases) {
    return tl::unexpected(Invalid(
        list, fmt::format("{} lists {} phases, more than {}", key, list.size(), kMaxPhases)));
  }
  for (const YAML::Node& entry : list) {
    if (!entry.IsMap()) {
      return tl::unexpected(Invalid(entry, fmt::format("each of {} must be a map", key)));
    }
    out.push_back(entry);
  }
  return out;
}

Result<EndpointPhasePlan> EndpointOf(const YAML::Node& entry, const std::string& base_dir,
                                     std::set<std::string>& seen) {
  if (auto ok = OnlyKeys(
          entry,
          {"name", "url", "api", "model", "api_key_env", "api_key_file", "concurrency", "requests",
           "rate", "warmup", "input_len", "output_len", "prefix_len", "timeout_s"},
          "an endpoint");
      !ok) {
    return tl::unexpected(ok.error());
  }
  EndpointPhasePlan out;
  auto name = PhaseName(entry, seen);
  if (!name) return tl::unexpected(name.error());
  out.name = *name;
  auto url = Text(entry, "url");
  if (!url) return tl::unexpected(url.error());
  if (url->empty() || !(url->starts_with("http://") || url->starts_with("https://"))) {
    return tl::unexpected(
        Invalid(entry, fmt::format("endpoint {}: url must be an http:// or https:// URL", *name)));
  }
  out.target.url = *url;
  auto model = Text(entry, "model", 256);
  if (!model) return tl::unexpected(model.error());
  if (model->empty()) {
    return tl::unexpected(
        Invalid(entry, fmt::format("endpoint {}: model names the model to ask for", *name)));
  }
  out.target.model = *model;
  auto api = Text(entry, "api", 32);
  if (!api) return tl::unexpected(api.error());
  if (!api->empty()) {
    if (!endpoint::ParseApi(*api)) {
      return tl::unexpected(Invalid(entry["api"], "api must be chat, completions or anthropic"));
    }
    out.target.api = *api;
  }
  // The key never sits in the plan: the plan names where it is.
  auto key_env = Text(entry, "api_key_env", 128);
  if (!key_env) return tl::unexpected(key_env.error());
  if (!key_env->empty() && !IsEnvName(*key_env)) {
    // Most likely the key itself, written where its variable's name goes: never repeated.
    return tl::unexpected(
        Invalid(entry["api_key_env"], fmt::format("endpoint {}: api_key_env names an environment "
                                                  "variable (letters, digits, '_'), not the key; "
                                                  "what is there is not shown",
                                                  out.name)));
  }
  out.target.api_key_env = *key_env;
  auto key_file = Path(entry, "api_key_file", base_dir);
  if (!key_file) return tl::unexpected(key_file.error());
  out.target.api_key_file = *key_file;
  out.target.label = "cmax-plan-" + out.name;
  // The load: a short run by default, so that an evaluation with several endpoints is quick.
  out.pace.concurrency = 8;
  out.pace.requests = 64;
  for (const auto& ok : {Number(entry, "concurrency", 1, 4096, out.pace.concurrency),
                         Number(entry, "requests", 1, 1e6, out.pace.requests),
                         Number(entry, "rate", 0, 1e6, out.pace.rate),
                         Number(entry, "warmup", 0, 1e5, out.pace.warmup),
                         Number(entry, "input_len", 1, 1e6, out.workload.input_len),
                         Number(entry, "output_len", 1, 1e5, out.workload.output_len),
                         Number(entry, "prefix_len", 0, 1e6, out.workload.prefix_len),
                         Number(entry, "timeout_s", 0.1, 86400, out.target.timeout_s)}) {
    if (!ok) return tl::unexpected(ok.error());
  }
  return out;
}

// A list of one-line texts; empty when the key is absent.
// A scalar of one printable line, 1 to 4096 characters.
bool OneLine(const YAML::Node& item) {
  return item.IsScalar() && IsOneLine(item.Scalar(), 4096);
}

// A list's size in a plan: YAML's aliases let a 1 MB plan name one 4 KB text 260,000 times
// (1 GB read, 42 s, past SIGTERM). No list a plan means holds more than these.
constexpr size_t kMaxListItems = 10'000;
constexpr size_t kMaxListBytes = size_t{1} << 20;

Result<void> ListFits(const YAML::Node& list, const char* key, const std::string& where) {
  if (list.size() > kMaxListItems) {
    return tl::unexpected(Invalid(list, fmt::format("{}: {} holds {} entries, more than {}", where,
                                                    key, list.size(), kMaxListItems)));
  }
  size_t bytes = 0;
  for (const YAML::Node& item : list) {
    if (item.IsScalar()) bytes += item.Scalar().size();
    if (bytes > kMaxListBytes) {
      return tl::unexpected(Invalid(
          list, fmt::format("{}: {} holds more than {} bytes of text", where, key, kMaxListBytes)));
    }
  }
  return {};
}

Result<std::vector<std::string>> Texts(const YAML::Node& map, const char* key,
                                       const std::string& where) {
  std::vector<std::string> out;
  const YAML::Node list = map[key];
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) {
    return tl::unexpected(Invalid(list, fmt::format("{}: {} must be a list", where, key)));
  }
  if (auto fits = ListFits(list, key, where); !fits) return tl::unexpected(fits.error());
  for (const YAML::Node& item : list) {
    if (!OneLine(item)) {
      return tl::unexpected(
          Invalid(item, fmt::format("{}: each of {} is one line of text", where, key)));
    }
    out.push_back(item.Scalar());
  }
  return out;
}

// A network entry's `sweep`: `cmax nccl sweep`'s options, by their long names; its
// `find_bad_node` takes them too (`what`), and `more` keys of its own, read by the caller.
Result<net::NcclSweepRequest> SweepOf(const YAML::Node& node, const std::string& base_dir,
                                      const std::string& where, const std::string& what = "sweep",
                                      const std::vector<std::string_view>& more = {}) {
  const bool search = what == "find_bad_node";
  std::vector<std::string_view> known = {
      "hosts",     "hostfile",  "nccl_tests", "launcher",      "min_bytes",
      "max_bytes", "iters",     "warmup",     "gpus_per_node", "step_timeout_s",
      "env",       "netns_lab", "slow_links", "srun_mpi"};
  // The search runs all_reduce at one size in every group it measures: the sweep's choices of
  // collectives, variants, node counts and size steps would be read and then ignored.
  for (const char* key : {"collectives", "variants", "nodes", "factor"}) {
    if (!search) {
      known.emplace_back(key);
    } else if (node.IsMap() && node[key]) {
      return tl::unexpected(Invalid(
          node[key], fmt::format("{}: {} is for a sweep (find_bad_node runs all_reduce at one "
                                 "size, min_bytes to max_bytes, in every group)",
                                 where, key)));
    }
  }
  known.insert(known.end(), more.begin(), more.end());
  if (auto ok = OnlyKeys(node, known, where + " " + what); !ok) return tl::unexpected(ok.error());
  net::NcclSweepRequest r;
  net::NcclSweepOptions& o = r.sweep;
  if (search) net::UseBadNodeSearchSizes(o);
  for (auto [key, into] : {std::pair{"hosts", &o.hosts},
                           {"collectives", &o.collectives},
                           {"env", &o.env},
                           {"slow_links", &r.slow_links}}) {
    auto list = Texts(node, key, where);
    if (!list) return tl::unexpected(list.error());
    *into = std::move(*list);
  }
  if (!std::ranges::all_of(o.env, IsEnvSetting)) {
    return tl::unexpected(Invalid(node["env"], fmt::format("{}: {}", where, kEnvIsSettings)));
  }
  if (auto variants = Texts(node, "variants", where); !variants) {
    return tl::unexpected(variants.error());
  } else if (!variants->empty()) {
    o.variants = std::move(*variants);
  }
  auto nodes = Texts(node, "nodes", where);
  if (!nodes) return tl::unexpected(nodes.error());
  for (const std::string& n : *nodes) {
    if (n.empty() || n.size() > 6 ||
        !std::ranges::all_of(n, [](char c) { return c >= '0' && c <= '9'; }) || std::stoi(n) < 1) {
      return tl::unexpected(
          Invalid(node["nodes"], fmt::format("{}: nodes are whole numbers of nodes", where)));
    }
    o.node_counts.push_back(std::stoi(n));
  }
  auto hostfile = Path(node, "hostfile", base_dir);
  auto tests = Path(node, "nccl_tests", base_dir);
  auto launcher = Text(node, "launcher", 16);
  auto min_bytes = Text(node, "min_bytes", 32);
  auto max_bytes = Text(node, "max_bytes", 32);
  auto srun_mpi = Text(node, "srun_mpi", 32);
  for (const auto* t : {&hostfile, &tests, &launcher, &min_bytes, &max_bytes, &srun_mpi}) {
    if (!*t) return tl::unexpected(t->error());
  }
  r.hostfile = *hostfile;
  r.nccl_tests_dir = *tests;
  if (!launcher->empty() && *launcher != "mpirun" && *launcher != "srun") {
    return tl::unexpected(
        Invalid(node["launcher"], fmt::format("{}: launcher is mpirun or srun", where)));
  }
  o.launcher = *launcher == "srun" ? net::NcclLauncher::kSrun : net::NcclLauncher::kMpirun;
  if (!min_bytes->empty()) o.min_bytes = *min_bytes;
  if (!max_bytes->empty()) o.max_bytes = *max_bytes;
  if (!srun_mpi->empty()) o.srun_mpi = *srun_mpi;
  double step_timeout_s = 600;
  for (auto ok : {Number(node, "factor", 2, 1024, o.factor), Number(node, "iters", 1, 1e6, o.iters),
                  Number(node, "warmup", 0, 1e6, o.warmup),
                  Number(node, "gpus_per_node", 1, 72, o.gpus_per_node),
                  Number(node, "netns_lab", 2, 200, r.lab_hosts),
                  Number(node, "step_timeout_s", 0.1, 86400, step_timeout_s)}) {
    if (!ok) return tl::unexpected(ok.error());
  }
  o.step_timeout = SecondsAsDuration(step_timeout_s);
  // What the sweep would refuse only once the phase ran, refused with the plan's line now.
  const auto refuse = [&](const char* key, std::string_view why) {
    return tl::unexpected(Invalid(node[key], fmt::format("{}: {}", where, why)));
  };
  if (r.lab_hosts == 0 && !r.slow_links.empty()) {
    return refuse("slow_links", "slow_links slow a netns_lab's hosts: give the netns_lab");
  }
  if (auto slow = net::ParseSlowLinks(r.slow_links, r.lab_hosts); !slow) {
    return refuse("slow_links", slow.error().message);
  }
  if (r.lab_hosts > 0) {
    if (!o.hosts.empty() || !r.hostfile.empty()) {
      return refuse(o.hosts.empty() ? "hostfile" : "hosts",
                    "a netns_lab makes its own hosts: no hosts or hostfile beside it");
    }
    if (!r.nccl_tests_dir.empty()) {
      return refuse("nccl_tests",
                    "a netns_lab runs the CPU stand-in (its hosts share this machine's GPUs, "
                    "if any): no nccl_tests beside it");
    }
    if (o.launcher == net::NcclLauncher::kSrun) {
      return refuse("launcher", "a netns_lab is reached through mpirun, not srun");
    }
  }
  if (r.lab_hosts == 0 && o.hosts.empty() && r.hostfile.empty()) {
    return tl::unexpected(
        Invalid(node, fmt::format("{}: {} needs hosts, a hostfile or a netns_lab", where, what)));
  }
  return r;
}

// A list of files (`logs: [a.log]`), each taken relative to the plan's folder; absent: none.
Result<std::vector<std::string>> Files(const YAML::Node& entry, const char* key,
                                       const std::string& where, const std::string& base_dir) {
  std::vector<std::string> out;
  const YAML::Node list = entry[key];
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence() || list.size() == 0) {
    return tl::unexpected(Invalid(list, fmt::format("{}: {} must be a list of files", where, key)));
  }
  if (auto fits = ListFits(list, key, where); !fits) return tl::unexpected(fits.error());
  for (const YAML::Node& item : list) {
    if (!OneLine(item)) {
      return tl::unexpected(
          Invalid(item, fmt::format("{}: each of {} is a file's path", where, key)));
    }
    const std::string& path = item.Scalar();
    out.push_back(path.front() == '/' || base_dir.empty() ? path : base_dir + "/" + path);
  }
  return out;
}

Result<NetworkPhasePlan> NetworkOf(const YAML::Node& entry, const std::string& base_dir,
                                   std::set<std::string>& seen) {
  if (auto ok =
          OnlyKeys(entry, {"name", "logs", "sweep", "find_bad_node", "platform", "tolerance_pct"},
                   "a network phase");
      !ok) {
    return tl::unexpected(ok.error());
  }
  NetworkPhasePlan out;
  auto name = PhaseName(entry, seen);
  if (!name) return tl::unexpected(name.error());
  out.name = *name;
  const std::string where = "network " + *name;
  auto logs = Files(entry, "logs", where, base_dir);
  if (!logs) return tl::unexpected(logs.error());
  out.logs = std::move(*logs);
  const YAML::Node sweep = entry["sweep"];
  const YAML::Node find = entry["find_bad_node"];
  const bool has_sweep = sweep && !sweep.IsNull();
  const bool has_find = find && !find.IsNull();
  if (static_cast<int>(!out.logs.empty()) + static_cast<int>(has_sweep) +
          static_cast<int>(has_find) >
      1) {
    return tl::unexpected(Invalid(
        entry,
        fmt::format("{}: logs, a sweep or find_bad_node, one of them (two phases can)", where)));
  }
  if (has_sweep) {
    auto request = SweepOf(sweep, base_dir, where);
    if (!request) return tl::unexpected(request.error());
    out.sweep = std::move(*request);
  }
  if (has_find) {
    auto request =
        SweepOf(find, base_dir, where, "find_bad_node", {"reference_gbs", "max_measurements"});
    if (!request) return tl::unexpected(request.error());
    out.find_bad_node = std::move(*request);
    double reference = 0;
    for (auto ok : {Number(find, "reference_gbs", 0.001, 1e6, reference),
                    Number(find, "max_measurements", 2, 10000, out.max_measurements)}) {
      if (!ok) return tl::unexpected(ok.error());
    }
    if (reference > 0) out.reference_gbs = reference;
  }
  auto platform = Text(entry, "platform", 64);
  if (!platform) return tl::unexpected(platform.error());
  if (!platform->empty() && net::NcclPlatforms::Builtin().Find(*platform) == nullptr) {
    return tl::unexpected(
        Invalid(entry["platform"], fmt::format("network {}: no platform \"{}\" (known: {})", *name,
                                               *platform, net::NcclPlatforms::Builtin().Names())));
  }
  if (has_find && !platform->empty()) {
    return tl::unexpected(Invalid(
        entry["platform"],
        fmt::format("{}: a platform is for logs or a sweep (find_bad_node compares the hosts "
                    "with each other, or with its reference_gbs)",
                    where)));
  }
  out.platform = *platform;
  if (auto ok =
          Number(entry, "tolerance_pct", has_find ? 1 : 0.1, has_find ? 95 : 90, out.tolerance_pct);
      !ok) {
    return tl::unexpected(ok.error());
  }
  return out;
}

Result<TrainingPhasePlan> TrainingOf(const YAML::Node& entry, const std::string& base_dir,
                                     std::set<std::string>& seen) {
  if (auto ok = OnlyKeys(entry,
                         {"name", "logs", "traces", "command", "env", "cwd", "steps", "deadline_s",
                          "reference", "netns_lab", "slow_links"},
                         "a training phase");
      !ok) {
    return tl::unexpected(ok.error());
  }
  TrainingPhasePlan out;
  auto name = PhaseName(entry, seen);
  if (!name) return tl::unexpected(name.error());
  out.name = *name;
  const std::string where = "training " + *name;
  auto logs = Files(entry, "logs", where, base_dir);
  if (!logs) return tl::unexpected(logs.error());
  out.logs = std::move(*logs);
  auto traces = Files(entry, "traces", where, base_dir);
  if (!traces) return tl::unexpected(traces.error());
  out.traces = std::move(*traces);
  for (auto [key, into] :
       {std::pair{"command", &out.command}, {"env", &out.env}, {"slow_links", &out.slow_links}}) {
    auto list = Texts(entry, key, where);
    if (!list) return tl::unexpected(list.error());
    *into = std::move(*list);
  }
  if (!std::ranges::all_of(out.env, IsEnvSetting)) {
    return tl::unexpected(Invalid(entry["env"], fmt::format("{}: {}", where, kEnvIsSettings)));
  }
  const int given = static_cast<int>(!out.logs.empty()) + static_cast<int>(!out.traces.empty()) +
                    static_cast<int>(!out.command.empty());
  if (given > 1) {
    return tl::unexpected(Invalid(
        entry, fmt::format("{}: logs, traces or a command, one of them (two phases can)", where)));
  }
  const bool runs = !out.command.empty();
  for (const char* key : {"env", "cwd", "steps", "deadline_s", "netns_lab", "slow_links"}) {
    if (!runs && entry[key] && !entry[key].IsNull()) {
      return tl::unexpected(
          Invalid(entry[key], fmt::format("{}: {} is for a command to run", where, key)));
    }
  }
  auto cwd = Path(entry, "cwd", base_dir);
  if (!cwd) return tl::unexpected(cwd.error());
  out.cwd = *cwd;
  int64_t steps = 0;
  if (auto ok = Number(entry, "steps", 1, 1e12, steps); !ok) return tl::unexpected(ok.error());
  if (steps > 0) out.steps = steps;
  if (auto ok = Number(entry, "deadline_s", 1, 31622400, out.deadline_s); !ok) {
    return tl::unexpected(ok.error());
  }
  if (auto ok = Number(entry, "netns_lab", 2, 200, out.netns_lab); !ok) {
    return tl::unexpected(ok.error());
  }
  if (out.netns_lab == 0 && !out.slow_links.empty()) {
    return tl::unexpected(
        Invalid(entry["slow_links"],
                fmt::format("{}: slow_links slow a netns_lab's hosts: give the netns_lab", where)));
  }
  if (auto slow = net::ParseSlowLinks(out.slow_links, out.netns_lab); !slow) {
    return tl::unexpected(
        Invalid(entry["slow_links"], fmt::format("{}: {}", where, slow.error().message)));
  }

  auto reference = Text(entry, "reference", 256);
  if (!reference) return tl::unexpected(reference.error());
  if (!reference->empty()) {
    if (!out.traces.empty()) {
      return tl::unexpected(Invalid(
          entry["reference"], fmt::format("{}: a reference is for logs or a command", where)));
    }
    if (auto found = train::FindReference(*reference); !found) {
      return tl::unexpected(Invalid(entry["reference"], where + ": " + found.error().message));
    }
  }
  out.reference = *reference;
  return out;
}

// `active: false`, or a map: {level, burn_s, deadline_s, gpu_class, fleet, fleet_max_age_days}.
Result<ActivePhasePlan> ActiveOf(const YAML::Node& node) {
  ActivePhasePlan out;
  if (!node || node.IsNull()) return out;
  if (node.IsScalar()) {
    bool on = true;
    try {
      on = node.as<bool>();
    } catch (const YAML::Exception&) {
      return tl::unexpected(Invalid(node, "active must be false or a map ({level: quick})"));
    }
    if (on) return tl::unexpected(Invalid(node, "active: say the level ({level: quick})"));
    out.fleet = false;
    return out;
  }
  if (auto ok = OnlyKeys(
          node, {"level", "burn_s", "deadline_s", "gpu_class", "fleet", "fleet_max_age_days"},
          "active");
      !ok) {
    return tl::unexpected(ok.error());
  }
  auto level = Text(node, "level", 16);
  if (!level) return tl::unexpected(level.error());
  if (!level->empty() && *level != "quick" && *level != "full") {
    return tl::unexpected(Invalid(node["level"], "active: level is quick or full"));
  }
  out.level = *level;
  if (out.level.empty()) {
    for (const char* key : {"burn_s", "deadline_s", "gpu_class"}) {
      if (node[key] && !node[key].IsNull()) {
        return tl::unexpected(Invalid(
            node[key], fmt::format("active: {} is for this host's checks: give a level", key)));
      }
    }
  }
  double burn = -1;
  if (auto ok = Number(node, "burn_s", 0, 24 * 3600, burn); !ok) return tl::unexpected(ok.error());
  if (burn >= 0) out.burn_s = burn;
  if (auto ok = Number(node, "deadline_s", 1, 24 * 3600, out.deadline_s); !ok) {
    return tl::unexpected(ok.error());
  }
  auto gpu_class = Text(node, "gpu_class", 64);
  if (!gpu_class) return tl::unexpected(gpu_class.error());
  if (!gpu_class->empty() && active::ActiveThresholds::Builtin().Find(*gpu_class) == nullptr) {
    std::vector<std::string> ids;
    for (const active::GpuClass& c : active::ActiveThresholds::Builtin().Classes()) {
      ids.push_back(c.id);
    }
    return tl::unexpected(Invalid(
        node["gpu_class"],
        fmt::format("active: no GPU class \"{}\" (known: {})", *gpu_class, Join(ids, ", "))));
  }
  out.gpu_class = *gpu_class;
  if (const YAML::Node fleet = node["fleet"]; fleet && !fleet.IsNull()) {
    try {
      out.fleet = fleet.as<bool>();
    } catch (const YAML::Exception&) {
      return tl::unexpected(Invalid(fleet, "active: fleet is true or false"));
    }
  }
  if (auto ok = Number(node, "fleet_max_age_days", 0.01, 365, out.fleet_max_age_days); !ok) {
    return tl::unexpected(ok.error());
  }
  return out;
}

}  // namespace

Result<Plan> ParsePlan(std::string_view yaml, const std::string& base_dir) {
  YAML::Node root;
  try {
    auto one = LoadOneYamlDocument(yaml, "plan");
    if (!one) return tl::unexpected(one.error());
    root = *one;
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "plan is not YAML: {}", e.what());
  }
  if (!root.IsMap()) return Fail(ErrorCode::kInvalidArgument, "plan: not a map");
  Plan plan;
  try {
    if (auto ok = OnlyKeys(root,
                           {"schema", "provider", "attestation", "rubric", "health", "active",
                            "endpoints", "reliability", "network", "training"},
                           "the file");
        !ok) {
      return tl::unexpected(ok.error());
    }
    if (!root["schema"] || !root["schema"].IsScalar() ||
        root["schema"].Scalar() != "cmax.plan/v1") {
      return Fail(ErrorCode::kInvalidArgument, "plan: schema must be cmax.plan/v1");
    }
    auto provider = Text(root, "provider", 128);
    if (!provider) return tl::unexpected(provider.error());
    plan.provider = *provider;
    for (auto [key, out] :
         {std::pair{"attestation", &plan.attestation}, std::pair{"rubric", &plan.rubric}}) {
      auto path = Path(root, key, base_dir);
      if (!path) return tl::unexpected(path.error());
      *out = *path;
    }
    if (const YAML::Node health = root["health"]; health && !health.IsNull()) {
      if (health.IsScalar()) {
        try {
          plan.health = health.as<bool>();
        } catch (const YAML::Exception&) {
          return tl::unexpected(Invalid(health, "health must be true, false or a map"));
        }
      } else {
        if (auto ok = OnlyKeys(health, {"since"}, "health"); !ok) return tl::unexpected(ok.error());
        auto since = Text(health, "since", 64);
        if (!since) return tl::unexpected(since.error());
        // Its form is checked here, before anything runs (a plan's "yesterday" ran the whole
        // evaluation, then made the health phase UNTESTED); whether the time lies in the future
        // is said on the evaluation's own clock. Durations are placed back from a fixed "now"
        // that any of them fits behind.
        if (!since->empty() && !ParseIso8601(*since)) {
          constexpr WallTime kSomeNow{std::chrono::hours(24 * 365 * 30)};
          if (auto form = health::ParseSince(*since, kSomeNow, 0); !form) {
            return tl::unexpected(
                Invalid(health["since"], "health.since: " + form.error().message));
          }
        }
        if (!since->empty()) plan.health_since = *since;
      }
    }
    auto active = ActiveOf(root["active"]);
    if (!active) return tl::unexpected(active.error());
    plan.active = std::move(*active);
    std::set<std::string> names;
    auto endpoints = Entries(root, "endpoints");
    if (!endpoints) return tl::unexpected(endpoints.error());
    for (const YAML::Node& entry : *endpoints) {
      auto phase = EndpointOf(entry, base_dir, names);
      if (!phase) return tl::unexpected(phase.error());
      plan.endpoints.push_back(std::move(*phase));
    }
    auto scenarios = Entries(root, "reliability");
    if (!scenarios) return tl::unexpected(scenarios.error());
    for (const YAML::Node& entry : *scenarios) {
      if (auto ok = OnlyKeys(entry, {"name", "scenario"}, "a reliability scenario"); !ok) {
        return tl::unexpected(ok.error());
      }
      auto name = PhaseName(entry, names);
      if (!name) return tl::unexpected(name.error());
      auto scenario = Path(entry, "scenario", base_dir);
      if (!scenario) return tl::unexpected(scenario.error());
      if (scenario->empty()) {
        return tl::unexpected(
            Invalid(entry, fmt::format("reliability {}: scenario names its file", *name)));
      }
      plan.reliability.push_back({*name, *scenario});
    }
    auto network = Entries(root, "network");
    if (!network) return tl::unexpected(network.error());
    for (const YAML::Node& entry : *network) {
      auto phase = NetworkOf(entry, base_dir, names);
      if (!phase) return tl::unexpected(phase.error());
      plan.network.push_back(std::move(*phase));
    }
    auto training = Entries(root, "training");
    if (!training) return tl::unexpected(training.error());
    for (const YAML::Node& entry : *training) {
      auto phase = TrainingOf(entry, base_dir, names);
      if (!phase) return tl::unexpected(phase.error());
      plan.training.push_back(std::move(*phase));
    }
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "plan: {}", e.what());
  }
  return plan;
}

}  // namespace cmax::evaluate
