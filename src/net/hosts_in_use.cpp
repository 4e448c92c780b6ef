#include "net/hosts_in_use.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/strings.hpp"

namespace cmax::net {
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

std::vector<HostInUse> HostsRunningOthersJobs(const std::vector<sys::SlurmJobPlacement>& jobs,
                                              const std::vector<std::string>& hosts,
                                              std::string_view own_job) {
  std::map<std::string, std::vector<std::string>> jobs_on;
  for (const sys::SlurmJobPlacement& job : jobs) {
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

}  // namespace cmax::net
