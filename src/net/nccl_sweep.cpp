#include "net/nccl_sweep.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <optional>
#include <set>

#include "core/strings.hpp"
#include "net/mpi_launch.hpp"
#include "net/nccl_tests_format.hpp"
#include "net/netns_lab.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/process_runner.hpp"
#include "sys/slurm_jobs.hpp"

namespace cmax::net {
namespace {

// What one step prints, at most: nccl-tests with NCCL_DEBUG=INFO from every rank of a large job.
constexpr size_t kStepOutputCap = size_t{256} << 20;

template <typename List>
bool Contains(const List& list, std::string_view name) {
  return std::ranges::find(list, name) != std::end(list);
}

std::vector<std::string> VariantEnv(const std::string& variant) {
  if (variant == "network") return {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1"};
  if (variant == "no-nvls") return {"NCCL_NVLS_ENABLE=0"};
  return {};
}

std::vector<int> NodeCounts(const NcclSweepOptions& o, bool stand_in) {
  if (!o.node_counts.empty()) return o.node_counts;
  std::vector<int> out;
  const int all = static_cast<int>(o.hosts.size());
  // One rank alone moves nothing: the stand-in starts at two nodes.
  for (int n = stand_in ? 2 : 1; n < all; n *= 2) out.push_back(n);
  out.push_back(all);
  return out;
}

std::string Address(const NcclSweepOptions& o, const std::string& node) {
  const auto it = o.addresses.find(node);
  return it == o.addresses.end() ? node : it->second;
}

// One step: `collective` in `variant` over `nodes`, checked by the caller.
// `log_name` empty: "<collective>-<variant>-<N>n.log".
NcclSweepStep MakeStep(const NcclSweepOptions& o, const std::string& collective,
                       const std::string& variant, std::vector<std::string> nodes,
                       std::string log_name = "") {
  const bool stand_in = o.binaries.empty();
  const int ranks_per_node = stand_in ? 1 : o.gpus_per_node;
  const size_t n = nodes.size();
  NcclSweepStep step{.collective = collective, .variant = variant, .nodes = std::move(nodes)};
  step.log_name =
      log_name.empty() ? fmt::format("{}-{}-{}n.log", collective, variant, n) : std::move(log_name);
  // The variant's settings win over the user's of the same name: a process's environment with
  // a name twice gives getenv the first, which would undo the variant.
  const std::vector<std::string> variant_env = VariantEnv(variant);
  std::vector<std::string> env;
  for (const std::string& e : o.env) {
    const std::string_view name = std::string_view(e).substr(0, e.find('='));
    if (std::ranges::none_of(variant_env, [&](const std::string& v) {
          return std::string_view(v).substr(0, v.find('=')) == name;
        })) {
      env.push_back(e);
    }
  }
  env.insert(env.end(), variant_env.begin(), variant_env.end());
  if (o.launcher == NcclLauncher::kSrun) {
    step.argv = {o.srun,
                 "--mpi=" + o.srun_mpi,
                 fmt::format("--nodes={}", n),
                 "--nodelist=" + Join(step.nodes, ","),
                 fmt::format("--ntasks-per-node={}", ranks_per_node),
                 "--kill-on-bad-exit=1",
                 "--export=ALL"};
    if (!stand_in) step.argv.push_back(fmt::format("--gpus-per-node={}", o.gpus_per_node));
    step.env_add = env;  // srun hands its environment to the ranks
  } else {
    std::vector<std::string> addresses;
    for (const std::string& node : step.nodes) addresses.push_back(Address(o, node));
    // The ranks get the settings by name (-x NAME) and mpirun's own environment carries the
    // values: a value in the argv would be in `ps` and in the step's recorded command.
    step.argv = MpirunPrefix(o.mpirun, addresses, ranks_per_node, o.agent, o.subnet, EnvNames(env));
    // mpirun refuses root unless told; the namespace lab needs root for its hosts.
    step.env_add = env;
    step.env_add.insert(step.env_add.end(), kMpirunAsRootEnv.begin(), kMpirunAsRootEnv.end());
  }
  if (stand_in) {
    step.argv.insert(step.argv.end(), {o.cpu_perf, collective});
  } else {
    step.argv.push_back(o.binaries.at(collective));
  }
  step.argv.insert(step.argv.end(),
                   {"-b", o.min_bytes, "-e", o.max_bytes, "-f", std::to_string(o.factor), "-n",
                    std::to_string(o.iters), "-w", std::to_string(o.warmup)});
  if (!stand_in) step.argv.insert(step.argv.end(), {"-g", "1"});
  if (!stand_in && !o.json_dir.empty()) {
    step.argv.insert(step.argv.end(), {"-J", o.json_dir + "/" + step.log_name + ".json"});
  }
  return step;
}

}  // namespace

namespace {

std::string LogFolderName(std::string_view kind, WallTime now) {
  std::string stamp = FormatIso8601(now);
  std::erase(stamp, ':');
  return fmt::format("{}-{}", kind, stamp);
}

}  // namespace

std::string NcclLogFolder(const std::string& db_path, std::string_view kind, WallTime now) {
  return store::BesideStore(db_path, LogFolderName(kind, now));
}

std::string NcclLogFolderIn(const std::string& folder, std::string_view kind, WallTime now) {
  return folder + "/" + LogFolderName(kind, now);
}

void UseBadNodeSearchSizes(NcclSweepOptions& options) {
  options.min_bytes = "256M";
  options.max_bytes = "256M";
  options.iters = 10;
  options.warmup = 2;
}

std::string CpuStandInBeside(const std::string& cmax_binary) {
  return cmax_binary.substr(0, cmax_binary.rfind('/') + 1) + "cmax-mpi-perf";
}

void PlaceNcclRequest(NcclSweepRequest& request, std::string_view kind,
                      const NcclSweepPlace& place) {
  if (request.nccl_tests_dir.empty() && request.sweep.cpu_perf.empty()) {
    request.sweep.cpu_perf = place.cpu_perf;
  }
  if (request.out_dir.empty()) {
    request.out_dir = place.logs_dir.empty() ? NcclLogFolder(place.db_path, kind, place.now)
                                             : NcclLogFolderIn(place.logs_dir, kind, place.now);
  }
  if (request.own_job.empty()) request.own_job = place.own_job;
}

bool NcclTestsHelpOffersJson(std::string_view help) {
  return help.find("output_file") != std::string_view::npos ||
         help.find("[-J,") != std::string_view::npos;
}

Result<std::map<std::string, std::string>> FindNcclTestsBinaries(const std::string& dir,
                                                                 const sys::FileSystem& fs) {
  if (!fs.IsDirectory(dir)) {
    return Fail(ErrorCode::kNotFound, "{}: not a folder (nccl-tests' build folder)",
                SanitizeUtf8(dir));
  }
  std::map<std::string, std::string> out;
  for (std::string_view c : kNcclTestsCollectives) {
    for (const char* suffix : {"_perf_mpi", "_perf"}) {
      const std::string path = fmt::format("{}/{}{}", dir, c, suffix);
      if (fs.IsRegularFile(path)) {
        out.emplace(std::string(c), path);
        break;
      }
    }
  }
  if (out.empty()) {
    return Fail(ErrorCode::kNotFound,
                "{}: no all_reduce_perf or other nccl-tests binary (build nccl-tests with MPI=1 "
                "and give its build folder)",
                SanitizeUtf8(dir));
  }
  return out;
}

Result<std::vector<NcclSweepStep>> PlanNcclSweep(const NcclSweepOptions& o) {
  const bool stand_in = o.binaries.empty();
  if (o.hosts.empty()) return Fail(ErrorCode::kInvalidArgument, "no hosts to sweep");
  // Names go into mpirun's --host and srun's --nodelist, both comma lists.
  std::set<std::string_view> seen;
  for (const std::string& h : o.hosts) {
    const bool plain = !h.empty() && h.size() <= 253 && std::ranges::all_of(h, [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    });
    if (!plain) {
      return Fail(ErrorCode::kInvalidArgument,
                  "host '{}': a host name is letters, digits, '.', '-' and '_'", SanitizeUtf8(h));
    }
    if (!seen.insert(h).second) {
      return Fail(ErrorCode::kInvalidArgument, "host {} is listed twice", h);
    }
  }
  if (stand_in && o.cpu_perf.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "neither nccl-tests nor the CPU stand-in to run");
  }
  if (stand_in && o.hosts.size() < 2) {
    return Fail(ErrorCode::kInvalidArgument,
                "the CPU stand-in runs one rank per node: it needs two nodes or more");
  }
  std::vector<std::string> collectives = o.collectives;
  if (collectives.empty()) {
    if (stand_in) {
      collectives.assign(std::begin(kCpuCollectives), std::end(kCpuCollectives));
    } else {
      for (std::string_view c : kNcclTestsCollectives) {
        if (o.binaries.contains(std::string(c))) collectives.emplace_back(c);
      }
    }
  }
  for (const std::string& c : collectives) {
    if (!Contains(kNcclTestsCollectives, c)) {
      return Fail(ErrorCode::kInvalidArgument, "unknown collective '{}' (known: {})",
                  SanitizeUtf8(c),
                  "all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, "
                  "broadcast");
    }
    if (stand_in && !Contains(kCpuCollectives, c)) {
      return Fail(ErrorCode::kInvalidArgument, "the CPU stand-in does not run {}", c);
    }
    if (!stand_in && !o.binaries.contains(c)) {
      return Fail(ErrorCode::kNotFound, "no nccl-tests binary for {} ({}_perf)", c, c);
    }
  }
  for (const std::string& v : o.variants) {
    if (!Contains(kNcclVariants, v)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "unknown variant '{}' (known: default, nvlink, network, no-nvls)",
                  SanitizeUtf8(v));
    }
    if (stand_in && v != "default") {
      return Fail(ErrorCode::kInvalidArgument,
                  "the CPU stand-in has no NVLink or NCCL to set: variant {} needs nccl-tests", v);
    }
  }
  if (o.variants.empty()) return Fail(ErrorCode::kInvalidArgument, "no variant to run");
  if (o.srun_mpi.empty() || !std::ranges::all_of(o.srun_mpi, [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
      })) {
    return Fail(ErrorCode::kInvalidArgument, "srun's MPI plugin '{}' is not a plugin's name",
                SanitizeUtf8(o.srun_mpi));
  }
  std::vector<int> counts = NodeCounts(o, stand_in);
  std::ranges::sort(counts);
  if (std::ranges::adjacent_find(counts) != counts.end()) {
    return Fail(ErrorCode::kInvalidArgument, "a node count is given twice");
  }
  if (std::ranges::find(o.variants, "nvlink") != o.variants.end() &&
      std::ranges::find(counts, 1) == counts.end()) {
    return Fail(ErrorCode::kInvalidArgument,
                "variant nvlink runs on one node, and the node counts leave out 1");
  }
  for (const int n : counts) {
    if (n < (stand_in ? 2 : 1) || n > static_cast<int>(o.hosts.size())) {
      return Fail(ErrorCode::kInvalidArgument, "{} nodes: the sweep has {} to {}", n,
                  stand_in ? 2 : 1, o.hosts.size());
    }
  }
  std::vector<NcclSweepStep> steps;
  for (const std::string& variant : o.variants) {
    for (const std::string& collective : collectives) {
      for (const int n : counts) {
        if (variant == "nvlink" && n != 1) continue;
        steps.push_back(MakeStep(o, collective, variant, {o.hosts.begin(), o.hosts.begin() + n}));
      }
    }
  }
  return steps;
}

