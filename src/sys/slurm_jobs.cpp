#include "sys/slurm_jobs.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

#include "core/hostlist.hpp"
#include "core/strings.hpp"
#include "sys/process_runner.hpp"

namespace cmax::sys {
namespace {

// How a name is compared: lower case (DNS ignores case), and a domain name by its first label
// (gpu7.cluster.local is gpu7). An IPv4 address ("10.0.0.5" is not node "10") or an IPv6 one
// is kept whole.
std::string NameKey(std::string_view name) {
  std::string key = ToLower(name);
  const size_t dot = key.find('.');
  const bool address = key.find(':') != std::string::npos || std::ranges::all_of(key, [](char c) {
                         return c == '.' || (c >= '0' && c <= '9');
                       });
  if (dot != std::string::npos && dot != 0 && !address) key.resize(dot);
  return key;
}

// The nodes by what else a host may call them: their host names and addresses, lower case
// (looked up with the host's name), and their host names' first labels (with the host's).
struct NodeAliases {
  std::map<std::string, std::vector<std::string>> by_name;  // -> node keys
  std::map<std::string, std::vector<std::string>> by_key;

  explicit NodeAliases(const std::vector<SlurmNodeName>& nodes) {
    for (const SlurmNodeName& n : nodes) {
      const std::string node = NameKey(n.name);
      by_name[ToLower(n.hostname)].push_back(node);
      by_name[ToLower(n.address)].push_back(node);
      by_key[NameKey(n.hostname)].push_back(node);
    }
  }
  // The node keys a host stands for: its own name's, and every node it is another name of.
  std::vector<std::string> NodeKeysOf(const std::string& host) const {
    const std::string key = NameKey(host);
    std::vector<std::string> keys = {key};
    const auto add = [&keys](const auto& aliases, const std::string& alias) {
      const auto it = aliases.find(alias);
      if (it == aliases.end()) return;
      for (const std::string& node : it->second) {
        if (std::ranges::find(keys, node) == keys.end()) keys.push_back(node);
      }
    };
    add(by_name, ToLower(host));
    add(by_key, key);
    return keys;
  }
};

Result<ProcessResult> RunSlurmClient(ProcessRunner& runner, std::vector<std::string> argv,
                                     Duration timeout) {
  ProcessSpec spec{.argv = std::move(argv), .timeout = timeout};
  for (const char* name : kSlurmViewVariables) spec.env_add.emplace_back(name);
  spec.output_cap = size_t{256} << 20;  // a line a job or node: a large cluster's are long
  const std::string tool = spec.argv.front().substr(spec.argv.front().rfind('/') + 1);
  auto r = runner.Run(spec);
  if (!r) return tl::unexpected(r.error());
  if (!r->Succeeded()) {
    // Slurm's clients explain over several lines; the last says why.
    const std::string_view said = Trim(r->stderr_text);
    return Fail(ErrorCode::kUnavailable, "{} {}: {}", tool, r->Describe(),
                SanitizeUtf8(said.substr(said.rfind('\n') + 1)));
  }
  if (r->stdout_truncated) {
    return Fail(ErrorCode::kCorrupt, "{} printed more than {} bytes", tool, spec.output_cap);
  }
  return r;
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
      return Fail(ErrorCode::kCorrupt, "squeue's nodes of job {}: {}", AsOneLine(job),
                  AsOneLine(nodes.error().message));
    }
    jobs.push_back({.job = std::string(job), .nodes = std::move(*nodes)});
  }
  return jobs;
}

Result<std::vector<SlurmJobPlacement>> SlurmJobsOnNodes(ProcessRunner& runner,
                                                        const std::string& squeue,
                                                        Duration timeout) {
  auto r = RunSlurmClient(
      runner,
      {squeue, "-a", "--local", "-h", "-t", std::string(kSlurmJobStatesOnNodes), "-o", "%A|%N"},
      timeout);
  if (!r) return tl::unexpected(r.error());
  return ParseSqueueJobNodes(r->stdout_text);
}

