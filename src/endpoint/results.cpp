#include "endpoint/results.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/strings.hpp"

namespace cmax::endpoint {
namespace {

using nlohmann::json;

// A client on more than this share of a core, or sending later than this, may be measuring
// itself: the result gets a warning.
constexpr double kBusyClient = 0.8;
constexpr double kLateMs = 10;

std::string PercentileKey(double p) {
  return p == static_cast<int>(p) ? fmt::format("p{}", static_cast<int>(p)) : fmt::format("p{}", p);
}

void PutDistribution(json& out, const std::string& name, const Distribution& d) {
  out["mean_" + name + "_ms"] = d.mean;
  out["median_" + name + "_ms"] = d.p50;
  out["std_" + name + "_ms"] = d.stddev;
  for (const auto& [p, v] : {std::pair{50.0, d.p50}, std::pair{90.0, d.p90}, std::pair{95.0, d.p95},
                             std::pair{99.0, d.p99}, std::pair{99.9, d.p999}}) {
    out[PercentileKey(p) + "_" + name + "_ms"] = v;
  }
}

json DistributionJson(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"stddev", d.stddev}, {"min", d.min},
          {"max", d.max},     {"p50", d.p50},   {"p90", d.p90},       {"p95", d.p95},
          {"p99", d.p99},     {"p99.9", d.p999}};
}

}  // namespace

LoadSummary Summarize(const LoadResult& run, const Slo& slo, const std::optional<Price>& price) {
  LoadSummary s;
  std::vector<RequestTiming> timings;
  std::vector<double> lateness;
  std::vector<double> lag;
  timings.reserve(run.records.size());
  for (const RequestRecord& r : run.records) {
    timings.push_back(r.timing);
    lateness.push_back(r.lateness_ms);
    if (r.server_lag_ms) lag.push_back(*r.server_lag_ms);
    if (r.timing.ok && r.usage) s.usage += *r.usage;
  }
  s.metrics = Summarize(timings, run.duration_s, slo);
  s.measured_hit_rate = CacheHitRate(s.usage);
  s.ideal_hit_rate = run.ideal.Rate();
  if (price) s.cost_usd = Cost(s.usage, *price);
  s.lateness_ms = Distribute(std::move(lateness));
  s.server_lag_ms = Distribute(std::move(lag));
  s.client_cpu_s = run.client_cpu_s;
  if (run.duration_s >= kMinCpuWindowS) s.client_cpu_share = run.client_cpu_s / run.duration_s;
  s.cpu_us_per_output_token =
      s.metrics.output_tokens > 0
          ? run.client_cpu_s * 1e6 / static_cast<double>(s.metrics.output_tokens)
          : 0;
  s.max_in_flight = run.max_in_flight;
  s.retries = run.retries;
  if (s.client_cpu_share && *s.client_cpu_share > kBusyClient) {
    s.warnings.push_back(
        fmt::format("the client used {:.0f}% of a core: it may be slowing what it measures",
                    *s.client_cpu_share * 100));
  }
  const RequestRecord* first = nullptr;
  for (const RequestRecord& r : run.records) {
    if (Completed(r.timing)) continue;
    ++s.failed;
    if (first == nullptr || r.index < first->index) first = &r;
  }
  if (first != nullptr) s.first_failure = FailureText(*first);
  if (s.lateness_ms.count > 0 && s.lateness_ms.p99 > kLateMs) {
    s.warnings.push_back(fmt::format(
        "requests left up to {:.1f} ms late (p99) against their schedule: the client may be "
        "distorting the load",
        s.lateness_ms.p99));
  }
  if (run.interrupted) s.warnings.push_back("the run was interrupted; figures cover part of it");
  return s;
}