namespace {

std::string StepName(const NcclSweepStep& s) {
  return fmt::format("{}{} over {} node{} ({})", s.collective,
                     s.variant == "default" ? "" : " (" + s.variant + ")", s.nodes.size(),
                     s.nodes.size() == 1 ? "" : "s", SanitizeUtf8(Join(s.nodes, ",")));
}

std::string Seconds(Duration d) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(d).count());
}

nlohmann::json StepsJson(const std::vector<NcclStepOutcome>& outcomes) {
  nlohmann::json steps = nlohmann::json::array();
  for (const NcclStepOutcome& s : outcomes) {
    steps.push_back(
        {{"collective", s.step.collective},
         {"variant", s.step.variant},
         {"nodes", s.step.nodes},
         {"command", Join(s.step.argv, " ")},
         {"log", s.log_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.log_path)},
         {"seconds", std::chrono::duration<double>(s.took).count()},
         {"launcher_crashes", s.crashes},
         {"problem", s.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.problem)}});
  }
  return steps;
}

// The WARN a forced run beside others' jobs carries.
Finding BesideOthersJobs(const std::string& where) {
  return {.check_id = "network.nccl-beside-jobs",
          .status = CheckStatus::kWarn,
          .severity = Severity::kMedium,
          .message = "measured beside others' Slurm jobs on " + where +
                     " (--force): their traffic is in these figures"};
}

}  // namespace

