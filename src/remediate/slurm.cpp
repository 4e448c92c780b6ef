#include "remediate/slurm.hpp"

#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <thread>

#include "core/hostlist.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "sys/slurm_jobs.hpp"

namespace cmax::remediate {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string Describe(const std::vector<std::string>& argv, const sys::ProcessResult& r) {
  std::string what = argv.empty() ? "" : argv[0];
  if (argv.size() > 1) what += " " + argv[1];
  std::string err(Trim(r.stderr_text));
  if (err.empty()) err = std::string(Trim(r.stdout_text));
  return fmt::format("{}: {}{}{}", what, r.Describe(), err.empty() ? "" : ": ", err);
}

}  // namespace

bool IsCmaxReason(std::string_view reason) {
  return reason.starts_with(kReasonPrefix);
}

std::vector<SchedulerNode> ParseSinfoNodes(std::string_view text) {
  std::vector<SchedulerNode> nodes;
  for (std::string_view line : Split(text, '\n')) {
    if (Trim(line).empty()) continue;
    const std::vector<std::string_view> f = Split(line, '|');
    if (f.size() < 4) continue;
    std::string name(Trim(f[0]));
    std::string state = Lower(Trim(f[1]));
    // sinfo marks not responding (*), powered down (~) and the like with a trailing symbol.
    bool maintenance = false;
    bool responding = true;
    bool powered_down = false;
    while (!state.empty() &&
           std::string_view("*~#!%$@^-").find(state.back()) != std::string::npos) {
      maintenance = maintenance || state.back() == '$';
      responding = responding && state.back() != '*';
      powered_down = powered_down || state.back() == '~' || state.back() == '%';
      state.pop_back();
    }
    maintenance = maintenance || state == "maint";
    std::string partition(Trim(f[2]));
    if (!partition.empty() && partition.back() == '*') partition.pop_back();  // the default
    // The reason is everything after the third '|'.
    size_t at = 0;
    for (int i = 0; i < 3; ++i) at = line.find('|', at) + 1;
    std::string reason(Trim(line.substr(at)));
    if (reason == "none") reason.clear();
    auto it = std::ranges::find_if(nodes, [&](const SchedulerNode& n) { return n.name == name; });
    if (it == nodes.end()) {
      SchedulerNode node;
      node.name = std::move(name);
      // Down counts too: no work lands there, and resuming it is the same decision.
      node.drain = state.starts_with("drain") || state == "drng" || state.starts_with("down");
      node.maintenance = maintenance;
      node.responding = responding;
      node.powered_down = powered_down;
      node.state = std::move(state);
      node.reason = std::move(reason);
      nodes.push_back(std::move(node));
      it = nodes.end() - 1;
    }
    if (!partition.empty()) it->partitions.push_back(std::move(partition));
  }
  return nodes;
}

std::string ScontrolField(std::string_view text, std::string_view key) {
  const std::string needle = std::string(key) + "=";
  size_t at = 0;
  while ((at = text.find(needle, at)) != std::string_view::npos) {
    if (at == 0 || text[at - 1] == ' ' || text[at - 1] == '\n') {
      const size_t start = at + needle.size();
      const size_t end = text.find_first_of(" \n", start);
      return std::string(text.substr(start, end == std::string_view::npos ? end : end - start));
    }
    at += needle.size();
  }
  return "";
}

ValidationStatus ParseJobState(std::string_view text) {
  const std::string state = ScontrolField(text, "JobState");
  const std::string exit_code = ScontrolField(text, "ExitCode");
  if (state.empty()) return {ValidationState::kFailed, "the validation job is gone"};
  if (state == "COMPLETED") return {ValidationState::kPassed, "exit " + exit_code};
  if (state == "PENDING" || state == "CONFIGURING" || state == "RUNNING" || state == "COMPLETING" ||
      state == "REQUEUED" || state == "RESIZING" || state == "SUSPENDED") {
    return {ValidationState::kRunning, Lower(state)};
  }
  return {ValidationState::kFailed, fmt::format("{} (exit {})", Lower(state), exit_code)};
}

