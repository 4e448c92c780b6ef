// What a load run shows: its metrics, cache and cost figures and the client's self-check, as
// a summary, as a JSON file with the keys of vLLM's benchmark result (so existing plotting keeps
// working) plus cmax's own under "cmax", as one JSONL line per request, as store metrics and
// findings, and as a text table. Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/run_record.hpp"
#include "endpoint/load.hpp"
#include "endpoint/metrics.hpp"
#include "endpoint/usage.hpp"

namespace cmax::endpoint {

struct RunDescription {
  std::string label = "cmax";
  std::string url;  // never holds a secret: keys go in headers
  std::string model;
  Api api = Api::kChat;
  size_t concurrency = 0;
  double rate = 0;
  double burstiness = 1;
  std::string workload;  // "random", "prompts FILE", "trace FILE"
};

struct LoadSummary {
  RunMetrics metrics;
  TokenUsage usage;  // summed over completed requests, as the server reported it
  double measured_hit_rate = 0;
  double ideal_hit_rate = 0;
  std::optional<double> cost_usd;
  Distribution lateness_ms;
  Distribution server_lag_ms;  // serve-sim only
  double client_cpu_s = 0;
  // Of one core over the run; none when the run was too short for the share to mean anything
  // (a run against a refused port ends in a millisecond: its start-up CPU over that is "154%").
  std::optional<double> client_cpu_share;
  double cpu_us_per_output_token = 0;
  size_t max_in_flight = 0;
  uint64_t retries = 0;
  std::vector<std::string> warnings;
  size_t failed = 0;
  // The first failed request (by order of sending), e.g. "HTTP/1.1 404: {\"detail\":...}" or
  // "connect: Connection refused": what a user whose every request failed needs to see.
  std::string first_failure;
};

// Shortest run over which the client's CPU share is reported (seconds, first send to last
// outcome): below it, fixed start-up costs dominate and the share is noise.
inline constexpr double kMinCpuWindowS = 0.5;

// How the first failure is shown: the status line and the start of the body for an HTTP error,
// else the error class and its message.
std::string FailureText(const RequestRecord& record);

// Takes the secrets (RequestSecrets: the API key, credential headers) out of every request's
// error, from which the output and requests files, the store and the terminal are made (a
// gateway may echo a key it refused): before Summarize, so that its cut of the first failure
// cannot cut a secret in two. A secret that ends an error body the engine cut short is masked
// from its first 8 characters. A secret under 4 characters is left: it would redact ordinary
// words.
void RedactSecrets(LoadResult& run, const std::vector<std::string>& secrets);

// The same, one request at a time (the requests file as it grows): the secrets' forms are made
// once, longest first.
class Redactor {
 public:
  explicit Redactor(const std::vector<std::string>& secrets);
  void Redact(RequestRecord& record) const;

 private:
  std::vector<std::string> forms_;
};

LoadSummary Summarize(const LoadResult& run, const Slo& slo, const std::optional<Price>& price);

nlohmann::json ResultJson(const RunDescription& description, const LoadResult& run,
                          const LoadSummary& summary);
std::string RequestJsonl(const RequestRecord& record);
std::vector<Metric> StoreMetrics(const LoadSummary& summary, const RunDescription& description);
std::vector<Finding> LoadFindings(const LoadSummary& summary);
std::string SummaryText(const RunDescription& description, const LoadSummary& summary);

}  // namespace cmax::endpoint
