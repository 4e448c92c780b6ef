#include "audit/slurm_audit.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <set>

#include "audit/fanout.hpp"
#include "audit/grading.hpp"
#include "audit/local_evidence.hpp"
#include "core/json_read.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "remediate/slurm.hpp"
#include "sys/host.hpp"
#include "sys/host_root.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// A node's exit code when its deadline struck (timeout(1)'s).
constexpr int kDeadlineExit = 124;
// What a node's evidence may take in srun's merged output; the step's capture grows with it.
constexpr size_t kOutputPerNode = size_t{256} << 10;
// How far a node's clock may run behind the controller's before its task timing is not trusted.
constexpr double kClockSlack = 2.0;

bool Positive(double seconds) {
  return std::isfinite(seconds) && seconds > 0;
}

// The last non-blank line of a program's stderr, for a reason on one line.
std::string LastLine(std::string_view text) {
  std::string_view last;
  for (std::string_view line : Split(text, '\n')) {
    if (!Trim(line).empty()) last = Trim(line);
  }
  return SanitizeUtf8(last.substr(0, 300));
}

// The lines of a program's output that hold something, trimmed (one host name each).
std::vector<std::string> NonBlankLines(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : Split(text, '\n')) {
    if (!Trim(line).empty()) out.emplace_back(Trim(line));
  }
  return out;
}

// The node's name as its scheduler knows it: Slurm's in a job step, the pod's spec.nodeName in
// a Kubernetes audit pod (audit/kube_pods.hpp), else the host's name.
std::string NodeName(const AuditIo& io) {
  for (const char* variable : {"SLURMD_NODENAME", "CMAX_NODE_NAME"}) {
    if (std::string name = io.env ? io.env(variable) : ""; !name.empty()) return name;
  }
  return sys::Hostname();
}

// Whether a user can ssh from this node to the next of the audit's job (the last to the
// first), while the job holds both, so that pam_slurm_adopt lets it in as it would a user's own.
// Batch mode: no password or passphrase prompt; host keys must be known already, and none is
// written (StrictHostKeyChecking=yes, UpdateHostKeys=no). Null for a job of one node.
json SshToNextNode(const std::string& self, const AuditIo& io) {
  const std::string nodelist = io.env ? io.env("SLURM_JOB_NODELIST") : "";
  const auto scontrol = FindProgram(*io.fs, io.path, "scontrol");
  if (nodelist.empty() || !scontrol) {
    return {
        {"to", nullptr}, {"ok", nullptr}, {"detail", "the job's node list cannot be read here"}};
  }
  // Expanded here, by scontrol itself: no message to the controller.
  auto names = io.runner->Run({.argv = {*scontrol, "show", "hostnames", nodelist},
                               .env_add = {"LC_ALL=C"},
                               .timeout = std::chrono::seconds(5)});
  if (!names || !names->Succeeded()) {
    return {{"to", nullptr}, {"ok", nullptr}, {"detail", "scontrol show hostnames failed"}};
  }
  const std::vector<std::string> listed = NonBlankLines(names->stdout_text);
  if (listed.size() == 1 && listed.front() == self) return nullptr;  // alone in its job
  const std::optional<std::string> next = NextNode(names->stdout_text, self);
  if (!next) {
    return {{"to", nullptr},
            {"ok", nullptr},
            {"detail", "this node is not in its job's node list as " + SanitizeUtf8(self)}};
  }
  const auto ssh = FindProgram(*io.fs, io.path, "ssh");
  if (!ssh) return {{"to", *next}, {"ok", false}, {"detail", "no ssh client on this node"}};
  auto ran = io.runner->Run({.argv = {*ssh,
                                      "-n",
                                      "-T",
                                      "-o",
                                      "BatchMode=yes",
                                      "-o",
                                      "ConnectTimeout=5",
                                      "-o",
                                      "StrictHostKeyChecking=yes",
                                      "-o",
                                      "UpdateHostKeys=no",
                                      "-o",
                                      "CheckHostIP=no",
                                      "-o",
                                      "ControlMaster=no",
                                      "-o",
                                      "ControlPath=none",
                                      "--",
                                      *next,
                                      "hostname"},
                             .env_add = {"LC_ALL=C"},
                             .timeout = std::chrono::seconds(10)});
  if (!ran) return {{"to", *next}, {"ok", nullptr}, {"detail", ran.error().message}};
  const bool ok = ran->Succeeded();
  return {{"to", *next},
          {"ok", ok},
          {"detail", ok               ? ""
                     : ran->timed_out ? "no answer in 10 s"
                                      : LastLine(ran->stderr_text)}};
}

