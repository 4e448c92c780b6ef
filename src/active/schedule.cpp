#include "active/schedule.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace cmax::active {
namespace {

constexpr std::string_view kJobName = "cmax-active-check";

std::string Ago(Duration d) {
  const double hours = std::chrono::duration<double>(d).count() / 3600;
  if (hours >= 48) return fmt::format("{:.0f} days ago", hours / 24);
  if (hours >= 1) return fmt::format("{:.0f} h ago", hours);
  return fmt::format("{:.0f} min ago", hours * 60);
}

std::string Every(Duration d) {
  const double days = std::chrono::duration<double>(d).count() / 86400;
  return days >= 1 ? fmt::format("every {:g} day{}", days, days == 1 ? "" : "s")
                   : fmt::format("every {:g} h", days * 24);
}

// Why a node in this state gets no check.
std::string NotIdle(const std::string& state) {
  if (state == "mixed" || state == "allocated" || state == "completing") {
    return state + ": a job runs there";
  }
  if (state.ends_with('*')) return state + ": not responding";
  if (state.ends_with('~') || state.ends_with('#') || state.ends_with('%')) {
    return state + ": powered down or powering";
  }
  return state + ": not idle";
}

// `runs_past_interrupt`: the look and the clean-up a Ctrl-C must not cut short.
Result<sys::ProcessResult> Slurm(const ScheduleIo& io, std::vector<std::string> argv,
                                 bool runs_past_interrupt = false) {
  sys::ProcessSpec spec{.argv = std::move(argv), .env_add = io.slurm_env};
  // sbatch hands the job this environment: the checks record under the provider named here.
  if (!io.provider.empty()) spec.env_add.push_back("CMAX_PROVIDER=" + io.provider);
  spec.timeout = std::chrono::seconds(30);
  spec.runs_past_interrupt = runs_past_interrupt;
  return io.runner->Run(spec);
}

bool Interrupted(const ScheduleIo& io) {
  return io.interrupted && io.interrupted();
}

// Each submitted check's job once: a pair's two nodes share one.
std::vector<std::string> JobIds(const std::vector<ScheduleDecision*>& decisions) {
  std::vector<std::string> ids;
  for (const ScheduleDecision* d : decisions) {
    if (std::ranges::find(ids, d->job_id) == ids.end()) ids.push_back(d->job_id);
  }
  return ids;
}

std::string Said(const sys::ProcessResult& r) {
  return SanitizeUtf8(Trim(r.stderr_text.empty() ? r.stdout_text : r.stderr_text));
}

}  // namespace

Result<std::vector<SlurmNodeState>> ParseSinfoNodeStates(std::string_view text) {
  std::vector<SlurmNodeState> out;
  int number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++number;
    line = Trim(line);
    if (line.empty()) continue;
    const size_t bar = line.find('|');
    if (bar == std::string_view::npos || bar == 0 || bar + 1 >= line.size()) {
      return Fail(ErrorCode::kCorrupt, "sinfo's line {} is not NODE|STATE: {}", number,
                  SanitizeUtf8(line.substr(0, 80)));
    }
    std::string_view state = line.substr(bar + 1);
    std::string_view gres;
    if (const size_t second = state.find('|'); second != std::string_view::npos) {
      gres = state.substr(second + 1);
      state = state.substr(0, second);
    }
    if (Trim(state).empty()) {
      return Fail(ErrorCode::kCorrupt, "sinfo's line {} has no state: {}", number,
                  SanitizeUtf8(line.substr(0, 80)));
    }
    SlurmNodeState s{.node = std::string(Trim(line.substr(0, bar))),
                     .state = std::string(Trim(state)),
                     .gpus = GpusInGres(gres)};
    if (std::ranges::none_of(out, [&](const SlurmNodeState& o) { return o.node == s.node; })) {
      out.push_back(std::move(s));
    }
  }
  return out;
}