bool ControllerUnreachable(const sys::ProcessResult& result) {
  if (result.timed_out) return true;
  const std::string& err = result.stderr_text;
  return err.find("Unable to contact slurm controller") != std::string::npos ||
         err.find("Socket timed out") != std::string::npos ||
         err.find("Zero Bytes were transmitted") != std::string::npos ||
         err.find("Connection refused") != std::string::npos;
}

SlurmScheduler::SlurmScheduler(sys::ProcessRunner& runner, SlurmOptions options)
    : runner_(runner), options_(std::move(options)) {
  if (!options_.sleep) options_.sleep = [](Duration d) { std::this_thread::sleep_for(d); };
}

Result<sys::ProcessResult> SlurmScheduler::Slurm(std::vector<std::string> argv,
                                                 bool allow_failure) {
  sys::ProcessSpec spec{.argv = std::move(argv)};
  spec.timeout = options_.command_timeout;
  // The fleet as Slurm has it, not as the caller's SINFO_PARTITION or SQUEUE_USERS narrows it.
  for (const char* name : sys::kSlurmViewVariables) spec.env_add.emplace_back(name);
  Duration backoff = options_.backoff;
  for (int attempt = 1;; ++attempt) {
    auto result = runner_.Run(spec);
    if (!result) return tl::unexpected(result.error());
    if (result->interrupted) return Fail(ErrorCode::kInterrupted, "interrupted");
    if (result->Succeeded()) return result;
    if (!ControllerUnreachable(*result)) {
      if (allow_failure) return result;
      return Fail(ErrorCode::kIo, Describe(spec.argv, *result));
    }
    if (attempt >= options_.attempts) {
      return Fail(ErrorCode::kUnavailable, "Slurm controller unreachable after {} attempts: {}",
                  attempt, Describe(spec.argv, *result));
    }
    log::Debug("{}; retrying in {}", Describe(spec.argv, *result), FormatDuration(backoff));
    options_.sleep(backoff);
    backoff *= 2;
  }
}

Result<std::vector<SchedulerNode>> SlurmScheduler::Nodes() {
  auto r = Slurm({"sinfo", "-N", "-h", "-o", "%N|%T|%P|%E"});
  if (!r) return tl::unexpected(r.error());
  std::vector<SchedulerNode> nodes = ParseSinfoNodes(r->stdout_text);
  if (!options_.read_maintenance_reservations) return nodes;
  // sinfo marks a node in a maintenance reservation ('$') only some seconds after the
  // reservation starts, while Slurm keeps other jobs off it at once: read the reservations too.
  auto reservations = Slurm({"scontrol", "show", "reservation", "-o"}, /*allow_failure=*/true);
  if (reservations && reservations->Succeeded()) {
    const std::set<std::string> maintenance = MaintenanceNodes(
        reservations->stdout_text,
        std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now()),
        ParseSlurmLocalTime);
    for (SchedulerNode& n : nodes) n.maintenance = n.maintenance || maintenance.contains(n.name);
  }
  return nodes;
}

std::set<std::string> MaintenanceNodes(
    std::string_view text, WallTime now,
    const std::function<std::optional<WallTime>(std::string_view)>& local_time) {
  std::set<std::string> nodes;
  for (std::string_view line : Split(text, '\n')) {
    // Slurm marks a reservation ACTIVE some seconds after it starts, but keeps other jobs off
    // its nodes from its start time on (checked on the lab: a job asking for the node pends,
    // "reserved for other job").
    const auto start = local_time(ScontrolField(line, "StartTime"));
    const auto end = local_time(ScontrolField(line, "EndTime"));
    const bool started = start && *start <= now && (!end || now < *end);
    if (ScontrolField(line, "State") != "ACTIVE" && !started) continue;
    const std::string flags = ScontrolField(line, "Flags");  // named: Split views into it
    bool maint = false;
    for (std::string_view flag : Split(flags, ',')) maint = maint || flag == "MAINT";
    if (!maint) continue;
    auto names = ExpandHostList(ScontrolField(line, "Nodes"));
    if (names) nodes.insert(names->begin(), names->end());
  }
  return nodes;
}

std::optional<WallTime> ParseSlurmLocalTime(std::string_view text) {
  std::tm tm{};
  const std::string copy(text);
  const char* end = ::strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == -1) return std::nullopt;
  return WallTime{std::chrono::milliseconds(static_cast<int64_t>(t) * 1000)};
}