// Every node's findings graded on no evidence, with the reason it has none.
NodeFindings Unreached(const PreparedAudit& prepared, const GradeContext& context,
                       const std::string& node, const std::string& reason) {
  return {node, UnreachableNodeFindings(GradeChecks(prepared.checks, {}, context), reason)};
}

// One srun step over `nodes`: each node's evidence document, and in `problems` why each node
// that gave none did not.
std::map<std::string, json> RunStep(const std::string& partition,
                                    const std::vector<std::string>& nodes,
                                    const AuditOptions& options, const SlurmAuditOptions& slurm,
                                    const std::string& cmax, double budget_s, const AuditIo& io,
                                    std::map<std::string, std::string>& problems) {
  std::map<std::string, json> documents;
  if (budget_s <= 0) {
    for (const std::string& node : nodes) {
      problems[node] =
          fmt::format("the budget of {} s (--budget) was spent before its step", slurm.budget_s);
    }
    return documents;
  }
  const std::vector<std::string> argv = SrunCommand(partition, nodes, options, slurm, cmax);
  log::Info("auditing {} node(s): {}", nodes.size(), Join(argv, " "));
  if (io.note) {
    io.note(fmt::format("auditing {} node(s){} through srun ...", nodes.size(),
                        partition.empty() ? "" : " of partition " + partition));
  }
  sys::ProcessSpec spec{.argv = argv, .timeout = SecondsAsDuration(budget_s)};
  spec.kill_grace = std::chrono::seconds(5);  // srun cancels its step on SIGTERM
  spec.output_cap = kOutputPerNode * (nodes.size() + 1);
  auto ran = io.runner->Run(spec);
  std::map<std::string, NodeDocument> heard;
  std::string step_problem;
  if (!ran) {
    step_problem = "srun could not run: " + ran.error().message;
  } else {
    heard = ReadFrames(ran->stdout_text);
    if (ran->stdout_truncated) {
      step_problem =
          fmt::format("srun's output passed the {} MiB kept for this step", spec.output_cap >> 20);
    } else if (ran->timed_out) {
      step_problem = fmt::format("the step passed the budget of {} s (--budget)", slurm.budget_s);
    } else if (!ran->Succeeded()) {
      step_problem = fmt::format("srun {}: {}", ran->Describe(), LastLine(ran->stderr_text));
    }
  }
  for (const std::string& node : nodes) {
    const auto it = heard.find(node);
    std::string& reason = problems[node];
    if (it == heard.end()) {
      reason = !step_problem.empty() ? step_problem
               : heard.empty()       ? "it sent no evidence"
                                     : "it sent no evidence under its Slurm name";
    } else if (auto document = UsableNodeDocument(std::move(it->second)); !document) {
      reason = document.error().message;
    } else {
      problems.erase(node);
      documents[node] = std::move(*document);
    }
  }
  return documents;
}

}  // namespace

std::vector<std::string> SlurmNodePlan::ReachableNodes() const {
  std::vector<std::string> all;
  for (const auto& [partition, nodes] : steps) all.insert(all.end(), nodes.begin(), nodes.end());
  return all;
}

SlurmNodePlan PlanSlurmNodes(const std::vector<remediate::SchedulerNode>& nodes,
                             const std::string& partition) {
  SlurmNodePlan plan;
  for (const remediate::SchedulerNode& n : nodes) {
    std::string why;
    if (!n.responding) {
      why = "Slurm says it is not responding";
    } else if (n.powered_down) {
      why = "powered down by Slurm's power saving";
    } else if (n.OutOfService()) {
      why = fmt::format("out of service ({}{})", n.state,
                        n.ServiceReason().empty() ? "" : ": " + n.ServiceReason());
    } else if (n.state != "idle" && n.state != "mixed") {
      why = fmt::format("cannot take a job step now ({})", n.state);
    }
    if (!why.empty()) {
      plan.unreachable[n.name] = SanitizeUtf8(why);
      continue;
    }
    // A job runs in one partition: the node goes with the first one asked for that it is in
    // (or its own first, when none was asked for).
    std::string step = n.partitions.empty() ? "" : n.partitions.front();
    if (!partition.empty()) {
      step = std::string(Trim(Split(partition, ',').front()));
      for (std::string_view asked : Split(partition, ',')) {
        if (std::ranges::find(n.partitions, Trim(asked)) != n.partitions.end()) {
          step = std::string(Trim(asked));
          break;
        }
      }
    }
    plan.steps[step].push_back(n.name);
  }
  return plan;
}