Result<NcclSweepReport> RunNcclSweep(const NcclSweepOptions& options, const std::string& out_dir,
                                     const NcclAnalyzeOptions& analysis, const NcclSweepIo& io) {
  // Every usage error before the first step: a sweep can take an hour.
  auto steps = PlanNcclSweep(options);
  if (!steps) return tl::unexpected(steps.error());
  auto platforms = LoadNcclPlatforms(analysis.platforms_file, *io.fs);
  if (!platforms) return tl::unexpected(platforms.error());
  if (auto platform = FindNcclPlatform(analysis, *platforms); !platform) {
    return tl::unexpected(platform.error());
  }
  if (auto made = io.fs->CreateDirs(out_dir, 0755); !made) {
    return Fail(made.error().code, "{}: {}", SanitizeUtf8(out_dir), made.error().message);
  }
  NcclSweepReport report;
  report.steps_planned = steps->size();
  std::vector<NcclInput> inputs;
  NcclRunExtras extras{.target = fmt::format("nccl sweep over {} node{}", options.hosts.size(),
                                             options.hosts.size() == 1 ? "" : "s"),
                       .started_at = io.analyze.clock->Now()};
  for (size_t i = 0; i < steps->size(); ++i) {
    if (io.interrupted && io.interrupted()) {
      report.interrupted = true;
      break;
    }
    NcclStepOutcome outcome{.step = (*steps)[i]};
    const NcclSweepStep& step = outcome.step;
    const sys::ProcessSpec spec{.argv = step.argv,
                                .env_add = step.env_add,
                                .timeout = options.step_timeout,
                                .kill_grace = std::chrono::seconds(5),
                                .output_cap = kStepOutputCap};
    // A JSON file of an earlier sweep in the same folder must not stand in for this step's.
    if (!options.json_dir.empty()) (void)io.fs->RemoveFile(out_dir + "/" + step.log_name + ".json");
    auto r = RunLauncher(spec, kLauncherCrashRetries, *io.runner, outcome.crashes);
    if (!r) {
      outcome.problem = r.error().message;
    } else {
      outcome.took = r->duration;
      const std::string path = out_dir + "/" + step.log_name;
      if (auto kept = io.fs->WriteFileAtomic(path, r->stdout_text, 0644); kept) {
        outcome.log_path = path;
      } else {
        outcome.problem = "its log could not be kept: " + kept.error().message;
      }
      if (!Trim(r->stderr_text).empty()) {
        (void)io.fs->WriteFileAtomic(path + ".err", r->stderr_text, 0644);
      }
      NcclInput input{.name = outcome.log_path.empty() ? step.log_name : outcome.log_path,
                      .output = ParseNcclTestsOutput(r->stdout_text),
                      .variant = step.variant == "default" ? "" : step.variant};
      // Nothing printed (a launcher that swallowed the output): the JSON file, when written here.
      if (const std::string json_file = out_dir + "/" + step.log_name + ".json";
          input.output.tables.empty() && !options.json_dir.empty()) {
        if (auto text = io.fs->ReadFile(json_file, kMaxNcclLogBytes)) {
          input.output = ParseNcclTestsOutput(*text);
          input.name = json_file;
        }
      }
      const bool table = std::ranges::any_of(input.output.tables,
                                             [](const NcclTable& t) { return !t.rows.empty(); });
      if (r->interrupted) {
        report.interrupted = true;
        outcome.problem = "stopped: cmax was interrupted";
      } else if (r->timed_out) {
        outcome.problem =
            fmt::format("hung: killed at its {} deadline{}", Seconds(options.step_timeout),
                        table ? " (the sizes it finished are kept)" : "");
      } else if (!r->Succeeded()) {
        outcome.problem =
            fmt::format("{} {}: {}", r->signal != 0 ? "killed by signal" : "exited",
                        r->signal != 0 ? r->signal : r->exit_code, LauncherWhy(r->stderr_text));
      } else if (!table) {
        outcome.problem = "no nccl-tests table in its output";
      }
      if (table) inputs.push_back(std::move(input));
    }
    // A step stopped by the user's Ctrl-C says nothing of the cloud: the UNKNOWN below covers it.
    if (!outcome.problem.empty() && !(r && r->interrupted)) {
      extras.faulty = true;
      extras.findings.push_back({.check_id = "network.nccl-step",
                                 .status = CheckStatus::kFail,
                                 .severity = Severity::kHigh,
                                 .message = StepName(step) + ": " + outcome.problem});
    }
    if (io.progress) {
      io.progress(fmt::format(
          "step {}/{}: {}: {}", i + 1, steps->size(), StepName(step),
          outcome.problem.empty() ? "done in " + Seconds(outcome.took) : outcome.problem));
    }
    report.steps.push_back(std::move(outcome));
    if (report.interrupted) break;
  }
  if (report.interrupted) {
    extras.findings.push_back({.check_id = "network.nccl-step",
                               .status = CheckStatus::kUnknown,
                               .severity = Severity::kMedium,
                               .message = fmt::format("interrupted: {} of {} steps ran",
                                                      report.steps.size(), report.steps_planned)});
  }
  if (!options.beside_others_jobs.empty()) {
    extras.findings.push_back(BesideOthersJobs(options.beside_others_jobs));
  }
  extras.evidence.push_back(
      {"nccl.sweep",
       StepsJson(report.steps).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  auto analyzed = AnalyzeNcclInputs(inputs, analysis, io.analyze, extras);
  if (!analyzed) return tl::unexpected(analyzed.error());
  report.analyzed = std::move(*analyzed);
  return report;
}

std::vector<std::string> ParseHostfile(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : Split(text, '\n')) {
    line = line.substr(0, line.find('#'));
    const auto words = SplitFields(line);
    if (!words.empty()) out.emplace_back(words.front());
  }
  return out;
}

namespace {

using WithOptions = std::function<Result<void>(const NcclSweepOptions&)>;

// Before mpirun puts minutes of full load on the hosts the steps use: whether they run others'
// Slurm jobs. Refused unless forced; a forced sweep's run says it ran beside them. A Slurm that
// cannot be asked (squeue fails: no Slurm cluster), and hosts that are no Slurm node, are said
// and the sweep goes on.
Result<void> LookForOthersJobs(NcclSweepRequest& request, const NcclSweepIo& io) {
  NcclSweepOptions& options = request.sweep;
  if (options.launcher != NcclLauncher::kMpirun) return {};
  const auto say = [&io](const std::string& line) {
    if (io.progress) io.progress(line);
  };
  // A sweep told --nodes 1,2 loads only the first two hosts.
  std::vector<std::string> used;
  if (auto steps = PlanNcclSweep(options); steps) {
    for (const NcclSweepStep& step : *steps) {
      for (const std::string& node : step.nodes) {
        if (std::ranges::find(used, node) == used.end()) used.push_back(node);
      }
    }
  } else {
    used = options.hosts;
  }
  const sys::OthersJobsAnswer answer = sys::AskOthersJobsOn(
      {.hosts = used, .own_job = request.own_job, .find_program = io.find_program}, *io.runner);
  for (const std::string& line : answer.unchecked) say(line);
  const std::vector<sys::HostInUse>& in_use = answer.in_use;
  if (in_use.empty()) return {};
  const std::string where = sys::DescribeHostsInUse(in_use);
  if (!request.force) {
    return Fail(ErrorCode::kBusy,
                "others' Slurm jobs run on {}: the load would slow them and their traffic would "
                "spoil the figures; not run (--force runs beside them; --launcher srun has "
                "Slurm place the steps)",
                where);
  }
  options.beside_others_jobs = where;
  say("--force: running beside others' Slurm jobs on " + where);
  return {};
}

// The hosts from the hostfile, nccl-tests' binaries from its build folder, and a namespace lab
// when one is asked for: `check` sees the options before the lab is made (a wrong flag must not
// cost a lab), `run` with the lab up, which goes down when `run` returns.
Result<void> WithHosts(NcclSweepRequest& request, const NcclSweepIo& io, const WithOptions& check,
                       const WithOptions& run) {
  NcclSweepOptions& options = request.sweep;
  if (!request.hostfile.empty()) {
    auto text = io.fs->ReadFile(request.hostfile, size_t{16} << 20);
    if (!text) {
      return Fail(text.error().code, "{}: {}", SanitizeUtf8(request.hostfile),
                  text.error().message);
    }
    for (std::string& h : ParseHostfile(*text)) options.hosts.push_back(std::move(h));
  }
  if (!request.nccl_tests_dir.empty()) {
    auto binaries = FindNcclTestsBinaries(request.nccl_tests_dir, *io.fs);
    if (!binaries) return tl::unexpected(binaries.error());
    options.binaries = std::move(*binaries);
    // One look at a binary's help: the JSON file where it can write one.
    auto help = io.runner->Run({.argv = {options.binaries.begin()->second, "-h"},
                                .env_add = kMpirunAsRootEnv,
                                .timeout = std::chrono::seconds(20)});
    if (help && NcclTestsHelpOffersJson(help->stdout_text + help->stderr_text)) {
      options.json_dir = request.out_dir;
    }
  }
  if (auto platforms = LoadNcclPlatforms(request.analysis.platforms_file, *io.fs); !platforms) {
    return tl::unexpected(platforms.error());
  } else if (auto platform = FindNcclPlatform(request.analysis, *platforms); !platform) {
    return tl::unexpected(platform.error());
  }
  if (request.lab_hosts <= 0) {
    if (!request.slow_links.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "a slowed link needs a namespace lab (--netns-lab)");
    }
    if (auto ok = check(options); !ok) return ok;
    if (auto ok = LookForOthersJobs(request, io); !ok) return ok;
    if (auto made = io.fs->CreateDirs(request.out_dir, 0755); !made) {
      return Fail(made.error().code, "{}: {}", SanitizeUtf8(request.out_dir), made.error().message);
    }
    return run(options);
  }
  if (!options.hosts.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "a namespace lab makes its own hosts: no --hosts or --hostfile beside it");
  }
  if (options.launcher == NcclLauncher::kSrun) {
    return Fail(ErrorCode::kInvalidArgument, "a namespace lab is reached through mpirun, not srun");
  }
  if (!options.binaries.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "a namespace lab runs the CPU stand-in: its hosts share this machine's GPUs, if "
                "any, so nccl-tests there would measure nothing of a network");
  }
  const NetnsLabRequest lab{
      .hosts = request.lab_hosts, .slow_links = request.slow_links, .tag = request.lab_tag};
  if (auto ok = CheckNetnsLabRequest(lab); !ok) return tl::unexpected(ok.error());
  options.hosts = NetnsHostNames(request.lab_hosts);
  if (auto ok = check(options); !ok) return ok;
  if (auto made = io.fs->CreateDirs(request.out_dir, 0755); !made) {
    return Fail(made.error().code, "{}: {}", SanitizeUtf8(request.out_dir), made.error().message);
  }
  return WithNetnsLab(lab, *io.fs, *io.runner, io.progress, [&](const NetnsLabReach& reach) {
    for (const NetnsHost& h : reach.hosts) options.addresses[h.name] = h.address;
    options.agent = reach.agent;
    options.subnet = reach.subnet;
    options.launcher = NcclLauncher::kMpirun;
    return run(options);
  });
}

}  // namespace