Result<std::vector<SlurmNodeName>> ParseSinfoNodeNames(std::string_view text) {
  std::vector<SlurmNodeName> nodes;
  std::set<std::string> seen;
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = Split(line, '|');
    if (fields.size() != 3 || Trim(fields[0]).empty()) {
      return Fail(ErrorCode::kCorrupt, "sinfo's line is not NAME|HOSTNAME|ADDRESS: {}",
                  SanitizeUtf8(line.substr(0, 200)));
    }
    SlurmNodeName n{.name = std::string(Trim(fields[0])),
                    .hostname = std::string(Trim(fields[1])),
                    .address = std::string(Trim(fields[2]))};
    if (n.hostname.empty()) n.hostname = n.name;
    if (n.address.empty()) n.address = n.hostname;
    // -N lists a node once for each partition it is in.
    if (seen.insert(n.name).second) nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<std::vector<SlurmNodeName>> SlurmNodeNames(ProcessRunner& runner, const std::string& sinfo,
                                                  Duration timeout) {
  auto r = RunSlurmClient(runner, {sinfo, "-a", "--local", "-h", "-N", "-o", "%N|%n|%o"}, timeout);
  if (!r) return tl::unexpected(r.error());
  return ParseSinfoNodeNames(r->stdout_text);
}

std::vector<HostInUse> HostsRunningOthersJobs(const std::vector<SlurmJobPlacement>& jobs,
                                              const std::vector<std::string>& hosts,
                                              std::string_view own_job,
                                              const std::vector<SlurmNodeName>& nodes) {
  std::map<std::string, std::vector<std::string>> jobs_on;  // node key -> jobs
  for (const SlurmJobPlacement& job : jobs) {
    if (!own_job.empty() && job.job == own_job) continue;
    for (const std::string& node : job.nodes) jobs_on[NameKey(node)].push_back(job.job);
  }
  const NodeAliases aliases(nodes);
  std::vector<HostInUse> out;
  for (const std::string& host : hosts) {
    if (std::ranges::any_of(out, [&](const HostInUse& h) { return h.host == host; })) continue;
    std::vector<std::string> found;
    for (const std::string& key : aliases.NodeKeysOf(host)) {
      const auto it = jobs_on.find(key);
      if (it == jobs_on.end()) continue;
      for (const std::string& job : it->second) {
        if (std::ranges::find(found, job) == found.end()) found.push_back(job);
      }
    }
    if (!found.empty()) out.push_back({.host = host, .jobs = std::move(found)});
  }
  return out;
}

std::vector<std::string> HostsNamingNoNode(const std::vector<std::string>& hosts,
                                           const std::vector<SlurmNodeName>& nodes) {
  std::set<std::string> names;
  for (const SlurmNodeName& n : nodes) names.insert(NameKey(n.name));
  const NodeAliases aliases(nodes);
  std::vector<std::string> out;
  for (const std::string& host : hosts) {
    const std::vector<std::string> keys = aliases.NodeKeysOf(host);
    const bool known =
        std::ranges::any_of(keys, [&](const std::string& k) { return names.contains(k); });
    if (!known && std::ranges::find(out, host) == out.end()) out.push_back(host);
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

OthersJobsAnswer AskOthersJobsOn(const OthersJobsQuestion& question, ProcessRunner& runner) {
  const auto find = [&question](const std::string& name) {
    return question.find_program ? question.find_program(name) : FindProgram(name);
  };
  OthersJobsAnswer answer;
  const std::string squeue = find("squeue");
  if (squeue.empty()) return answer;
  auto jobs = SlurmJobsOnNodes(runner, squeue, question.timeout);
  if (!jobs) {
    answer.unchecked.push_back("not checked for others' Slurm jobs: " + jobs.error().message);
    return answer;
  }
  answer.known = true;
  std::vector<SlurmNodeName> nodes;
  if (const std::string sinfo = find("sinfo"); sinfo.empty()) {
    answer.unchecked.emplace_back(
        "no sinfo here: hosts matched to Slurm's nodes by node name only");
  } else if (auto named = SlurmNodeNames(runner, sinfo, question.timeout); !named) {
    answer.unchecked.push_back(named.error().message +
                               ": hosts matched to Slurm's nodes by node name only");
  } else {
    nodes = std::move(*named);
  }
  if (const std::vector<std::string> unknown = HostsNamingNoNode(question.hosts, nodes);
      !nodes.empty() && !unknown.empty()) {
    answer.unchecked.push_back("no Slurm node by these names, so not checked for others' jobs: " +
                               AsOneLine(Join(unknown, ", ")));
  }
  answer.in_use = HostsRunningOthersJobs(*jobs, question.hosts, question.own_job, nodes);
  return answer;
}

}  // namespace cmax::sys