std::vector<std::string> SrunCommand(const std::string& partition,
                                     const std::vector<std::string>& nodes,
                                     const AuditOptions& options, const SlurmAuditOptions& slurm,
                                     const std::string& cmax) {
  const size_t n = nodes.size();
  // --immediate: a node that cannot be had at once is not waited for (and the budget is not
  // spent in a queue); whole seconds, at least one.
  const auto immediate = static_cast<long>(std::clamp(slurm.budget_s / 4, 1.0, 30.0));
  std::vector<std::string> argv = {
      "srun",
      "--job-name=cmax-audit",
      fmt::format("--nodes={}", n),
      fmt::format("--ntasks={}", n),
      "--ntasks-per-node=1",
      fmt::format("--nodelist={}", Join(nodes, ",")),
      fmt::format("--immediate={}", immediate),
      "--kill-on-bad-exit=0",  // one node's failure ends only its own task
      "--quiet",
      // srun exports the auditor's environment; the variables a node's evidence reads must be
      // the node's and the step's own (Slurm sets CUDA_VISIBLE_DEVICES for a step with GPUs),
      // not the auditor's shell's.
      "--export=ALL,CUDA_VISIBLE_DEVICES=,NVIDIA_VISIBLE_DEVICES=,NCCL_IB_QPS_PER_CONNECTION=,"
      "NCCL_TOPO_FILE=,NCCL_IB_HCA=,NCCL_SOCKET_IFNAME=",
  };
  if (!partition.empty()) argv.push_back("--partition=" + partition);
  argv.insert(argv.end(), slurm.srun_args.begin(), slurm.srun_args.end());
  argv.insert(argv.end(), {"--", cmax});
  for (std::string& arg : NodeEvidenceArgs(options, slurm.node_timeout_s)) {
    argv.push_back(std::move(arg));
  }
  return argv;
}

std::vector<std::string> NodeEvidenceArgs(const AuditOptions& options, double node_timeout_s) {
  std::vector<std::string> args = {"audit", "--node-evidence",
                                   fmt::format("--node-timeout={}", node_timeout_s),
                                   fmt::format("--probe-timeout={}", options.probe_timeout_s)};
  if (!options.host_root.empty()) args.push_back("--host-root=" + options.host_root);
  // The profile, so that a node takes only the side effects of the checks asked for.
  if (!options.profile.empty()) args.push_back(options.profile);
  const SideEffectOptions& side = options.side_effects;
  if (side.allowed) args.emplace_back("--allow-side-effects");
  if (side.allowed && side.force) args.emplace_back("--force");
  if (side.allowed && !side.egress_target.empty()) {
    args.push_back("--egress-target=" + side.egress_target);
  }
  return args;
}