Result<NcclSweepReport> SweepNccl(NcclSweepRequest request, const NcclSweepIo& io) {
  std::optional<NcclSweepReport> out;
  auto ok = WithHosts(
      request, io,
      [](const NcclSweepOptions& o) -> Result<void> {
        if (auto steps = PlanNcclSweep(o); !steps) return tl::unexpected(steps.error());
        return {};
      },
      [&](const NcclSweepOptions& o) -> Result<void> {
        auto report = RunNcclSweep(o, request.out_dir, request.analysis, io);
        if (!report) return tl::unexpected(report.error());
        out = std::move(*report);
        return {};
      });
  if (!ok) return tl::unexpected(ok.error());
  return std::move(*out);
}

namespace {

Result<NcclBadNodeReport> RecordBadNodes(BadNodeVerdict verdict, const NcclSweepOptions& options,
                                         bool interrupted, double tolerance, WallTime started_at,
                                         const NcclSweepIo& io) {
  const size_t hosts = options.hosts.size();
  if (interrupted) {
    // A run cut by Ctrl-C reads as a slow group: nobody is convicted on it.
    verdict.slow.clear();
    verdict.notes.emplace_back("interrupted: no node is named from a search that did not end");
  }
  NcclBadNodeReport report{.verdict = std::move(verdict), .interrupted = interrupted};
  const BadNodeVerdict& v = report.verdict;
  std::vector<Finding> findings;
  for (const SlowNode& slow : v.slow) {
    findings.push_back(
        {.check_id = "network.nccl-bad-node",
         .status = CheckStatus::kFail,
         .severity = Severity::kHigh,
         .message = fmt::format(
             "{}: {} beside {}, seen fast ({}){}", SanitizeUtf8(slow.node),
             slow.busbw_gbs ? fmt::format("{:.2f} GB/s", *slow.busbw_gbs) : "no figure",
             SanitizeUtf8(slow.partner), slow.why,
             v.reference_gbs ? fmt::format("; reference {:.2f} GB/s", *v.reference_gbs) : "")});
  }
  // Clean: every group measured, none slow. Anything else without a node named is said, and
  // scores nothing either way.
  const bool measured =
      !v.measurements.empty() && std::ranges::all_of(v.measurements, [](const GroupMeasurement& m) {
        return m.busbw_gbs.has_value();
      });
  // A pair held against its own figure is no verdict (it was "clean", and scored 1).
  const bool clean = v.judged && measured && v.reference_gbs &&
                     std::ranges::none_of(v.measurements, [&](const GroupMeasurement& m) {
                       return *m.busbw_gbs < *v.reference_gbs * (1 - tolerance);
                     });
  report.clean = clean && v.slow.empty() && !interrupted;
  if (interrupted) {
    findings.push_back({.check_id = "network.nccl-bad-node",
                        .status = CheckStatus::kUnknown,
                        .severity = Severity::kMedium,
                        .message = "interrupted: the search did not finish"});
  } else if (v.slow.empty() && clean) {
    findings.push_back({.check_id = "network.nccl-bad-node",
                        .status = CheckStatus::kPass,
                        .severity = Severity::kHigh,
                        .message = fmt::format("no node of {} drags the group down (reference "
                                               "{:.2f} GB/s)",
                                               hosts, *v.reference_gbs)});
  } else if (v.slow.empty() && !v.judged) {
    findings.push_back({.check_id = "network.nccl-bad-node",
                        .status = CheckStatus::kWarn,
                        .severity = Severity::kMedium,
                        .message = "nothing to judge the figures by: " +
                                   (v.notes.empty() ? std::string("two nodes and no reference")
                                                    : Join(v.notes, "; "))});
  } else if (v.slow.empty()) {
    const bool any = std::ranges::any_of(
        v.measurements, [](const GroupMeasurement& m) { return m.busbw_gbs.has_value(); });
    findings.push_back({.check_id = "network.nccl-bad-node",
                        .status = any ? CheckStatus::kWarn : CheckStatus::kUnknown,
                        .severity = Severity::kMedium,
                        .message = any ? "slow or failed groups, and no single node to name: " +
                                             (v.notes.empty() ? std::string("see the measurements")
                                                              : Join(v.notes, "; "))
                                       : "no group could be measured"});
  }
  std::vector<Metric> metrics;
  if (v.reference_gbs) {
    metrics.push_back(
        {.name = "nccl.bad_node_reference_gbs", .value = *v.reference_gbs, .unit = "GB/s"});
  }
  // Scored only where the search settled it: nodes named, or every group fast.
  if (!interrupted && (!v.slow.empty() || clean)) {
    metrics.push_back(
        {.name = "nccl.slow_nodes", .value = static_cast<double>(v.slow.size()), .unit = "nodes"});
  }
  if (!options.beside_others_jobs.empty()) {
    findings.push_back(BesideOthersJobs(options.beside_others_jobs));
  }
  const std::vector<EvidenceItem> evidence = {
      {"nccl.bad-node",
       BadNodeVerdictJson(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)}};
  auto recorded =
      RecordNcclRun(io.analyze, {.target = fmt::format("nccl bad-node search over {} nodes", hosts),
                                 .started_at = started_at,
                                 .evidence = evidence,
                                 .findings = std::move(findings),
                                 .metrics = std::move(metrics)});
  if (!recorded) return tl::unexpected(recorded.error());
  report.record = std::move(recorded->record);
  report.exit_code = recorded->exit_code;
  return report;
}

}  // namespace