int GpusInGres(std::string_view gres) {
  int total = 0;
  int depth = 0;  // entries are split at commas outside parentheses: "(S:0,2)" is one's
  size_t start = 0;
  for (size_t i = 0; i <= gres.size(); ++i) {
    const char c = i < gres.size() ? gres[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c != ',' || depth > 0) continue;
    std::string_view entry = Trim(gres.substr(start, i - start));
    start = i + 1;
    entry = entry.substr(0, entry.find('('));
    if (!entry.starts_with("gpu:")) continue;
    const std::string_view count = entry.substr(entry.rfind(':') + 1);
    if (const auto n = ParseWhole<int>(count); n && *n > 0 && *n <= 4096) total += *n;
  }
  return total;
}

std::vector<ScheduleDecision> PlanActiveChecks(const std::vector<SlurmNodeState>& nodes,
                                               const std::map<std::string, LastCheck>& last_check,
                                               WallTime now, Duration every) {
  std::vector<ScheduleDecision> out;
  for (const SlurmNodeState& n : nodes) {
    ScheduleDecision d{.node = n.node, .state = n.state, .gpus = n.gpus};
    if (const auto it = last_check.find(n.node); it != last_check.end()) d.last_check = it->second;
    const std::string last =
        d.last_check ? "last checked " + Ago(now - d.last_check->at) : "never checked";
    if (n.state != "idle") {
      d.why = NotIdle(n.state);
    } else if (d.last_check && now - d.last_check->at < every) {
      d.why = fmt::format("idle; {} ({})", last, Every(every));
    } else {
      d.submit = true;
      d.why = "idle; " + last;
    }
    out.push_back(std::move(d));
  }
  // The longest unchecked first: never checked, then oldest; then by name.
  std::stable_sort(out.begin(), out.end(),
                   [](const ScheduleDecision& a, const ScheduleDecision& b) {
                     if (a.submit != b.submit) return a.submit;
                     if (a.last_check.has_value() != b.last_check.has_value())
                       return !a.last_check.has_value();
                     if (a.last_check && a.last_check->at != b.last_check->at) {
                       return a.last_check->at < b.last_check->at;
                     }
                     return a.node < b.node;
                   });
  return out;
}

void PairDueNodes(std::vector<ScheduleDecision>& plan) {
  // The plan lists the due nodes first: pair them in that order (the longest unchecked first).
  size_t due = 0;
  while (due < plan.size() && plan[due].submit) ++due;
  for (size_t i = 0; i + 1 < due; i += 2) {
    plan[i].peer = plan[i + 1].node;
    plan[i + 1].peer = plan[i].node;
  }
}

namespace {

// Where the jobs' output goes: --log-dir, else active-checks/ beside the store.
std::string LogDir(const ScheduleOptions& options, const ScheduleIo& io) {
  return options.log_dir.empty() ? store::BesideStore(io.db_path, "active-checks")
                                 : options.log_dir;
}

// `cmax health --active` for `node` as a shell line (`peer`: its rails tested against that one).
std::string CheckLine(const std::string& node, const std::string& peer,
                      const ScheduleOptions& options, const ScheduleIo& io) {
  std::vector<std::string> check = {ShellQuote(io.cmax_binary),
                                    "health",
                                    "--active",
                                    "--level",
                                    options.level == ActiveLevel::kFull ? "full" : "quick",
                                    "--node",
                                    ShellQuote(node),
                                    "--db",
                                    ShellQuote(io.db_path)};
  if (!peer.empty()) check.insert(check.end(), {"--peer", ShellQuote(peer)});
  if (options.burn_s) check.insert(check.end(), {"--burn", fmt::format("{:g}", *options.burn_s)});
  if (options.deadline_s) {
    check.insert(check.end(), {"--deadline", fmt::format("{:g}", *options.deadline_s)});
  }
  for (const std::string& arg : options.check_args) check.push_back(ShellQuote(arg));
  return Join(check, " ");
}

std::vector<std::string> JobArgv(const std::string& nodes, const std::string& log_name, bool pair,
                                 const ScheduleOptions& options, const ScheduleIo& io) {
  const std::string log_dir = LogDir(options, io);
  std::vector<std::string> argv = {"sbatch",
                                   "--parsable",
                                   "--exclusive",
                                   "--nodelist=" + nodes,
                                   fmt::format("--nice={}", options.nice),
                                   "--job-name=" + std::string(kJobName),
                                   "--output=" + log_dir + "/" + log_name + "-%j.out"};
  if (!options.partition.empty()) argv.push_back("--partition=" + options.partition);
  if (const int64_t minutes = ActiveCheckJobMinutes(options, pair); minutes > 0) {
    argv.push_back(fmt::format("--time={}", minutes));
  }
  return argv;
}

int64_t LongestCheckMinutes(const ScheduleOptions& options, bool pair) {
  ActiveRunOptions check{.level = options.level,
                         .deadline_s = options.deadline_s.value_or(0),
                         .burn_s = options.burn_s};
  if (pair) check.ib_pair = IbPairOptions{};
  const Duration longest = LongestActiveRun(check) * (pair ? 2 : 1);
  return std::chrono::ceil<std::chrono::minutes>(longest).count();
}

}  // namespace