std::vector<TakeOut> ParseCmaxTakeOuts(
    std::string_view text,
    const std::function<std::optional<WallTime>(std::string_view)>& local_time) {
  std::vector<TakeOut> out;
  for (std::string_view line : Split(text, '\n')) {
    const size_t a = line.find('|');
    const size_t b = a == std::string_view::npos ? a : line.find('|', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view reason = Trim(line.substr(b + 1));
    if (!IsCmaxReason(reason)) continue;
    auto at = local_time(Trim(line.substr(a + 1, b - a - 1)));
    if (!at) continue;
    out.push_back({std::string(Trim(line.substr(0, a))), *at});
  }
  return out;
}

Result<std::vector<TakeOut>> SlurmScheduler::CmaxTakeOuts() {
  auto r = Slurm({"sinfo", "-h", "-N", "-R", "-o", "%N|%H|%E"});
  if (!r) return tl::unexpected(r.error());
  return ParseCmaxTakeOuts(r->stdout_text, ParseSlurmLocalTime);
}

Result<SchedulerNode> SlurmScheduler::Node(const std::string& node) {
  auto r = Slurm({"sinfo", "-N", "-h", "-n", node, "-o", "%N|%T|%P|%E"});
  if (!r) return tl::unexpected(r.error());
  for (SchedulerNode& n : ParseSinfoNodes(r->stdout_text)) {
    if (n.name == node) return std::move(n);
  }
  return Fail(ErrorCode::kNotFound, "node {} is not in Slurm's configuration", node);
}

Result<std::string> SlurmScheduler::Drain(const std::string& node, const std::string& reason) {
  auto current = Node(node);
  if (!current) return tl::unexpected(current.error());
  if (current->drain && IsCmaxReason(current->reason))
    return std::string("already drained by cmax");
  if (current->drain) {
    return fmt::format("already drained by someone else (\"{}\"); left as it is", current->reason);
  }
  auto r = Slurm({"scontrol", "update", "nodename=" + node, "state=drain", "reason=" + reason});
  if (!r) return tl::unexpected(r.error());
  return std::string("drained");
}

Result<std::string> SlurmScheduler::Resume(const std::string& node) {
  auto current = Node(node);
  if (!current) return tl::unexpected(current.error());
  if (!current->drain) return fmt::format("not drained ({}); nothing to resume", current->state);
  if (!IsCmaxReason(current->reason)) {
    return Fail(ErrorCode::kPermissionDenied,
                "{} was drained by someone else (\"{}\"); cmax resumes only its own drains", node,
                current->reason);
  }
  auto r = Slurm({"scontrol", "update", "nodename=" + node, "state=resume"});
  if (!r) return tl::unexpected(r.error());
  return std::string("resumed");
}

Result<std::string> SlurmScheduler::RequeueJobs(const std::string& node) {
  auto jobs = Slurm({"squeue", "-a", "--local", "-h", "-w", node, "-t",
                     "RUNNING,CONFIGURING,SUSPENDED", "-o", "%i"});
  if (!jobs) return tl::unexpected(jobs.error());
  std::vector<std::string> requeued;
  std::vector<std::string> refused;
  for (std::string_view id : SplitFields(jobs->stdout_text)) {
    auto r = Slurm({"scontrol", "requeue", std::string(id)}, /*allow_failure=*/true);
    if (!r) return tl::unexpected(r.error());
    (r->Succeeded() ? requeued : refused).emplace_back(id);
  }
  if (requeued.empty() && refused.empty()) return std::string("no jobs on the node");
  std::string detail = requeued.empty() ? "" : "requeued " + Join(requeued, ",");
  if (!refused.empty()) {
    detail += (detail.empty() ? "" : "; ") + std::string("could not requeue ") + Join(refused, ",");
  }
  return detail;
}

Result<std::vector<std::string>> SlurmScheduler::JobsOn(const std::string& node) {
  auto jobs = Slurm({"squeue", "-a", "--local", "-h", "-w", node, "-t",
                     std::string(sys::kSlurmJobStatesOnNodes), "-o", "%A"});
  if (!jobs) return tl::unexpected(jobs.error());
  std::vector<std::string> ids;
  for (std::string_view id : SplitFields(jobs->stdout_text)) ids.emplace_back(id);
  return ids;
}

Result<std::string> SlurmScheduler::Reboot(const std::string& node, const std::string& reason) {
  // nextstate=DOWN (22.05 takes only DOWN or RESUME): the node comes back out of service with
  // our reason, so validation runs before work does.
  auto r = Slurm({"scontrol", "reboot", "ASAP", "nextstate=DOWN", "reason=" + reason, node});
  if (!r) return tl::unexpected(r.error());
  return std::string("reboot requested");
}

Result<std::string> SlurmScheduler::BootTime(const std::string& node) {
  auto r = Slurm({"scontrol", "show", "node", "-o", node});
  if (!r) return tl::unexpected(r.error());
  std::string boot = ScontrolField(r->stdout_text, "BootTime");
  if (boot.empty()) return Fail(ErrorCode::kNotFound, "Slurm shows no boot time for {}", node);
  return boot;
}

Result<std::string> SlurmScheduler::StartValidation(const std::string& node,
                                                    const ValidationSpec& spec) {
  const std::string name = ReservationName(node);
  auto existing = Slurm({"squeue", "-h", "-n", name, "-o", "%i"});
  if (!existing) return tl::unexpected(existing.error());
  if (std::string id(Trim(existing->stdout_text)); !id.empty()) {
    return id.substr(0, id.find('\n'));
  }
  auto current = Node(node);
  if (!current) return tl::unexpected(current.error());
  if (current->drain && !IsCmaxReason(current->reason)) {
    return Fail(ErrorCode::kPermissionDenied,
                "{} was drained by someone else (\"{}\"); not validating it", node,
                current->reason);
  }
  auto reservation = Slurm({"scontrol", "show", "reservation", name}, /*allow_failure=*/true);
  if (!reservation) return tl::unexpected(reservation.error());
  if (!reservation->Succeeded()) {
    auto made = Slurm({"scontrol", "create", "reservation", "reservationname=" + name,
                       "nodes=" + node, "starttime=now", "duration=UNLIMITED",
                       "flags=maint,ignore_jobs", "users=" + options_.validation_user});
    if (!made) return tl::unexpected(made.error());
  }
  // Only now, with the reservation holding the node, may it leave DRAIN.
  if (current->drain) {
    auto resumed = Slurm({"scontrol", "update", "nodename=" + node, "state=resume"});
    if (!resumed) return tl::unexpected(resumed.error());
  }
  const auto minutes =
      std::max<int64_t>(1, std::chrono::ceil<std::chrono::minutes>(spec.timeout).count());
  std::vector<std::string> argv{"sbatch",
                                "--parsable",
                                "-J",
                                name,
                                "--reservation=" + name,
                                "-w",
                                node,
                                "-N1",
                                "-o",
                                "/dev/null",
                                "--time=" + std::to_string(minutes)};
  if (!current->partitions.empty()) argv.push_back("--partition=" + current->partitions.front());
  argv.push_back("--wrap=" + spec.command);
  auto job = Slurm(argv);
  if (!job) return tl::unexpected(job.error());
  std::string id(Trim(job->stdout_text));
  return id.substr(0, id.find(';'));  // --parsable prints "id" or "id;cluster"
}

Result<ValidationStatus> SlurmScheduler::PollValidation(const std::string& /*node*/,
                                                        const std::string& handle) {
  auto r = Slurm({"scontrol", "show", "job", "-o", handle}, /*allow_failure=*/true);
  if (!r) return tl::unexpected(r.error());
  if (!r->Succeeded()) {
    // "Invalid job id specified": the job ended longer ago than MinJobAge, or never was.
    return ValidationStatus{ValidationState::kFailed, "validation job " + handle + " is gone: " +
                                                          std::string(Trim(r->stderr_text))};
  }
  return ParseJobState(r->stdout_text);
}

Result<std::string> SlurmScheduler::EndValidation(const std::string& node, bool passed,
                                                  const std::string& reason) {
  const std::string name = ReservationName(node);
  // By name inside cmax's own reservation: a tenant's job that happens to bear the name, outside
  // it, is not cmax's to cancel.
  auto cancelled = Slurm({"scancel", "-n", name, "--reservation=" + name}, /*allow_failure=*/true);
  if (!cancelled) return tl::unexpected(cancelled.error());
  std::string detail;
  if (!passed) {
    auto drained = Drain(node, reason);
    if (!drained) return tl::unexpected(drained.error());
    detail = *drained + "; ";
  }
  auto shown = Slurm({"scontrol", "show", "reservation", name}, /*allow_failure=*/true);
  if (!shown) return tl::unexpected(shown.error());
  if (shown->Succeeded()) {
    auto deleted = Slurm({"scontrol", "delete", "reservationname=" + name});
    if (!deleted) return tl::unexpected(deleted.error());
    detail += "reservation " + name + " deleted";
  } else {
    detail += "no reservation left";
  }
  return detail;
}

Result<std::vector<std::string>> SlurmScheduler::Hostnames(const std::string& hostlist) {
  if (hostlist.empty() || hostlist == "(null)") return std::vector<std::string>{};
  auto r = Slurm({"scontrol", "show", "hostnames", hostlist});
  if (!r) return tl::unexpected(r.error());
  std::vector<std::string> names;
  for (std::string_view n : SplitFields(r->stdout_text)) names.emplace_back(n);
  return names;
}

Result<std::vector<std::string>> SlurmScheduler::PartitionNodes(const std::string& partition) {
  auto r = Slurm({"scontrol", "show", "partition", "-o", partition});
  if (!r) return tl::unexpected(r.error());
  return Hostnames(ScontrolField(r->stdout_text, "Nodes"));
}

Result<std::string> SlurmScheduler::PickSpare() {
  auto in_service = PartitionNodes(options_.service_partition);
  if (!in_service) return tl::unexpected(in_service.error());
  auto spares = PartitionNodes(options_.spare_partition);
  if (!spares) return tl::unexpected(spares.error());
  auto nodes = Nodes();
  if (!nodes) return tl::unexpected(nodes.error());
  for (const std::string& spare : *spares) {
    if (std::ranges::find(*in_service, spare) != in_service->end()) continue;
    auto it = std::ranges::find_if(*nodes, [&](const SchedulerNode& n) { return n.name == spare; });
    if (it != nodes->end() && !it->drain && it->state == "idle") return spare;
  }
  return Fail(ErrorCode::kUnavailable, "no idle spare in partition {} (of {} nodes)",
              options_.spare_partition, spares->size());
}

Result<std::string> SlurmScheduler::SwapInSpare(const std::string& spare) {
  auto in_service = PartitionNodes(options_.service_partition);
  if (!in_service) return tl::unexpected(in_service.error());
  if (std::ranges::find(*in_service, spare) != in_service->end()) {
    return fmt::format("{} already in partition {}", spare, options_.service_partition);
  }
  // Slurm 22.05 has no "Nodes=+name": the whole list is set (and a bad name empties the
  // partition, so the list is built only from names Slurm itself gave back).
  in_service->push_back(spare);
  auto r = Slurm({"scontrol", "update", "partitionname=" + options_.service_partition,
                  "nodes=" + Join(*in_service, ",")});
  if (!r) return tl::unexpected(r.error());
  return fmt::format("{} moved into partition {}", spare, options_.service_partition);
}

Result<std::string> SlurmScheduler::ReturnSpare(const std::string& spare) {
  auto in_service = PartitionNodes(options_.service_partition);
  if (!in_service) return tl::unexpected(in_service.error());
  if (std::erase(*in_service, spare) == 0) {
    return fmt::format("{} not in partition {}", spare, options_.service_partition);
  }
  if (in_service->empty()) {
    return Fail(ErrorCode::kInvalidArgument, "returning {} would leave partition {} empty", spare,
                options_.service_partition);
  }
  auto r = Slurm({"scontrol", "update", "partitionname=" + options_.service_partition,
                  "nodes=" + Join(*in_service, ",")});
  if (!r) return tl::unexpected(r.error());
  return fmt::format("{} back in partition {} only", spare, options_.spare_partition);
}

}  // namespace cmax::remediate
