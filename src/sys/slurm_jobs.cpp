#include "sys/slurm_jobs.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/hostlist.hpp"
#include "core/strings.hpp"
#include "sys/process_runner.hpp"

namespace cmax::sys {
namespace {

// The Slurm node a host name stands for: itself, or a domain name's first label. An IPv4
// address ("10.0.0.5" is not node "10") or an IPv6 one names no node by a part of itself.
std::string NodeOf(const std::string& host) {
  const size_t dot = host.find('.');
  const bool address = host.find(':') != std::string::npos || std::ranges::all_of(host, [](char c) {
                         return c == '.' || (c >= '0' && c <= '9');
                       });
  return dot == std::string::npos || dot == 0 || address ? host : host.substr(0, dot);
}

}  // namespace

Result<std::vector<SlurmJobPlacement>> ParseSqueueJobNodes(std::string_view text) {
  std::vector<SlurmJobPlacement> jobs;
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    const size_t bar = line.find('|');
    const std::string_view job = bar == std::string_view::npos ? "" : Trim(line.substr(0, bar));
    if (job.empty()) {
      return Fail(ErrorCode::kCorrupt, "squeue's line is not JOBID|NODES: {}",
                  SanitizeUtf8(line.substr(0, 200)));
    }
    auto nodes = ExpandHostList(Trim(line.substr(bar + 1)));
    if (!nodes) {
      return Fail(ErrorCode::kCorrupt, "squeue's nodes of job {}: {}", SanitizeUtf8(job),
                  nodes.error().message);
    }
    jobs.push_back({.job = std::string(job), .nodes = std::move(*nodes)});
  }
  return jobs;
}

Result<std::vector<SlurmJobPlacement>> SlurmJobsOnNodes(ProcessRunner& runner,
                                                        const std::string& squeue,
                                                        Duration timeout) {
  ProcessSpec spec{.argv = {squeue, "-h", "-t", std::string(kSlurmJobStatesOnNodes), "-o", "%A|%N"},
                   .timeout = timeout};
  spec.output_cap = size_t{256} << 20;  // a line a job: a busy cluster's queue is large
  auto r = runner.Run(spec);
  if (!r) return tl::unexpected(r.error());
  if (!r->Succeeded()) {
    // Slurm's clients explain over several lines; the last says why.
    const std::string_view said = Trim(r->stderr_text);
    return Fail(ErrorCode::kUnavailable, "squeue {}: {}", r->Describe(),
                SanitizeUtf8(said.substr(said.rfind('\n') + 1)));
  }
  if (r->stdout_truncated) {
    return Fail(ErrorCode::kCorrupt, "squeue printed more than {} bytes", spec.output_cap);
  }
  return ParseSqueueJobNodes(r->stdout_text);
}

std::vector<HostInUse> HostsRunningOthersJobs(const std::vector<SlurmJobPlacement>& jobs,
                                              const std::vector<std::string>& hosts,
                                              std::string_view own_job) {
  std::map<std::string, std::vector<std::string>> jobs_on;
  for (const SlurmJobPlacement& job : jobs) {
    if (!own_job.empty() && job.job == own_job) continue;
    for (const std::string& node : job.nodes) jobs_on[node].push_back(job.job);
  }
  std::vector<HostInUse> out;
  for (const std::string& host : hosts) {
    const std::string node = NodeOf(host);
    const auto found = jobs_on.find(jobs_on.contains(host) ? host : node);
    if (found == jobs_on.end()) continue;
    if (std::ranges::any_of(out, [&](const HostInUse& h) { return h.host == host; })) continue;
    out.push_back({.host = host, .jobs = found->second});
  }
  return out;
}

std::string DescribeHostsInUse(const std::vector<HostInUse>& hosts) {
  std::vector<std::string> parts;
  parts.reserve(hosts.size());
  for (const HostInUse& h : hosts) {
    parts.push_back(fmt::format("{} (job{} {})", AsOneLine(h.host), h.jobs.size() == 1 ? "" : "s",
                                AsOneLine(Join(h.jobs, ", "))));
  }
  return Join(parts, ", ");
}

}  // namespace cmax::sys