json ResultJson(const RunDescription& d, const LoadResult& run, const LoadSummary& s) {
  const RunMetrics& m = s.metrics;
  json out;
  // vLLM's keys (vllm/benchmarks/serve.py), so its plotting scripts read this file.
  out["backend"] = d.api == Api::kAnthropic ? "anthropic" : "openai-chat";
  if (d.api == Api::kCompletions) out["backend"] = "openai";
  out["label"] = d.label;
  out["model_id"] = d.model;
  out["num_prompts"] = run.records.size();
  out["request_rate"] = d.rate > 0 ? json(d.rate) : json("inf");
  out["burstiness"] = d.burstiness;
  out["max_concurrency"] = d.concurrency > 0 ? json(d.concurrency) : json(nullptr);
  out["duration"] = m.duration_s;
  out["completed"] = m.completed;
  out["failed"] = m.failed;
  out["total_input_tokens"] = m.input_tokens;
  out["total_output_tokens"] = m.output_tokens;
  out["request_throughput"] = m.request_throughput;
  out["request_goodput"] = m.goodput;
  out["output_throughput"] = m.output_throughput;
  out["total_token_throughput"] = m.total_token_throughput;
  out["max_concurrent_requests"] = run.max_in_flight;
  json input_lens = json::array(), output_lens = json::array(), ttfts = json::array(),
       itls = json::array(), latencies = json::array(), start_times = json::array(),
       errors = json::array();
  for (const RequestRecord& r : run.records) {
    const RequestTiming& t = r.timing;
    input_lens.push_back(t.input_tokens > 0 ? t.input_tokens : r.prompt_words);
    output_lens.push_back(t.output_tokens);
    const bool ok = t.ok && t.first_chunk_s && !t.chunk_s.empty();
    ttfts.push_back(ok ? *t.first_chunk_s - t.sent_s : 0.0);
    json gaps = json::array();
    for (size_t i = 1; ok && i < t.chunk_s.size(); ++i)
      gaps.push_back(t.chunk_s[i] - t.chunk_s[i - 1]);
    itls.push_back(std::move(gaps));
    latencies.push_back(ok ? t.chunk_s.back() - t.sent_s : 0.0);
    start_times.push_back(t.sent_s);
    errors.push_back(t.ok ? std::string()
                          : fmt::format("{}: {}", ErrorClassName(t.error), r.error_message));
  }
  out["input_lens"] = std::move(input_lens);
  out["output_lens"] = std::move(output_lens);
  out["ttfts"] = std::move(ttfts);
  out["itls"] = std::move(itls);
  out["latencies"] = std::move(latencies);
  out["start_times"] = std::move(start_times);
  out["errors"] = std::move(errors);
  PutDistribution(out, "ttft", m.ttft_chunk_ms);
  PutDistribution(out, "tpot", m.tpot_ms);
  PutDistribution(out, "itl", m.itl_ms);
  PutDistribution(out, "e2el", m.e2e_ms);
  // cmax's own, with the formulas in the README ("Metrics").
  json ours;
  ours["schema"] = "cmax.endpoint.result/v1";
  ours["url"] = d.url;
  ours["api"] = ApiName(d.api);
  ours["workload"] = d.workload;
  ours["ttft_first_byte_ms"] = DistributionJson(m.ttft_byte_ms);
  ours["ttft_first_chunk_ms"] = DistributionJson(m.ttft_chunk_ms);
  ours["ttft_first_token_ms"] = DistributionJson(m.ttft_token_ms);
  ours["tpot_ms"] = DistributionJson(m.tpot_ms);
  ours["itl_ms"] = DistributionJson(m.itl_ms);
  ours["e2e_ms"] = DistributionJson(m.e2e_ms);
  ours["errors"] = m.errors;
  ours["error_rate"] =
      run.records.empty() ? 0.0
                          : static_cast<double>(m.failed) / static_cast<double>(run.records.size());
  ours["retries"] = s.retries;
  std::map<std::string, size_t> versions;
  for (const RequestRecord& r : run.records) {
    if (!r.http_version.empty()) ++versions[r.http_version];
  }
  ours["http_versions"] = versions;
  ours["usage"] = {{"input_tokens", s.usage.input},
                   {"cache_read_tokens", s.usage.cache_read},
                   {"cache_write_tokens", s.usage.cache_write},
                   {"output_tokens", s.usage.output}};
  ours["cache_hit_rate"] = s.measured_hit_rate;
  ours["ideal_cache_hit_rate"] = s.ideal_hit_rate;
  ours["cost_usd"] = s.cost_usd ? json(*s.cost_usd) : json(nullptr);
  ours["client"] = {
      {"cpu_s", s.client_cpu_s},
      {"cpu_share_of_core", s.client_cpu_share ? json(*s.client_cpu_share) : json(nullptr)},
      {"cpu_us_per_output_token", s.cpu_us_per_output_token},
      {"send_lateness_ms", DistributionJson(s.lateness_ms)},
      {"warnings", s.warnings}};
  if (s.server_lag_ms.count > 0)
    ours["ttft_error_vs_server_ms"] = DistributionJson(s.server_lag_ms);
  out["cmax"] = std::move(ours);
  return out;
}