int64_t ActiveCheckJobMinutes(const ScheduleOptions& options, bool pair) {
  if (options.time_limit_min) return *options.time_limit_min;
  const int64_t longest = LongestCheckMinutes(options, pair);
  return options.partition_limit_min && *options.partition_limit_min > 0
             ? std::min(longest, *options.partition_limit_min)
             : longest;
}

std::optional<int64_t> ParseSlurmTimeLimit(std::string_view text) {
  text = Trim(text);
  // Slurm's forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
  std::optional<int64_t> days;
  if (const size_t dash = text.find('-'); dash != std::string_view::npos) {
    days = ParseWhole<int64_t>(text.substr(0, dash));
    if (!days || *days > 100000000) return std::nullopt;  // sinfo's are minutes in 32 bits
    text = text.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  for (std::string_view part : Split(text, ':')) {
    const auto n = ParseWhole<int64_t>(part);
    if (!n || *n < 0 || *n > 100000000) return std::nullopt;
    parts.push_back(*n);
  }
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  if (days) return *days * 24 * 60 + parts[0] * 60 + (parts.size() > 1 ? parts[1] : 0);
  return parts.size() < 3 ? parts[0] : parts[0] * 60 + parts[1];  // M or M:S; H:M:S
}

std::optional<int64_t> PartitionTimeLimit(std::string_view sinfo_text, std::string_view partition) {
  for (std::string_view line : Split(sinfo_text, '\n')) {
    const size_t bar = line.find('|');
    if (bar == std::string_view::npos) continue;
    std::string_view name = Trim(line.substr(0, bar));
    const bool is_default = name.ends_with('*');
    if (is_default) name.remove_suffix(1);
    if (partition.empty() ? is_default : name == partition) {
      return ParseSlurmTimeLimit(line.substr(bar + 1));
    }
  }
  return std::nullopt;
}

std::vector<std::string> ActiveCheckJob(const ScheduleDecision& node,
                                        const ScheduleOptions& options, const ScheduleIo& io) {
  std::vector<std::string> argv = JobArgv(node.node, node.node, false, options, io);
  // A whole-node job holds the GPUs only implicitly, and Slurm hands a job's steps only the
  // generic resources it asked for: asked for here, by count.
  if (node.gpus > 0) argv.push_back(fmt::format("--gres=gpu:{}", node.gpus));
  argv.emplace_back("--wrap");
  argv.push_back(CheckLine(node.node, "", options, io));
  return argv;
}

std::vector<std::string> ActiveCheckPairJob(const ScheduleDecision& a, const ScheduleDecision& b,
                                            const ScheduleOptions& options, const ScheduleIo& io) {
  std::vector<std::string> argv =
      JobArgv(a.node + "," + b.node, a.node + "+" + b.node, true, options, io);
  argv.insert(argv.begin() + 3, "--nodes=2");
  // The job's --gres is per node: given where the two count alike; each step asks for its
  // node's own in any case.
  if (a.gpus > 0 && a.gpus == b.gpus) argv.push_back(fmt::format("--gres=gpu:{}", a.gpus));
  // Each node's check as a step on that node; ';': the second runs whatever the first found.
  const auto step = [&](const ScheduleDecision& node, const ScheduleDecision& peer) {
    return "srun --nodes=1 --ntasks=1 " + ShellQuote("--nodelist=" + node.node) + " " +
           (node.gpus > 0 ? fmt::format("--gres=gpu:{} ", node.gpus) : std::string()) +
           CheckLine(node.node, peer.node, options, io);
  };
  argv.emplace_back("--wrap");
  argv.push_back(step(a, b) + "; " + step(b, a));
  return argv;
}

Result<ScheduleReport> ScheduleActiveChecks(const ScheduleOptions& asked,
                                            const ScheduleIo& asked_io) {
  ScheduleOptions options = asked;
  ScheduleIo io = asked_io;
  if (io.provider.empty()) io.provider = sys::GetEnv("CMAX_PROVIDER");
  std::vector<std::string> sinfo = {"sinfo", "-h", "-N", "-o", "%N|%T|%G"};
  if (!options.partition.empty()) sinfo.push_back("--partition=" + options.partition);
  if (!options.nodes.empty()) sinfo.push_back("--nodes=" + Join(options.nodes, ","));
  auto listed = Slurm(io, sinfo);
  if (!listed) return Fail(ErrorCode::kUnavailable, "sinfo: {}", listed.error().message);
  if (!listed->Succeeded()) {
    return Fail(ErrorCode::kUnavailable, "sinfo: {}: {}", listed->Describe(), Said(*listed));
  }
  auto nodes = ParseSinfoNodeStates(listed->stdout_text);
  if (!nodes) return tl::unexpected(nodes.error());
  // The partition's own limit, which no job may ask past; a Slurm that does not say leaves the
  // bound as it is.
  std::vector<std::string> limits = {"sinfo", "-h", "-o", "%P|%l"};
  if (!options.partition.empty()) limits.push_back("--partition=" + options.partition);
  if (auto said = Slurm(io, limits); said && said->Succeeded()) {
    options.partition_limit_min = PartitionTimeLimit(said->stdout_text, options.partition);
  }

  auto store = store::Store::Open({.path = io.db_path});
  if (!store) return tl::unexpected(store.error());
  auto latest = store->LatestRunByHost("health", "active checks", io.provider);
  if (!latest) return tl::unexpected(latest.error());
  std::map<std::string, LastCheck> last;
  for (const auto& [host, run] : *latest) {
    if (options.not_before && run.run.started_at < *options.not_before) continue;
    last[host] = {.at = run.run.started_at, .run_id = run.run.id, .counts = run.counts};
  }

  ScheduleReport report;
  const WallTime started = io.clock->Now();
  report.decisions = PlanActiveChecks(*nodes, last, started, options.every);
  if (options.pairs) PairDueNodes(report.decisions);
  report.fleet = ViewFleet(report.decisions, started, options.every);
  report.job_minutes = ActiveCheckJobMinutes(options, false);
  if (options.pairs) report.pair_job_minutes = ActiveCheckJobMinutes(options, true);
  if (!options.time_limit_min &&
      ActiveCheckJobMinutes(options, options.pairs) < LongestCheckMinutes(options, options.pairs)) {
    report.cut_to_partition_limit = options.partition_limit_min;
  }
  if (options.dry_run) return report;

  const std::string log_dir = LogDir(options, io);
  std::error_code ignored;
  std::filesystem::create_directories(log_dir, ignored);
  std::vector<ScheduleDecision*> pending;
  for (size_t i = 0; i < report.decisions.size(); ++i) {
    ScheduleDecision& first = report.decisions[i];
    if (!first.submit) continue;
    if (!options.submit) {
      first.outcome = "not submitted: this pass records the fleet's view only";
      continue;
    }
    if (Interrupted(io)) {
      first.outcome = "not submitted: interrupted";
      continue;
    }
    // A pair's second node (PairDueNodes put it right after the first) goes in the first's job.
    std::vector<ScheduleDecision*> job = {&first};
    if (!first.peer.empty()) job.push_back(&report.decisions[++i]);
    auto submitted = Slurm(io, job.size() == 2 ? ActiveCheckPairJob(*job[0], *job[1], options, io)
                                               : ActiveCheckJob(*job[0], options, io));
    for (ScheduleDecision* d : job) {
      if (!submitted || !submitted->Succeeded()) {
        d->outcome =
            "not submitted: " + (submitted ? submitted->Describe() + ": " + Said(*submitted)
                                           : submitted.error().message);
        continue;
      }
      // --parsable: "ID" or "ID;CLUSTER".
      const std::string out(Trim(submitted->stdout_text));
      d->job_id = out.substr(0, out.find(';'));
      ++report.submitted;
      pending.push_back(d);
    }
  }

  // Each check must start soon: one still pending means the node got a job meanwhile (or
  // cannot be had whole), and a check never waits in a tenant's way.
  const WallTime give_up =
      io.clock->Now() + std::chrono::duration_cast<std::chrono::milliseconds>(options.start_within);
  std::string unseen;  // why the last look at the queue failed; empty when it answered
  std::optional<sys::LeftBehind> left;  // while checks wait: a second Ctrl-C leaves them queued
  if (!pending.empty()) {
    left.emplace("the active checks still waiting to start: scancel --state=PENDING " +
                 Join(JobIds(pending), " "));
  }
  while (!pending.empty()) {
    // After Ctrl-C: one more look (which the interrupt must not cut short), then the checks
    // still waiting are cancelled; the ones running go on and record.
    const bool interrupted = Interrupted(io);
    auto queue = Slurm(io, {"squeue", "-h", "-j", Join(JobIds(pending), ","), "-o", "%i|%T|%r"},
                       interrupted);
    // Cut short by an interrupt that came while it ran: asked again, past it.
    if (!interrupted && Interrupted(io)) continue;
    std::map<std::string, std::string> waiting;  // job id -> Slurm's reason
    // A look that failed says nothing: every check is still waiting as far as anyone knows,
    // and one never said to have started is cancelled at the deadline, not left to queue.
    const bool looked = queue && queue->Succeeded();
    if (looked) {
      unseen.clear();
      for (std::string_view line : SplitLines(queue->stdout_text)) {
        const std::vector<std::string_view> f = Split(Trim(line), '|');
        if (f.size() == 3 && f[1] == "PENDING") waiting[std::string(f[0])] = std::string(f[2]);
      }
    } else {
      unseen =
          "squeue: " + (queue ? queue->Describe() + ": " + Said(*queue) : queue.error().message);
    }
    std::vector<ScheduleDecision*> still;
    for (ScheduleDecision* d : pending) {
      if (!looked || waiting.contains(d->job_id)) {
        still.push_back(d);
      } else {
        d->outcome = "started";
        ++report.started;
      }
    }
    pending = std::move(still);
    if (pending.empty()) break;
    if (interrupted || io.clock->Now() >= give_up) {
      std::map<std::string, bool> cancelled;  // job id -> scancel succeeded (a pair shares one)
      for (ScheduleDecision* d : pending) {
        // Only while it waits: one that started since the last look (or that a failed look
        // could not see start) goes on and records.
        if (!cancelled.contains(d->job_id)) {
          auto run = Slurm(io, {"scancel", "--state=PENDING", d->job_id}, true);
          cancelled[d->job_id] = run && run->Succeeded();
        }
        const std::string not_cancelled =
            cancelled[d->job_id]
                ? ""
                : "; scancel failed, cancel job " + d->job_id + " by hand if it still waits";
        const std::string within = FormatDuration(options.start_within);
        if (!unseen.empty()) {
          const std::string unknown =
              fmt::format(" (Slurm could not say whether it started: {})", unseen);
          d->outcome = "cancelled if it still waited: " +
                       (interrupted ? "interrupted" : "not seen to start within " + within) +
                       unknown + not_cancelled;
        } else if (interrupted) {
          d->outcome = "cancelled: interrupted before it started" + not_cancelled;
        } else {
          d->outcome = fmt::format(
              "cancelled: it did not start within {} ({}); the node{} busy or cannot be had "
              "whole{}",
              within, waiting[d->job_id],
              d->peer.empty() ? " is" : " or its pair " + d->peer + " is", not_cancelled);
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // Slurm's pace, not a test's
  }
  left.reset();
  if (Interrupted(io)) {
    std::vector<std::string> said;
    for (const ScheduleDecision& d : report.decisions) {
      if (d.submit)
        said.push_back(d.node + ": " + (d.job_id.empty() ? "" : "job " + d.job_id + " ") +
                       d.outcome);
    }
    return Fail(ErrorCode::kInterrupted, "interrupted; nothing recorded ({})", Join(said, "; "));
  }
  if (options.submit && report.submitted == 0 &&
      std::ranges::any_of(report.decisions, [](const ScheduleDecision& d) { return d.submit; })) {
    return Fail(ErrorCode::kUnavailable, "no check could be submitted: {}",
                report.decisions.front().outcome);
  }
  nlohmann::json submitted = nlohmann::json::array();
  for (const ScheduleDecision& d : report.decisions) {
    if (d.job_id.empty()) continue;
    nlohmann::json job = {{"node", d.node}, {"job", d.job_id}, {"outcome", d.outcome}};
    if (!d.peer.empty()) job["peer"] = d.peer;
    submitted.push_back(std::move(job));
  }
  auto recorded = store::RecordWholeRun(
      io.db_path,
      {.command = "health",
       .target = "active schedule",
       .host = io.host,
       .started_at = started,
       .cmax_version = io.cmax_version,
       .provider = io.provider},
      {{"active.fleet", report.fleet.evidence_json},
       {"active.submitted",
        submitted.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)},
       {"active.every_days",
        nlohmann::json(std::chrono::duration<double>(options.every).count() / 86400).dump()}},
      {report.fleet.finding}, report.fleet.metrics, io.clock->Now());
  if (!recorded) return tl::unexpected(recorded.error());
  report.run_id = recorded->record.run.id;
  report.exit_code = recorded->exit_code;
  return report;
}

namespace {
bool Exercised(const StatusCounts& c) {
  return c.pass + c.warn + c.fail + c.unknown > 0;
}
}  // namespace

FleetView ViewFleet(const std::vector<ScheduleDecision>& decisions, WallTime now, Duration every) {
  FleetView view;
  nlohmann::json rows = nlohmann::json::array();
  int nodes = 0;
  int recent = 0;
  int checked = 0;
  int passed = 0;
  double oldest_days = -1;
  std::vector<std::string> failed;
  std::vector<std::string> overdue;
  std::vector<std::string> skipped_only;
  for (const ScheduleDecision& d : decisions) {
    ++nodes;
    nlohmann::json row = {{"node", d.node}, {"state", d.state}, {"last_check", nullptr}};
    const double age_days =
        d.last_check ? std::chrono::duration<double>(now - d.last_check->at).count() / 86400 : 0;
    if (d.last_check) {
      row["last_check"] = FormatIso8601(d.last_check->at);
      row["age_days"] = age_days;
      row["run"] = d.last_check->run_id;
      row["pass"] = d.last_check->counts.pass;
      row["warn"] = d.last_check->counts.warn;
      row["fail"] = d.last_check->counts.fail;
      row["unknown"] = d.last_check->counts.unknown;
      row["skip"] = d.last_check->counts.skip;
    }
    // A check whose every part was skipped (no GPU tool there, no CUDA) exercised nothing: the
    // node counts as unchecked, never as passed.
    const bool exercised = d.last_check && Exercised(d.last_check->counts);
    if (exercised) {
      ++checked;
      oldest_days = std::max(oldest_days, age_days);
      if (d.last_check->counts.fail > 0) {
        failed.push_back(d.node);
      } else {
        ++passed;
      }
      if (now - d.last_check->at < every) ++recent;
    } else if (d.last_check) {
      skipped_only.push_back(d.node);
    }
    const bool late = !exercised || now - d.last_check->at >= every;
    if (late) overdue.push_back(d.node);
    row["exercised"] = exercised;
    row["overdue"] = late;
    row["decision"] = d.submit ? "check" : "skip";
    row["why"] = d.why;
    rows.push_back(std::move(row));
  }
  view.evidence_json = rows.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const auto metric = [&](const char* name, double value, const char* unit) {
    view.metrics.push_back({.name = name, .value = value, .unit = unit});
  };
  if (nodes > 0) metric("active.fleet_checked_share", static_cast<double>(recent) / nodes, "ratio");
  if (checked > 0) {
    metric("active.fleet_pass_share", static_cast<double>(passed) / checked, "ratio");
    metric("active.fleet_oldest_check_days", oldest_days, "days");
  }
  metric("active.fleet_nodes", nodes, "nodes");
  const auto some = [](const std::vector<std::string>& names) {
    constexpr size_t kMost = 10;
    std::vector<std::string> shown(
        names.begin(), names.begin() + static_cast<long>(std::min(names.size(), kMost)));
    return Join(shown, ", ") +
           (names.size() > kMost ? fmt::format(" and {} more", names.size() - kMost) : "");
  };
  Finding& f = view.finding;
  f.check_id = "active.fleet";
  f.observed = fmt::format("{} of {} node{} checked {}; {} of {} checked passed", recent, nodes,
                           nodes == 1 ? "" : "s", Every(every), passed, checked);
  f.expected = "every node checked " + Every(every) + ", every latest check passed";
  if (!failed.empty()) {
    f.status = CheckStatus::kFail;
    f.severity = Severity::kHigh;
    f.message = fmt::format("latest active check failed on {}", some(failed));
    f.remediation =
        "Read each node's latest `cmax health --active` run (cmax db runs); the "
        "node conditions active/<check> are what remediation acts on.";
  } else if (!overdue.empty()) {
    f.status = CheckStatus::kWarn;
    f.severity = Severity::kMedium;
    f.message = fmt::format("not checked {}: {}", Every(every), some(overdue));
    f.remediation =
        "Run `cmax health schedule` daily; a node that is never idle is never "
        "checked: give it a maintenance window.";
    if (!skipped_only.empty()) {
      f.message += fmt::format(" (the latest check skipped every part on {})", some(skipped_only));
      f.remediation +=
          " A check that skipped every part found no GPU or none of its tools (NVML, "
          "dcgmi, nvbandwidth, CUDA): install them, or leave such nodes out (--nodes, "
          "--partition).";
    }
  } else {
    f.status = CheckStatus::kPass;
    f.message = f.observed;
  }
  return view;
}

std::string ScheduleText(const ScheduleReport& report, bool dry_run) {
  std::string out;
  size_t width = 4;
  for (const ScheduleDecision& d : report.decisions) width = std::max(width, d.node.size());
  for (const ScheduleDecision& d : report.decisions) {
    std::string what;
    if (!d.submit) {
      what = "skipped: " + d.why;
    } else if (dry_run) {
      what = "would check" + (d.peer.empty() ? "" : " with " + d.peer) + ": " + d.why;
    } else if (d.job_id.empty()) {
      what = d.outcome + " (" + d.why + ")";
    } else {
      what = fmt::format("job {} {}{} ({})", d.job_id, d.outcome,
                         d.peer.empty() ? "" : ", with " + d.peer, d.why);
    }
    // Node names, states and job ids come from Slurm's programs: shown, never obeyed.
    out += fmt::format("{:<{}}  {}\n", AsOneLine(d.node), width, AsOneLine(what));
  }
  if (report.decisions.empty()) out += "no node listed\n";
  if (std::ranges::any_of(report.decisions, [](const ScheduleDecision& d) { return d.submit; })) {
    const auto limit = [](int64_t minutes) {
      return minutes > 0 ? fmt::format("{} min", minutes) : std::string("none");
    };
    out += fmt::format("time limit (sbatch --time): {}{}{}\n", limit(report.job_minutes),
                       report.pair_job_minutes
                           ? fmt::format(" a node, {} a pair", limit(*report.pair_job_minutes))
                           : "",
                       report.cut_to_partition_limit
                           ? fmt::format(" (the partition's limit, {} min, is shorter than a "
                                         "check can take: a check may be stopped there)",
                                         *report.cut_to_partition_limit)
                           : "");
  }
  if (!dry_run) {
    out += fmt::format("{} check{} submitted, {} started\n", report.submitted,
                       report.submitted == 1 ? "" : "s", report.started);
  }
  out += fmt::format("{} {}: {}\n", StatusName(report.fleet.finding.status),
                     report.fleet.finding.check_id, AsOneLine(report.fleet.finding.message));
  return out;
}

}  // namespace cmax::active