Result<NcclBadNodeReport> FindNcclBadNodes(NcclSweepRequest request, const BadNodeOptions& finder,
                                           const NcclSweepIo& io) {
  const std::string collective = "all_reduce";
  std::optional<NcclBadNodeReport> out;
  auto ok = WithHosts(
      request, io,
      [&](const NcclSweepOptions& o) -> Result<void> {
        if (o.hosts.size() < 2) {
          return Fail(ErrorCode::kInvalidArgument, "the search needs two hosts or more, not {}",
                      o.hosts.size());
        }
        if (o.binaries.empty() && o.cpu_perf.empty()) {
          return Fail(ErrorCode::kInvalidArgument,
                      "neither nccl-tests nor the CPU stand-in to run");
        }
        if (!o.binaries.empty() && !o.binaries.contains(collective)) {
          return Fail(ErrorCode::kNotFound, "no nccl-tests binary for {} ({}_perf)", collective,
                      collective);
        }
        return {};
      },
      [&](const NcclSweepOptions& o) -> Result<void> {
        size_t count = 0;
        bool interrupted = false;
        const WallTime started_at = io.analyze.clock->Now();
        const MeasureGroup measure = [&](const std::vector<std::string>& nodes) {
          GroupMeasurement m{.nodes = nodes};
          if (interrupted || (io.interrupted && io.interrupted())) {
            interrupted = true;
            m.problem = "not run: cmax was interrupted";
            return m;
          }
          const NcclSweepStep step =
              MakeStep(o, collective, "default", nodes,
                       fmt::format("find-{:02}-{}n.log", ++count, nodes.size()));
          int crashes = 0;
          auto r = RunLauncher({.argv = step.argv,
                                .env_add = step.env_add,
                                .timeout = o.step_timeout,
                                .kill_grace = std::chrono::seconds(5),
                                .output_cap = kStepOutputCap},
                               kLauncherCrashRetries, *io.runner, crashes);
          if (!r) {
            m.problem = r.error().message;
          } else {
            (void)io.fs->WriteFileAtomic(request.out_dir + "/" + step.log_name, r->stdout_text,
                                         0644);
            const NcclTestsOutput output = ParseNcclTestsOutput(r->stdout_text);
            if (r->interrupted || (io.interrupted && io.interrupted())) {
              interrupted = true;
              m.problem = "stopped: cmax was interrupted";
            } else if (r->timed_out) {
              m.problem = fmt::format("hung: killed at its {} deadline", Seconds(o.step_timeout));
            } else if (!r->Succeeded()) {
              m.problem = fmt::format("exited {}: {}", r->exit_code, LauncherWhy(r->stderr_text));
            } else if (output.tables.empty() || !output.tables[0].largest_size_busbw_gbs) {
              m.problem = "no busbw at its largest size";
            } else {
              m.busbw_gbs = output.tables[0].largest_size_busbw_gbs;
            }
          }
          if (io.progress) {
            io.progress(
                fmt::format("measured {}: {}", SanitizeUtf8(Join(nodes, ",")),
                            m.busbw_gbs ? fmt::format("{:.2f} GB/s", *m.busbw_gbs) : m.problem));
          }
          return m;
        };
        BadNodeOptions stoppable = finder;
        stoppable.stop = [&] { return interrupted; };
        BadNodeVerdict verdict = FindBadNodes(o.hosts, measure, stoppable);
        auto report =
            RecordBadNodes(std::move(verdict), o, interrupted, finder.tolerance, started_at, io);
        if (!report) return tl::unexpected(report.error());
        out = std::move(*report);
        return {};
      });
  if (!ok) return tl::unexpected(ok.error());
  return std::move(*out);
}

