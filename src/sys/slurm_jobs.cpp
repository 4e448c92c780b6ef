#include "sys/slurm_jobs.hpp"

#include "core/hostlist.hpp"
#include "core/strings.hpp"
#include "sys/process_runner.hpp"

namespace cmax::sys {

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

}  // namespace cmax::sys