std::string RequestJsonl(const RequestRecord& r) {
  const RequestTiming& t = r.timing;
  const auto since = [&t](const std::optional<double>& at) {
    return at ? json((*at - t.sent_s) * 1000) : json(nullptr);
  };
  json line = {
      {"index", r.index},
      {"conversation", r.conversation},
      {"turn", r.turn},
      {"attempt", r.attempt},
      {"sent_s", t.sent_s},
      {"due_s", r.due_s},
      {"lateness_ms", r.lateness_ms},
      {"ok", t.ok},
      {"error", t.error == ErrorClass::kNone ? json(nullptr) : json(ErrorClassName(t.error))},
      {"error_message", r.error_message.empty() ? json(nullptr) : json(r.error_message)},
      {"http_status", r.http_status},
      {"http_version", r.http_version.empty() ? json(nullptr) : json(r.http_version)},
      {"ttft_first_byte_ms", since(t.first_byte_s)},
      {"ttft_first_chunk_ms", since(t.first_chunk_s)},
      {"ttft_first_token_ms", since(t.first_token_s)},
      {"e2e_ms", t.chunk_s.empty() ? json(nullptr) : json((t.chunk_s.back() - t.sent_s) * 1000)},
      {"chunks", t.chunk_s.size()},
      {"input_tokens", t.input_tokens},
      {"output_tokens", t.output_tokens},
      {"cached_tokens", t.cached_tokens},
      {"ideal_cached_tokens", r.ideal_cached_tokens}};
  if (r.server_lag_ms) line["ttft_error_vs_server_ms"] = *r.server_lag_ms;
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<Metric> StoreMetrics(const LoadSummary& s, const RunDescription& d) {
  const std::map<std::string, std::string> labels = {
      {"model", d.model},
      {"concurrency", std::to_string(d.concurrency)},
      {"rate", d.rate > 0 ? fmt::format("{}", d.rate) : "inf"}};
  const RunMetrics& m = s.metrics;
  std::vector<Metric> out = {
      {"endpoint.completed", labels, static_cast<double>(m.completed), "requests"},
      {"endpoint.failed", labels, static_cast<double>(m.failed), "requests"},
      {"endpoint.request_throughput", labels, m.request_throughput, "req/s"},
      {"endpoint.output_throughput", labels, m.output_throughput, "tok/s"},
      {"endpoint.total_token_throughput", labels, m.total_token_throughput, "tok/s"},
      {"endpoint.goodput", labels, m.goodput, "req/s"},
      {"endpoint.cache_hit_rate", labels, s.measured_hit_rate, "ratio"},
      {"endpoint.ideal_cache_hit_rate", labels, s.ideal_hit_rate, "ratio"},
      {"endpoint.client_cpu_us_per_token", labels, s.cpu_us_per_output_token, "us"},
  };
  // Latencies only where something was timed: with no request completed a p50 of 0 ms would
  // read as the fastest endpoint there is.
  const auto latency = [&](const char* name, const Distribution& x, double value) {
    if (x.count > 0) out.push_back({name, labels, value, "ms"});
  };
  latency("endpoint.ttft_p50", m.ttft_chunk_ms, m.ttft_chunk_ms.p50);
  latency("endpoint.ttft_p99", m.ttft_chunk_ms, m.ttft_chunk_ms.p99);
  latency("endpoint.tpot_p50", m.tpot_ms, m.tpot_ms.p50);
  latency("endpoint.tpot_p99", m.tpot_ms, m.tpot_ms.p99);
  latency("endpoint.itl_p99", m.itl_ms, m.itl_ms.p99);
  latency("endpoint.e2e_p50", m.e2e_ms, m.e2e_ms.p50);
  latency("endpoint.e2e_p99", m.e2e_ms, m.e2e_ms.p99);
  if (s.cost_usd) out.push_back({"endpoint.cost", labels, *s.cost_usd, "USD"});
  // How much of what a prefix cache could have reused for this workload it did, which the
  // rubric scores; none when the workload repeats no prefix (nothing to reuse, nothing shown),
  // or when no answer said what its cache did (no request completed, or a server that gives
  // no cache counter): unknown, never "caches nothing".
  if (s.ideal_hit_rate > 0 && s.usage.input > 0 && s.usage.cache_reported) {
    out.push_back({"endpoint.cache_hit_of_ideal", labels,
                   std::min(1.0, s.measured_hit_rate / s.ideal_hit_rate), "ratio"});
  }
  // The share of requests that failed, which the rubric scores; none when nothing was sent.
  if (const size_t sent = m.completed + m.failed; sent > 0) {
    out.push_back({"endpoint.error_ratio", labels,
                   static_cast<double>(m.failed) / static_cast<double>(sent), "ratio"});
  }
  for (const auto& [error_class, count] : m.errors) {
    auto l = labels;
    l["class"] = error_class;
    out.push_back({"endpoint.errors", l, static_cast<double>(count), "requests"});
  }
  return out;
}

std::string FailureText(const RequestRecord& r) {
  // The engine words an HTTP error "HTTP 404: <start of the body>"; shown with its version.
  const std::string prefix = fmt::format("HTTP {}: ", r.http_status);
  std::string text;
  if (r.http_status != 0 && r.error_message.starts_with(prefix)) {
    text = fmt::format("HTTP/{} {}: {}", r.http_version.empty() ? "1.1" : r.http_version,
                       r.http_status, r.error_message.substr(prefix.size()));
  } else if (r.timing.ok) {
    // Answered 200 without a single choice chunk: as the metrics count it.
    text = "empty-stream: the answer carried no completion";
  } else {
    text = fmt::format("{}: {}", ErrorClassName(r.timing.error), r.error_message);
  }
  // One line, of a length a terminal shows: a body can be anything.
  constexpr size_t kShown = 300;
  const bool cut = text.size() > kShown;
  text = SanitizeUtf8(cut ? text.substr(0, kShown) : text) + (cut ? "..." : "");
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  ShowControlCharacters(text);
  return text;
}

namespace {

constexpr std::string_view kRedacted = "[redacted]";
// A secret cut where the engine cut the server's body: at least this much of its start is masked.
constexpr size_t kCutSecretMin = 8;

void MaskSecret(std::string& text, const std::string& secret) {
  for (size_t at = text.find(secret); at != std::string::npos;
       at = text.find(secret, at + kRedacted.size())) {
    text.replace(at, secret.size(), kRedacted);
  }
  // The engine keeps the start of an error body: a secret may end it, cut short.
  for (size_t n = std::min(secret.size() - 1, text.size()); n >= kCutSecretMin; --n) {
    if (std::string_view(text).ends_with(std::string_view(secret).substr(0, n))) {
      text.replace(text.size() - n, n, kRedacted);
      break;
    }
  }
}

// %2F as %2f, as some encoders write it; the text between escapes as it is.
std::string LowerHexEscapes(std::string percent_encoded) {
  for (size_t i = percent_encoded.find('%');
       i != std::string::npos && i + 2 < percent_encoded.size();
       i = percent_encoded.find('%', i + 3)) {
    percent_encoded.replace(i + 1, 2, ToLower(std::string_view(percent_encoded).substr(i + 1, 2)));
  }
  return percent_encoded;
}

// `text` inside a JSON string, as encoders write it: with non-ASCII as it is (nlohmann, serde,
// JavaScript) or as \uXXXX (Python's default); either with '/' as "\/" (PHP), or with '<', '>'
// and '&' as \u003c, \u003e, \u0026 (Go's default, against HTML injection).
std::vector<std::string> JsonStringForms(const std::string& text) {
  std::vector<std::string> forms;
  for (const bool ascii : {false, true}) {
    const std::string quoted =
        nlohmann::json(text).dump(-1, ' ', ascii, nlohmann::json::error_handler_t::replace);
    const std::string inner = quoted.substr(1, quoted.size() - 2);
    forms.push_back(inner);
    forms.push_back(ReplaceAll(inner, "/", "\\/"));
    forms.push_back(
        ReplaceAll(ReplaceAll(ReplaceAll(inner, "&", "\\u0026"), "<", "\\u003c"), ">", "\\u003e"));
  }
  return forms;
}

}  // namespace

Redactor::Redactor(const std::vector<std::string>& secrets) {
  // The longest first: "Bearer sk-1" before "sk-1", so the whole value goes at once.
  // A server may echo a secret as its JSON (escaped, as its encoder does it), or as it sits in
  // a URL's query (percent-encoded): those forms go too.
  for (const std::string& s : secrets) {
    if (s.size() < 4) continue;
    std::vector<std::string> forms = JsonStringForms(s);
    const std::string percent = PercentEncode(s);
    forms.push_back(percent);
    forms.push_back(LowerHexEscapes(percent));
    forms.insert(forms.begin(), s);
    for (std::string& form : forms) {
      if (std::ranges::find(forms_, form) == forms_.end()) forms_.push_back(std::move(form));
    }
  }
  std::ranges::sort(forms_, std::greater<>{}, &std::string::size);
}

void Redactor::Redact(RequestRecord& record) const {
  if (record.error_message.empty()) return;
  for (const std::string& form : forms_) MaskSecret(record.error_message, form);
}

void RedactSecrets(LoadResult& run, const std::vector<std::string>& secrets) {
  const Redactor redactor(secrets);
  for (RequestRecord& r : run.records) redactor.Redact(r);
}

namespace {

std::string CpuShareText(const std::optional<double>& share) {
  return share ? fmt::format("{:.0f}% of a core", *share * 100)
               : fmt::format("share not measured (run under {} s)", kMinCpuWindowS);
}

}  // namespace

std::vector<Finding> LoadFindings(const LoadSummary& s) {
  const RunMetrics& m = s.metrics;
  std::vector<Finding> out;
  Finding errors;
  errors.check_id = "endpoint.errors";
  const size_t total = m.completed + m.failed;
  errors.observed = fmt::format("{} of {} requests failed", m.failed, total);
  errors.expected = "every request completes";
  if (m.failed == 0 && total > 0) {
    errors.status = CheckStatus::kPass;
  } else if (total > 0 && m.completed == 0) {
    // Nothing was measured: a wrong URL, key or model, or a server that is down. The run fails
    // (exit 1) and says what the first answer was.
    errors.status = CheckStatus::kFail;
    errors.severity = Severity::kHigh;
    errors.message = "every request failed; the first: " + s.first_failure;
  } else {
    errors.status = CheckStatus::kWarn;
    errors.severity = Severity::kMedium;
    std::string classes;
    for (const auto& [c, n] : m.errors)
      classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", n, c);
    errors.message = total == 0 ? "no request was sent" : "failed requests by class: " + classes;
  }
  out.push_back(std::move(errors));
  Finding client;
  client.check_id = "endpoint.client";
  client.observed =
      fmt::format("client CPU {}, {:.2f} us per output token, send lateness p99 {:.2f} ms",
                  CpuShareText(s.client_cpu_share), s.cpu_us_per_output_token, s.lateness_ms.p99);
  client.expected =
      fmt::format("under {:.0f}% of a core and {:.0f} ms late", kBusyClient * 100, kLateMs);
  client.status = s.warnings.empty() ? CheckStatus::kPass : CheckStatus::kWarn;
  for (const std::string& w : s.warnings)
    client.message += (client.message.empty() ? "" : "; ") + w;
  out.push_back(std::move(client));
  return out;
}

std::string SummaryText(const RunDescription& d, const LoadSummary& s) {
  const RunMetrics& m = s.metrics;
  std::string out;
  out += fmt::format("endpoint {} ({} API), model {}\n", d.url, ApiName(d.api), d.model);
  out += fmt::format("  requests        {} completed, {} failed in {:.2f} s (max {} in flight)\n",
                     m.completed, m.failed, m.duration_s, s.max_in_flight);
  for (const auto& [c, n] : m.errors) out += fmt::format("    {:<14}{}\n", c, n);
  if (!s.first_failure.empty()) out += "  first failure   " + s.first_failure + "\n";
  out += fmt::format("  throughput      {:.2f} req/s, {:.1f} output tok/s, {:.1f} total tok/s\n",
                     m.request_throughput, m.output_throughput, m.total_token_throughput);
  out += fmt::format("  goodput         {:.2f} req/s\n", m.goodput);
  const auto row = [&out](const char* name, const Distribution& x) {
    if (x.count == 0) {
      out += fmt::format("  {:<16}none timed\n", name);
      return;
    }
    out += fmt::format(
        "  {:<16}mean {:>9.2f}  p50 {:>9.2f}  p90 {:>9.2f}  p99 {:>9.2f}  p99.9 {:>9.2f} ms\n",
        name, x.mean, x.p50, x.p90, x.p99, x.p999);
  };
  row("TTFT chunk", m.ttft_chunk_ms);
  row("TTFT byte", m.ttft_byte_ms);
  row("TTFT token", m.ttft_token_ms);
  row("TPOT", m.tpot_ms);
  row("ITL", m.itl_ms);
  row("E2E", m.e2e_ms);
  out += fmt::format("  tokens          {} in ({} cached), {} out\n", s.usage.input,
                     s.usage.cache_read, s.usage.output);
  out += fmt::format("  cache hit rate  {:.1f}% measured, {:.1f}% ideal for this workload\n",
                     s.measured_hit_rate * 100, s.ideal_hit_rate * 100);
  if (s.cost_usd) out += fmt::format("  cost            ${:.4f}\n", *s.cost_usd);
  out += fmt::format(
      "  client          {:.2f} CPU-s ({}), {:.2f} us per output token, lateness p99 {:.2f} ms\n",
      s.client_cpu_s, CpuShareText(s.client_cpu_share), s.cpu_us_per_output_token,
      s.lateness_ms.p99);
  if (s.server_lag_ms.count > 0) {
    out +=
        fmt::format("  TTFT error      p50 {:.3f} ms, p99 {:.3f} ms (vs serve-sim's send time)\n",
                    s.server_lag_ms.p50, s.server_lag_ms.p99);
  }
  for (const std::string& w : s.warnings) out += "  warning: " + w + "\n";
  return out;
}

}  // namespace cmax::endpoint