nlohmann::json NcclSweepJson(const NcclSweepReport& report) {
  return {{"schema", "cmax.nccl-sweep/v1"},
          {"steps_planned", report.steps_planned},
          {"interrupted", report.interrupted},
          {"steps", StepsJson(report.steps)},
          {"run_id", report.analyzed.record.run.id},
          {"exit_code", report.analyzed.exit_code},
          {"analysis", NcclAnalysisJson(report.analyzed.analysis)}};
}

nlohmann::json NcclBadNodeJson(const NcclBadNodeReport& report) {
  nlohmann::json out = BadNodeVerdictJson(report.verdict);
  out["interrupted"] = report.interrupted;
  out["run_id"] = report.record.run.id;
  out["exit_code"] = report.exit_code;
  return out;
}

std::string NcclBadNodeText(const NcclBadNodeReport& report) {
  const BadNodeVerdict& v = report.verdict;
  std::string out = fmt::format("NCCL bad-node search: {} run(s){}\n", v.measurements.size(),
                                report.interrupted ? " (interrupted)" : "");
  out += BadNodeVerdictText(v);
  if (report.clean) {
    out += fmt::format("no node drags the group down (reference {:.2f} GB/s)\n",
                       v.reference_gbs.value_or(0));
  } else if (v.slow.empty() && !report.interrupted) {
    out += v.measurements.empty() ? "no group could be measured\n"
                                  : "slow or failed groups, and no single node to name\n";
  }
  return out;
}

std::string NcclSweepText(const NcclSweepReport& report, bool per_size) {
  std::string out = fmt::format("NCCL sweep: {} of {} steps ran{}\n", report.steps.size(),
                                report.steps_planned, report.interrupted ? " (interrupted)" : "");
  for (const NcclStepOutcome& s : report.steps) {
    out += fmt::format("  {:<7} {}  {}\n", s.problem.empty() ? "ok" : "FAILED", StepName(s.step),
                       s.problem.empty() ? Seconds(s.took) : s.problem);
  }
  out += "\n" + NcclAnalysisText(report.analyzed.analysis, per_size);
  return out;
}

}  // namespace cmax::net