Result<std::string> NodeEvidenceFrames(const AuditOptions& options, double node_timeout_s,
                                       const AuditIo& own_io) {
  if (!Positive(node_timeout_s) || !Positive(options.probe_timeout_s)) {
    return Fail(ErrorCode::kInvalidArgument, "--node-timeout and --probe-timeout must be > 0");
  }
  // In an audit pod the host is read through its root: files below it, programs chrooted.
  HostRootView view;
  auto through = ThroughHostRoot(options.host_root, own_io, view);
  if (!through) return tl::unexpected(through.error());
  const AuditIo& io = *through;
  auto checks = AuditCatalogue::Builtin().Select(options.profile);
  if (!checks) return tl::unexpected(checks.error());
  const std::string node = NodeName(io);
  const WallTime started = io.clock->Now();  // before the alarm, so the deadline is no later
  sys::ExitAtDeadline(
      node_timeout_s,
      FrameDocument(node, {{"node", node},
                           {"error", fmt::format("its evidence took longer than its deadline of "
                                                 "{} s",
                                                 node_timeout_s)}}),
      kDeadlineExit);
  const SideEffectOptions side_effects = AuditSideEffects(options, *checks);
  AuditEvidence evidence = CollectLocalEvidence(
      *io.fs, *io.runner,
      {.path = io.path,
       .timeout = SecondsAsDuration(options.probe_timeout_s),
       .now = started,
       .ask_accounting = false,
       .slurm_conf = io.env ? io.env("SLURM_CONF") : "",
       .nvml = SnapshotNvml,
       .environment = AuditEnvironment(io),
       .side_effects = side_effects,
       .side_effect_io = SideEffectIoFor(io, std::chrono::time_point_cast<WallTime::duration>(
                                                 started + SecondsAsDuration(node_timeout_s)))});
  // A login on another node is a side effect: only when allowed, and logged as one.
  if (TakesSideEffect(side_effects, "access.ssh-between-nodes")) {
    json ssh = SshToNextNode(node, io);
    if (ssh.is_object() && ssh["to"].is_string()) {
      RecordSideEffect(evidence, "access.ssh-between-nodes",
                       "logged in with ssh to the next node of the job (hostname)",
                       "nothing to undo: a login record on " + ssh["to"].get<std::string>());
    }
    evidence["access.ssh_to_compute_node"] = std::move(ssh);
  }
  sys::CancelDeadline();
  json document = {
      {"node", node},
      {"cmax_version", io.cmax_version},
      {"took_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(io.clock->Now() - started).count()},
      {"evidence", json::object()}};
  for (const auto& [key, value] : evidence) document["evidence"][key] = value;
  // When this task started within its job, for the auditor to tell how long the prolog held it.
  if (const std::string job = io.env ? io.env("SLURM_JOB_ID") : ""; !job.empty()) {
    const std::string start = io.env("SLURM_JOB_START_TIME");
    const std::optional<int64_t> job_start = ParseWhole<int64_t>(start);
    document["evidence"]["scheduler.step.timing"] = {
        {"job_id", SanitizeUtf8(job)},
        {"job_start", job_start ? json(*job_start) : json(nullptr)},
        {"task_started_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(started.time_since_epoch())
             .count()}};
  }
  return FrameDocument(node, document);
}

std::optional<std::string> NextNode(std::string_view hostnames, std::string_view self) {
  const std::vector<std::string> nodes = NonBlankLines(hostnames);
  const auto me = std::ranges::find(nodes, self);
  if (me == nodes.end() || nodes.size() < 2) return std::nullopt;
  return SanitizeUtf8(std::next(me) == nodes.end() ? nodes.front() : *std::next(me));
}

std::optional<int64_t> ParseJobStartTime(std::string_view scontrol_job) {
  for (std::string_view field : SplitFields(scontrol_job)) {
    if (!field.starts_with("StartTime=")) continue;
    const auto time = ParseIso8601(std::string(field.substr(10)) + "Z");
    if (!time) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::seconds>(time->time_since_epoch()).count();
  }
  return std::nullopt;
}

std::map<std::string, json> PrologSeconds(
    const std::map<std::string, AuditEvidence>& nodes,
    const std::function<std::optional<int64_t>(const std::string&)>& job_start) {
  std::map<std::string, json> out;
  for (const auto& [node, evidence] : nodes) {
    const auto timing = evidence.find("scheduler.step.timing");
    if (timing == evidence.end() || !timing->second.is_object()) continue;
    const json& t = timing->second;
    const json& started = JsonAt(t, {"task_started_ms"});
    const json& job = JsonAt(t, {"job_id"});
    if (!started.is_number_integer() || !job.is_string()) continue;
    std::optional<int64_t> start;
    std::string source = "SLURM_JOB_START_TIME";
    if (const json& exported = JsonAt(t, {"job_start"}); exported.is_number_integer()) {
      start = exported.get<int64_t>();
    } else {
      start = job_start(job.get<std::string>());
      source = "scontrol show job";
    }
    if (!start) continue;
    const double seconds =
        static_cast<double>(started.get<int64_t>()) / 1000.0 - static_cast<double>(*start);
    // Slurm keeps whole seconds, and clocks differ a little; a task well before its job's start
    // is a node clock behind the controller's, which would hide as much prolog.
    if (seconds < -kClockSlack) {
      out[node] = {
          {"value", nullptr},
          {"source", source},
          {"note", fmt::format("the node's clock is {:.1f} s behind the controller's", -seconds)}};
      continue;
    }
    out[node] = {{"value", std::round(std::max(0.0, seconds) * 10) / 10}, {"source", source}};
  }
  return out;
}

Result<AuditReport> RunSlurmAudit(const AuditOptions& options, const SlurmAuditOptions& slurm,
                                  const AuditIo& io) {
  if (!Positive(slurm.node_timeout_s) || !Positive(slurm.budget_s)) {
    return Fail(ErrorCode::kInvalidArgument, "--node-timeout and --budget must be > 0 seconds");
  }
  if (slurm.node_timeout_s >= slurm.budget_s) {
    return Fail(ErrorCode::kInvalidArgument,
                "--node-timeout ({} s) must be shorter than --budget ({} s), so that a slow node "
                "can say so within the step",
                slurm.node_timeout_s, slurm.budget_s);
  }
  const WallTime run_started = io.clock->Now();
  auto prepared = PrepareAudit(options, io);
  if (!prepared) return tl::unexpected(prepared.error());
  const std::string cmax = slurm.remote_cmax.empty() ? io.self_path : slurm.remote_cmax;
  if (cmax.empty() || cmax[0] != '/') {
    return Fail(ErrorCode::kInvalidArgument,
                "--remote-cmax must be an absolute path, the same on every node");
  }
  const GradeContext context{.target = AuditTarget::kSlurm,
                             .minimums = &prepared->table,
                             .now = io.clock->Now(),
                             .allow_side_effects = options.side_effects.allowed};

  // The nodes, as the controller sees them.
  // --all: hidden partitions too, so that no node is left out unseen.
  std::vector<std::string> sinfo = {"sinfo", "--all", "-h", "-N", "-o", "%N|%T|%P|%E"};
  if (!slurm.partition.empty()) sinfo.insert(sinfo.end(), {"-p", slurm.partition});
  if (!slurm.nodelist.empty()) sinfo.insert(sinfo.end(), {"-n", slurm.nodelist});
  auto listed =
      io.runner->Run({.argv = sinfo, .timeout = SecondsAsDuration(options.probe_timeout_s)});
  std::string controller_problem;
  SlurmNodePlan plan;
  if (!listed) {
    controller_problem = "sinfo could not run: " + listed.error().message;
  } else if (!listed->Succeeded()) {
    controller_problem =
        fmt::format("sinfo {}: {}", listed->Describe(), LastLine(listed->stderr_text));
  } else {
    plan = PlanSlurmNodes(remediate::ParseSinfoNodes(listed->stdout_text), slurm.partition);
    // A name the user gave that sinfo does not list (no such node, or not in the partition) is
    // UNKNOWN with that reason, never silently left out of the count.
    if (!slurm.nodelist.empty()) {
      auto names = io.runner->Run({.argv = {"scontrol", "show", "hostnames", slurm.nodelist},
                                   .timeout = SecondsAsDuration(options.probe_timeout_s)});
      if (names && names->Succeeded()) {
        const std::vector<std::string> planned = plan.ReachableNodes();
        for (std::string_view name : Split(names->stdout_text, '\n')) {
          const std::string node(Trim(name));
          if (node.empty() || plan.unreachable.contains(node) ||
              std::ranges::find(planned, node) != planned.end()) {
            continue;
          }
          plan.unreachable[SanitizeUtf8(node)] =
              slurm.partition.empty() ? "Slurm lists no such node"
                                      : "Slurm lists no such node in partition " + slurm.partition;
        }
      }
    }
    if (plan.steps.empty() && plan.unreachable.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "Slurm knows no node{}{}",
                  slurm.partition.empty() ? "" : " in partition " + slurm.partition,
                  slurm.nodelist.empty() ? "" : " named by " + slurm.nodelist);
    }
  }

  if (controller_problem.empty() && !plan.steps.empty()) {
    const std::vector<std::string> reachable = plan.ReachableNodes();
    const std::string what =
        fmt::format("audit {} node(s) ({}) through {} srun job step(s) running {} ({}){}",
                    reachable.size(), Join(reachable, ","), plan.steps.size(), cmax,
                    SideEffectsPlan(ForChecks(options.side_effects, prepared->checks)),
                    plan.unreachable.empty()
                        ? ""
                        : fmt::format("; {} more cannot be reached", plan.unreachable.size()));
    if (io.confirm && !io.confirm(what)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "not confirmed: nothing was run (--yes goes ahead "
                  "without asking)");
    }
  }

  std::vector<NodeFindings> nodes;
  GradedAudit graded{
      .target = "slurm/" + (slurm.partition.empty() ? std::string("all") : slurm.partition),
      .host = sys::Hostname(),
      .started = run_started};
  json answered = json::object();
  std::map<std::string, AuditEvidence> heard;
  std::optional<bool> sacct;
  std::map<std::string, std::string> unreachable = plan.unreachable;
  if (!controller_problem.empty()) {
    graded.summary = "the Slurm controller did not answer (" + controller_problem +
                     "): every check that reads a node is UNKNOWN";
  } else {
    // The cluster's accounting, asked once from here rather than by every node at once.
    sacct = SacctAnswers(*io.fs, *io.runner, io.path, SecondsAsDuration(options.probe_timeout_s));
    if (sacct) graded.evidence.push_back({"scheduler.slurm.sacct_ok", json(*sacct).dump()});
    // One step per partition, one after the other, all within the one budget.
    const WallTime started = io.clock->Now();
    for (const auto& [partition, step_nodes] : plan.steps) {
      if (io.interrupted && io.interrupted()) break;  // the run is closed as interrupted
      const double spent = std::chrono::duration<double>(io.clock->Now() - started).count();
      std::map<std::string, std::string> problems;
      for (auto& [node, doc] : RunStep(partition, step_nodes, options, slurm, cmax,
                                       slurm.budget_s - spent, io, problems)) {
        AuditEvidence& evidence = heard[node];
        for (const auto& [key, value] : doc["evidence"].items()) evidence[key] = value;
        answered[node] = std::move(doc);
      }
      unreachable.insert(problems.begin(), problems.end());
    }
  }
  // How long each node's prolog held its task, the job's start asked of the controller once
  // per job where the nodes' Slurm does not export it.
  std::map<std::string, std::optional<int64_t>> job_starts;
  const auto ask_start = [&](const std::string& job) -> std::optional<int64_t> {
    const auto [it, added] = job_starts.try_emplace(job);
    if (!added) return it->second;
    auto shown = io.runner->Run({.argv = {"scontrol", "show", "job", "-o", job},
                                 .env_add = {"TZ=UTC", "LC_ALL=C", "SLURM_TIME_FORMAT=standard"},
                                 .timeout = SecondsAsDuration(options.probe_timeout_s)});
    if (shown && shown->Succeeded()) it->second = ParseJobStartTime(shown->stdout_text);
    return it->second;
  };
  // Kept in the node's stored document too, so that a review regrades it as it was graded.
  for (auto& [node, seconds] : PrologSeconds(heard, ask_start)) {
    answered[node]["evidence"]["scheduler.slurm.prolog_seconds"] = seconds;
    heard[node]["scheduler.slurm.prolog_seconds"] = std::move(seconds);
  }
  // Graded once every node is in: what a node says about the cluster (how many nodes were
  // read) is the whole audit's, not its own.
  const size_t total = heard.size() + unreachable.size();
  for (auto& [node, evidence] : heard) {
    if (sacct) evidence.emplace("scheduler.slurm.sacct_ok", *sacct);
    evidence["audit.coverage.nodes_read"] = {{"read", heard.size()}, {"total", total}};
    evidence["network.fabric.tiers"] = FabricTiers(total);
    nodes.push_back({node, GradeChecks(prepared->checks, evidence, context)});
  }
  for (const auto& [node, reason] : unreachable) {
    nodes.push_back(Unreached(*prepared, context, node, reason));
  }
  std::ranges::sort(nodes, {}, &NodeFindings::node);
  const bool interrupted = io.interrupted && io.interrupted();
  if (!interrupted && !controller_problem.empty()) {
    // No node can be named: every check is unknown for the same reason.
    graded.findings = Unreached(*prepared, context, "",
                                "the Slurm controller did not answer: " + controller_problem)
                          .findings;
  } else if (!interrupted) {
    graded.findings = WorstNodeFindings(nodes);
  }

  json coverage = {{"nodes", total},
                   {"answered", answered.size()},
                   {"unreachable", unreachable},
                   {"partition", slurm.partition},
                   {"nodelist", slurm.nodelist}};
  for (EvidenceItem& item : ClusterEvidence("slurm", coverage, nodes, answered)) {
    graded.evidence.push_back(std::move(item));
  }
  if (controller_problem.empty()) {
    graded.summary = fmt::format("{} of {} node(s) answered", answered.size(), total);
    if (!unreachable.empty()) {
      std::vector<std::string> why;
      for (const auto& [node, reason] : unreachable) why.push_back(node + ": " + reason);
      graded.summary += "; UNKNOWN for " + Join(why, "; ");
    }
    std::vector<const AuditEvidence*> evidence;
    for (const auto& [node, e] : heard) evidence.push_back(&e);
    if (const std::string taken = SideEffectsSummary(evidence); !taken.empty()) {
      graded.summary += "; side effects taken: " + taken;
    }
  }
  return RecordAudit(options, *prepared, std::move(graded), io);
}

}  // namespace cmax::audit
