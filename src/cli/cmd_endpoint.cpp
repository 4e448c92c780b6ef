// `cmax endpoint`: load-tests an inference endpoint (OpenAI chat/completions or Anthropic
// messages, streaming) and records latency, throughput, errors, cache hit rate and cost.
//   run       one load run (fixed concurrency, or a request rate with burstiness)
//   sweep     the same at rising concurrency (1, 2, 4 ... N): throughput against latency
//   replay    a Mooncake-style trace at its own timestamps, with the ideal cache hit rate
//   serve-sim a simulated OpenAI/Anthropic-compatible streaming server (a stand-in for tests,
//             demos and the lab)
// API keys come from the environment or a file and go only into request headers: never
// printed, logged or stored.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sys/resource.h>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/numbers.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "endpoint/load.hpp"
#include "endpoint/plan.hpp"
#include "endpoint/results.hpp"
#include "endpoint/sim_server.hpp"
#include "endpoint/workload.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/curl_library.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace cmax::cli {
namespace {

using endpoint::Api;

constexpr auto kMaxPromptWords = static_cast<int64_t>(endpoint::kMaxPromptTokens);

struct EndpointOptions {
  CLI::App* run = nullptr;
  CLI::App* sweep = nullptr;
  CLI::App* replay = nullptr;
  CLI::App* serve_sim = nullptr;
  // target
  std::string url;
  std::string endpoint_path;  // --endpoint
  std::string api = "chat";
  std::string model;
  std::string api_key_env;
  std::string api_key_file;
  std::vector<std::string> headers;
  std::string extra_body;
  bool no_stream = false;
  bool no_usage = false;
  bool ignore_eos = false;
  bool insecure = false;
  std::string cacert;
  bool http1 = false;
  std::string http_client = "cmax";
  double timeout_s = 600;
  double connect_timeout_s = 10;
  double idle_timeout_s = 0;
  int retries = 0;
  std::vector<std::string> goodput;
  std::string prices;
  std::string price_model;
  std::string output_file;
  std::string requests_file;
  std::string label = "cmax";
  uint64_t seed = 0;
  // workload
  uint64_t input_len = 1024;
  uint64_t output_len = 128;
  double range_ratio = 0;
  uint64_t prefix_len = 0;
  size_t turns = 1;
  std::string prompts;
  size_t cache_block = 16;
  // load
  size_t concurrency = 16;
  double rate = 0;
  double burstiness = 1;
  size_t requests = 0;
  double duration_s = 0;
  size_t warmup = 0;
  // sweep
  std::vector<size_t> levels;
  size_t max_concurrency = 1024;
  // replay
  std::string trace;
  size_t trace_block = 512;
  double speedup = 1;
  size_t copies = 1;
  bool no_marker = false;
  size_t replay_concurrency = 0;  // a trace sets its own pace: no cap unless asked
  // serve-sim
  std::string listen = "127.0.0.1";
  int port = 8000;
  endpoint::SimConfig sim;
  double sim_duration_s = 0;
};

// Open files: each stream is a socket; the soft limit (often 1024) would cap concurrency.
void RaiseFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

struct Prepared {
  endpoint::Target target;
  endpoint::EngineOptions engine_options;
  std::unique_ptr<endpoint::Engine> engine;  // one for every phase: connections are kept
  endpoint::Slo slo;
  std::optional<endpoint::Price> price;
  endpoint::RunDescription description;
  std::string key;  // taken out of what the run shows, should a server echo it
};

Result<Prepared> Prepare(const EndpointOptions& o) {
  Prepared p;
  auto api = endpoint::ParseApi(o.api);
  if (!api) return tl::unexpected(api.error());
  auto url = endpoint::EndpointUrl(o.url, *api, o.endpoint_path);
  if (!url) return tl::unexpected(url.error());
  p.target.api = *api;
  p.target.url = std::move(*url);
  // Where the results go is checked before the run, not found wrong after it.
  for (const std::string* path : {&o.output_file, &o.requests_file}) {
    if (path->empty() || *path == "-") continue;
    if (auto ok = sys::CheckOutputPath(*path); !ok) return tl::unexpected(ok.error());
  }
  // libcurl reads the URL (and carries https): a machine without it is told so, not told
  // that its URL is wrong.
  if (auto loaded = sys::LoadCurl(); !loaded) return tl::unexpected(loaded.error());
  // Before anything is sent: a URL the engine cannot read would fail every request as "dns".
  if (auto ok = endpoint::CheckUrl(p.target.url); !ok) {
    return Fail(ErrorCode::kInvalidArgument, "--url {}: {}",
                SanitizeUtf8(endpoint::ShownUrl(o.url)), ok.error().message);
  }
  sys::LocalFileSystem fs;
  auto key = endpoint::ApiKey({.file = o.api_key_file, .env = o.api_key_env}, *api, fs,
                              [](const std::string& name) { return sys::GetEnv(name.c_str()); });
  if (!key) return tl::unexpected(key.error());
  p.key = *key;
  auto headers = endpoint::RequestHeaders(*api, *key, o.headers);
  if (!headers) return tl::unexpected(headers.error());
  p.target.headers = std::move(*headers);
  p.target.body.model = o.model;
  p.target.body.stream = !o.no_stream;
  p.target.body.include_usage = !o.no_usage;
  p.target.body.ignore_eos = o.ignore_eos;
  if (!o.extra_body.empty()) {
    auto extra = nlohmann::json::parse(o.extra_body, nullptr, false);
    if (!extra.is_object())
      return Fail(ErrorCode::kInvalidArgument, "--extra-body is not a JSON object");
    p.target.body.extra = std::move(extra);
  }
  p.engine_options.insecure = o.insecure;
  p.engine_options.ca_file = o.cacert;
  p.engine_options.http2 = !o.http1;
  p.engine_options.http1_pool = o.http_client == "cmax";
  p.engine_options.timeout_s = o.timeout_s;
  p.engine_options.connect_timeout_s = o.connect_timeout_s;
  p.engine_options.idle_timeout_s = o.idle_timeout_s;
  auto slo = endpoint::ParseGoodput(o.goodput);
  if (!slo) return tl::unexpected(slo.error());
  p.slo = *slo;
  if (!o.prices.empty()) {
    auto text = sys::LocalFileSystem().ReadFile(o.prices, 16 << 20);
    if (!text) return Wrap(text.error(), "--prices");
    auto table = endpoint::ParsePrices(*text);
    if (!table) return Wrap(table.error(), o.prices);
    const std::string model = o.price_model.empty() ? o.model : o.price_model;
    const auto it = table->find(model);
    if (it == table->end()) {
      return Fail(ErrorCode::kInvalidArgument, "{} has no prices for model '{}' (--price-model)",
                  o.prices, model);
    }
    p.price = it->second;
  }
  auto engine = endpoint::Engine::Create(p.engine_options);
  if (!engine) return tl::unexpected(engine.error());
  p.engine = std::move(*engine);
  // DNS once, outside every request's timing; a name that does not resolve is left to fail
  // each request as "dns", so that every request still gets its outcome.
  if (!p.engine->PinAddress(p.target.url)) {
    log::Warn("cannot resolve the host of {}; requests will fail as dns",
              endpoint::ShownUrl(p.target.url));
  }
  p.description.label = o.label;
  p.description.url = endpoint::ShownUrl(p.target.url);
  p.description.model = o.model;
  p.description.api = *api;
  p.description.concurrency = o.concurrency;
  p.description.rate = o.rate;
  p.description.burstiness = o.burstiness;
  return p;
}

Result<std::unique_ptr<endpoint::Workload>> MakeWorkload(const EndpointOptions& o,
                                                         std::string& name) {
  if (!o.prompts.empty()) {
    name = "prompts " + o.prompts;
    return endpoint::ReadPromptFile(o.prompts, o.output_len, sys::Interrupted);
  }
  name = fmt::format("random input {} output {} range {} prefix {} turns {}", o.input_len,
                     o.output_len, o.range_ratio, o.prefix_len, o.turns);
  return endpoint::MakeRandomWorkload({.input_len = o.input_len,
                                       .output_len = o.output_len,
                                       .range_ratio = o.range_ratio,
                                       .prefix_len = o.prefix_len,
                                       .turns = o.turns,
                                       .seed = o.seed});
}

endpoint::LoadHooks Hooks(Context& ctx) {
  endpoint::LoadHooks hooks;
  hooks.interrupted = [] { return sys::Interrupted(); };
  if (!ctx.global.quiet && (sys::StderrIsTerminal() || ctx.global.verbosity > 0)) {
    hooks.progress = [&ctx](const endpoint::LoadProgress& p) {
      ctx.err << fmt::format("{:7.1f} s  sent {}  done {}  failed {}  in flight {}\n", p.elapsed_s,
                             p.sent, p.done, p.failed, p.in_flight);
    };
  }
  return hooks;
}

// One load run (after its warm-up): what happened, its summary, and the result document that
// the output file, the sweep's list and the store's evidence are all made from.
struct Measured {
  endpoint::LoadResult run;
  endpoint::LoadSummary summary;
  nlohmann::json result;
};

Result<Measured> Measure(Context& ctx, const EndpointOptions& o, Prepared& p,
                         endpoint::Workload& workload, endpoint::LoadShape shape) {
  const endpoint::LoadHooks hooks = Hooks(ctx);
  if (o.warmup > 0) {
    auto w = endpoint::RunLoad(*p.engine, p.target, workload,
                               endpoint::WarmupShape(shape, o.warmup), hooks);
    if (!w) return tl::unexpected(w.error());
    size_t failed = 0;
    for (const auto& r : w->records) failed += r.timing.ok ? 0 : 1;
    ctx.err << fmt::format("warm-up: {} requests ({} failed), not counted\n", w->records.size(),
                           failed);
  }
  auto run = endpoint::RunLoad(*p.engine, p.target, workload, shape, hooks);
  if (!run) return tl::unexpected(run.error());
  Measured m{std::move(*run), {}, {}};
  m.summary = endpoint::Summarize(m.run, p.slo, p.price);
  endpoint::RedactSecret(m.summary, p.key);
  m.result = endpoint::ResultJson(p.description, m.run, m.summary);
  return m;
}

Result<void> WriteOutputs(Context& ctx, const EndpointOptions& o, const Measured& m) {
  if (!o.output_file.empty()) {
    if (auto ok = WriteOutput(
            ctx, o.output_file,
            m.result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        !ok) {
      return ok;
    }
  }
  if (!o.requests_file.empty()) {
    std::string lines;
    for (const auto& r : m.run.records) lines += endpoint::RequestJsonl(r) + "\n";
    if (auto ok = WriteOutput(ctx, o.requests_file, lines); !ok) return ok;
  }
  return {};
}

// The result without its per-request arrays: what the store keeps as evidence.
std::string EvidenceJson(const Measured& m) {
  nlohmann::json evidence = nlohmann::json::object();
  for (const auto& [key, value] : m.result.items()) {
    if (!value.is_array()) evidence[key] = value;  // every array is per request
  }
  return evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<store::RunWriter> BeginRun(store::Store& store, const std::string& target) {
  return store::RunWriter::Begin(store, {.command = "endpoint",
                                         .target = target,
                                         .host = sys::Hostname(),
                                         .started_at = SystemClock().Now(),
                                         .cmax_version = VersionString(),
                                         .pid = ::getpid()});
}

int Fails(Context& ctx, const char* command, const Error& error) {
  ctx.err << "cmax endpoint " << command << ": " << error.message << "\n";
  return error.code == ErrorCode::kInvalidArgument || error.code == ErrorCode::kNotFound
             ? kExitUsage
             : kExitError;
}

// The load shape the options ask for, at one concurrency and request count.
endpoint::LoadShape ShapeOf(const EndpointOptions& o, size_t concurrency, size_t requests) {
  endpoint::LoadShape shape;
  shape.concurrency = concurrency;
  shape.rate = o.rate;
  shape.burstiness = o.burstiness;
  shape.requests = requests;
  shape.duration_s = o.duration_s;
  shape.retries = o.retries;
  shape.cache_block_tokens = o.cache_block;
  shape.seed = o.seed;
  return shape;
}

int RunOrReplay(Context& ctx, EndpointOptions& o, bool replay) {
  const char* command = replay ? "replay" : "run";
  RaiseFileLimit();
  auto prepared = Prepare(o);
  if (!prepared) return Fails(ctx, command, prepared.error());
  Prepared& p = *prepared;
  std::string workload_name;
  Result<std::unique_ptr<endpoint::Workload>> workload = tl::unexpected(Error{});
  endpoint::LoadShape shape = ShapeOf(o, o.concurrency, o.requests);
  if (replay) {
    const auto markers = endpoint::ReplayMarkers(o.copies, o.seed, o.no_marker);
    auto copies = endpoint::ReadTraceFile(
        o.trace, {.block_tokens = o.trace_block, .speedup = o.speedup}, markers, sys::Interrupted);
    if (!copies) return Fails(ctx, command, copies.error());
    workload = copies->size() == 1 ? std::move(copies->front())
                                   : endpoint::MergeByTime(std::move(*copies));
    workload_name = fmt::format("trace {} x{} speedup {}", o.trace, o.copies, o.speedup);
    shape.trace_times = true;
    shape.rate = 0;
    if (o.requests == 0 && o.duration_s <= 0) shape.requests = SIZE_MAX;  // the whole trace
  } else {
    workload = MakeWorkload(o, workload_name);
    if (!workload) return Fails(ctx, command, workload.error());
    if (shape.requests == 0 && shape.duration_s <= 0) shape.requests = 200;
  }
  p.description.workload = workload_name;

  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) return Fails(ctx, command, store.error());
  auto writer = BeginRun(*store, "endpoint/" + p.description.url);
  if (!writer) return Fails(ctx, command, writer.error());
  auto measured = Measure(ctx, o, p, **workload, shape);
  if (!measured) {
    (void)writer->FinishWithError(kExitError, SystemClock().Now());
    return Fails(ctx, command, measured.error());
  }
  if (auto ok = writer->Add({{"endpoint.result", EvidenceJson(*measured)}},
                            endpoint::LoadFindings(measured->summary),
                            endpoint::StoreMetrics(measured->summary, p.description));
      !ok) {
    return Fails(ctx, command, ok.error());
  }
  if (auto ok = WriteOutputs(ctx, o, *measured); !ok) {
    // The path was checked before the run: what fails now (a full disk) is not the user's.
    (void)writer->FinishWithError(kExitError, SystemClock().Now());
    ctx.err << "cmax endpoint " << command << ": " << ok.error().message << "\n";
    return kExitError;
  }
  auto outcome = writer->Finish(sys::InterruptSignal(), SystemClock().Now());
  if (!outcome) return Fails(ctx, command, outcome.error());
  ctx.out << endpoint::SummaryText(p.description, measured->summary);
  ctx.out << fmt::format("stored as run {}\n", writer->RunId());
  return outcome->exit_code;
}

int Sweep(Context& ctx, EndpointOptions& o) {
  RaiseFileLimit();
  auto prepared = Prepare(o);
  if (!prepared) return Fails(ctx, "sweep", prepared.error());
  Prepared& p = *prepared;
  auto levels = endpoint::SweepLevels(o.levels, o.max_concurrency);
  if (!levels) return Fails(ctx, "sweep", levels.error());
  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) return Fails(ctx, "sweep", store.error());
  auto writer = BeginRun(*store, "endpoint-sweep/" + p.description.url);
  if (!writer) return Fails(ctx, "sweep", writer.error());
  nlohmann::json all = nlohmann::json::array();
  ctx.out << fmt::format("{:>11} {:>9} {:>7} {:>10} {:>12} {:>10} {:>10} {:>10}\n", "CONCURRENCY",
                         "REQUESTS", "FAILED", "REQ/S", "OUT TOK/S", "TTFT P50", "TTFT P99",
                         "TPOT P50");
  std::vector<Finding> findings;
  for (const size_t c : *levels) {
    if (sys::Interrupted()) break;
    std::string name;
    auto workload = MakeWorkload(o, name);
    if (!workload) return Fails(ctx, "sweep", workload.error());
    p.description.workload = name;
    p.description.concurrency = c;
    const endpoint::LoadShape shape =
        ShapeOf(o, c, endpoint::SweepRequests(o.requests, o.duration_s, c));
    auto m = Measure(ctx, o, p, **workload, shape);
    if (!m) {
      (void)writer->FinishWithError(kExitError, SystemClock().Now());
      return Fails(ctx, "sweep", m.error());
    }
    const auto& x = m->summary.metrics;
    ctx.out << fmt::format("{:>11} {:>9} {:>7} {:>10.2f} {:>12.1f} {:>10.2f} {:>10.2f} {:>10.2f}\n",
                           c, x.completed + x.failed, x.failed, x.request_throughput,
                           x.output_throughput, x.ttft_chunk_ms.p50, x.ttft_chunk_ms.p99,
                           x.tpot_ms.p50);
    ctx.out.flush();
    for (Finding f : endpoint::LoadFindings(m->summary)) {
      f.check_id += fmt::format(".c{}", c);
      findings.push_back(std::move(f));
    }
    if (auto ok = writer->Add({{fmt::format("endpoint.sweep.c{}", c), EvidenceJson(*m)}}, {},
                              endpoint::StoreMetrics(m->summary, p.description));
        !ok) {
      return Fails(ctx, "sweep", ok.error());
    }
    all.push_back(std::move(m->result));
  }
  if (auto ok = writer->Add({}, findings); !ok) return Fails(ctx, "sweep", ok.error());
  if (!o.output_file.empty()) {
    if (auto ok =
            WriteOutput(ctx, o.output_file,
                        all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        !ok) {
      (void)writer->FinishWithError(kExitError, SystemClock().Now());
      ctx.err << "cmax endpoint sweep: " << ok.error().message << "\n";
      return kExitError;
    }
  }
  auto outcome = writer->Finish(sys::InterruptSignal(), SystemClock().Now());
  if (!outcome) return Fails(ctx, "sweep", outcome.error());
  ctx.out << fmt::format("stored as run {} (cmax report {} --format html draws the sweep)\n",
                         writer->RunId(), writer->RunId());
  return outcome->exit_code;
}

int ServeSim(Context& ctx, EndpointOptions& o) {
  RaiseFileLimit();
  for (const char c : o.sim.model) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 &&
        std::string_view("._-/:").find(c) == std::string_view::npos) {
      ctx.err << "cmax endpoint serve-sim: --model may hold letters, digits and . _ - / : only\n";
      return kExitUsage;
    }
  }
  auto server = endpoint::SimServer::Listen(fmt::format("{}:{}", o.listen, o.port), o.sim);
  if (!server) return Fails(ctx, "serve-sim", server.error());
  ctx.out << fmt::format("serve-sim listening on http://{}:{} (model {}; a simulated server)\n",
                         o.listen, (*server)->Port(), o.sim.model);
  ctx.out.flush();
  const auto stop_at = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(o.sim_duration_s));
  auto ran = (*server)->Run([&] {
    return sys::Interrupted() ||
           (o.sim_duration_s > 0 && std::chrono::steady_clock::now() >= stop_at);
  });
  if (!ran) return Fails(ctx, "serve-sim", ran.error());
  const endpoint::SimStats s = (*server)->Stats();
  ctx.out << fmt::format(
      "serve-sim: {} connections, {} requests, {} answered, {} tokens, {} of {} input tokens "
      "cached, most streams at once {}; closed {} idle, {} slow requests (408), {} not reading, "
      "{} refused past the connection limit\n",
      s.connections, s.requests, s.completed, s.tokens, s.cached_tokens, s.input_tokens,
      s.max_open_streams, s.closed_idle, s.closed_slow_request, s.closed_not_reading,
      s.refused_over_limit);
  return kExitOk;
}

void AddTargetFlags(CLI::App* app, EndpointOptions& o) {
  app->add_option("--url", o.url,
                  "Endpoint or base URL, as the OpenAI SDK takes it: http://HOST:PORT and "
                  "http://HOST:PORT/v1 get the API's path (/v1/chat/completions, "
                  "/v1/completions, /v1/messages); a URL ending in one is used as it is")
      ->required();
  app->add_option("--endpoint", o.endpoint_path,
                  "The API's path below --url instead of the usual one, as vLLM's benchmark "
                  "takes it (--url http://HOST:PORT --endpoint /generate)");
  app->add_option("--api", o.api, "chat | completions | anthropic")->capture_default_str();
  app->add_option("--model", o.model, "Model name sent in each request")->required();
  app->add_option("--api-key-env", o.api_key_env,
                  "Environment variable holding the API key (default OPENAI_API_KEY, or "
                  "ANTHROPIC_API_KEY for --api anthropic); never printed or stored");
  app->add_option("--api-key-file", o.api_key_file, "File holding the API key instead");
  app->add_option("--header", o.headers, "Extra request header 'Name: value' (repeatable)");
  app->add_option("--extra-body", o.extra_body, "JSON object merged into every request body");
  app->add_flag("--no-stream", o.no_stream, "Ask for whole responses instead of streams");
  app->add_flag("--no-usage", o.no_usage, "Do not ask for stream_options.include_usage");
  app->add_flag("--ignore-eos", o.ignore_eos, "Send ignore_eos (vLLM/SGLang): exactly max tokens");
  app->add_flag("--insecure", o.insecure, "Do not verify TLS certificates (verified by default)");
  app->add_option("--cacert", o.cacert, "CA bundle to verify the server with");
  app->add_flag("--http1.1", o.http1, "No HTTP/2 (offered by ALPN on https by default)");
  app->add_option("--http-client", o.http_client,
                  "What carries plain http:// requests: cmax (its own HTTP/1.1 connections, "
                  "the cheapest per token) or libcurl (as https always is)")
      ->check(CLI::IsMember({"cmax", "libcurl"}))
      ->capture_default_str();
  app->add_option("--timeout", o.timeout_s, "Seconds a request may take in all (0: no limit)")
      ->check(SecondsIn(kMaxSeconds, /*zero_means_none=*/true))
      ->capture_default_str();
  app->add_option("--connect-timeout", o.connect_timeout_s, "Seconds to connect (0: no limit)")
      ->check(SecondsIn(kMaxSeconds, /*zero_means_none=*/true))
      ->capture_default_str();
  app->add_option("--idle-timeout", o.idle_timeout_s,
                  "Seconds without a byte before a request times out (0: off)")
      ->check(SecondsIn(kMaxSeconds, /*zero_means_none=*/true));
  app->add_option("--retries", o.retries,
                  "Retry 408/409/429/5xx/connect/timeout like the OpenAI SDK (off when measuring)")
      ->check(Whole(0, 100))
      ->capture_default_str();
  app->add_option("--goodput", o.goodput, "SLOs for goodput: ttft:MS tpot:MS e2el:MS");
  app->add_option("--prices", o.prices, "Price table (cmax.prices/v1 JSON) for the run's cost");
  app->add_option("--price-model", o.price_model, "Model to price as (default --model)");
  app->add_option("--output-file", o.output_file,
                  "Result JSON with vLLM's benchmark keys plus cmax's under \"cmax\"");
  app->add_option("--requests-file", o.requests_file, "One JSON line per request");
  app->add_option("--label", o.label, "Label in the result file")->capture_default_str();
  app->add_option("--seed", o.seed, "Seed for prompts and arrival times")
      ->check(AnyUnsigned())
      ->capture_default_str();
  app->add_option("--cache-block", o.cache_block,
                  "Block size (tokens) for the ideal cache hit rate")
      ->check(Whole(1, 1 << 20))
      ->capture_default_str();
}

void AddLoadFlags(CLI::App* app, EndpointOptions& o, bool concurrency) {
  if (concurrency) {
    app->add_option("--concurrency", o.concurrency, "Requests in flight at most (0: no cap)")
        ->check(Whole(0, kMaxStreams))
        ->capture_default_str();
  }
  app->add_option("--rate", o.rate, "Conversations started per second (0: as fast as allowed)")
      ->check(Real(0, 1e6));
  app->add_option("--burstiness", o.burstiness, "Gamma shape of arrival gaps (1: Poisson)")
      ->check(Positive(1e6))
      ->capture_default_str();
  app->add_option("--requests", o.requests, "Requests to send (default 200 with no --duration)")
      ->check(Whole(1, kMaxCount));
  app->add_option("--duration", o.duration_s, "Seconds to keep sending")->check(SecondsIn());
  app->add_option("--warmup", o.warmup, "Requests sent first and not counted")
      ->check(Whole(0, kMaxCount));
}

void AddWorkloadFlags(CLI::App* app, EndpointOptions& o) {
  app->add_option("--input-len", o.input_len, "Words per random prompt (≈ tokens)")
      ->check(Whole(1, kMaxPromptWords))
      ->capture_default_str();
  app->add_option("--output-len", o.output_len, "Max tokens per answer")
      ->check(Whole(1, kMaxPromptWords))
      ->capture_default_str();
  app->add_option("--range-ratio", o.range_ratio, "Lengths uniform in [L(1-r), L(1+r)], r < 1")
      ->check(Real(0, 0.999))
      ->capture_default_str();
  app->add_option("--prefix-len", o.prefix_len, "Words of a prefix every prompt shares")
      ->check(Whole(0, kMaxPromptWords));
  app->add_option("--turns", o.turns, "Turns per conversation; each resends the history")
      ->check(Whole(1, 1000))
      ->capture_default_str();
  app->add_option("--prompts", o.prompts,
                  "JSONL prompts: {\"prompt\"|\"messages\"|\"turns\", \"max_tokens\"}");
}

}  // namespace

Command SetupEndpointCommand(CLI::App& parent) {
  auto o = std::make_shared<EndpointOptions>();
  CLI::App* app = parent.add_subcommand(
      "endpoint",
      "Load-test an inference endpoint: latency (TTFT, TPOT, ITL, E2E), throughput, errors,\n"
      "prompt-cache hit rate and cost; or serve a simulated endpoint (serve-sim)");
  app->require_subcommand(1);
  o->run = app->add_subcommand("run", "One load run at a fixed concurrency or request rate");
  AddTargetFlags(o->run, *o);
  AddLoadFlags(o->run, *o, true);
  AddWorkloadFlags(o->run, *o);
  o->sweep = app->add_subcommand("sweep", "Load runs at concurrency 1, 2, 4 ... N");
  AddTargetFlags(o->sweep, *o);
  AddLoadFlags(o->sweep, *o, false);
  AddWorkloadFlags(o->sweep, *o);
  o->sweep->add_option("--levels", o->levels, "Concurrency levels (default powers of 2)")
      ->check(Whole(1, kMaxStreams))
      ->delimiter(',');
  o->sweep->add_option("--max-concurrency", o->max_concurrency, "Highest power-of-2 level")
      ->check(Whole(1, kMaxStreams))
      ->capture_default_str();
  o->replay = app->add_subcommand("replay", "Replay a Mooncake-style trace at its timestamps");
  o->replay
      ->add_option("TRACE", o->trace,
                   "JSONL: timestamp (ms), input_length, output_length, hash_ids")
      ->required();
  AddTargetFlags(o->replay, *o);
  o->replay
      ->add_option("--concurrency", o->replay_concurrency, "Cap on requests in flight (0: none)")
      ->check(Whole(0, kMaxStreams));
  o->replay->add_option("--requests", o->requests, "Stop after this many requests")
      ->check(Whole(1, kMaxCount));
  o->replay->add_option("--duration", o->duration_s, "Stop sending after this many seconds")
      ->check(SecondsIn());
  o->replay->add_option("--trace-block", o->trace_block, "Tokens per hash_id block")
      ->check(Whole(1, 1 << 20))
      ->capture_default_str();
  o->replay->add_option("--speedup", o->speedup, "Divide the trace's gaps by this")
      ->check(Positive(1e6))
      ->capture_default_str();
  o->replay
      ->add_option("--copies", o->copies,
                   "Copies of the trace replayed at once, each with its own marker")
      ->check(Whole(1, 1000))
      ->capture_default_str();
  o->replay->add_flag("--no-marker", o->no_marker,
                      "No per-replay marker (copies then share cache)");
  o->replay->add_option("--warmup", o->warmup, "Requests sent first and not counted")
      ->check(Whole(0, kMaxCount));
  o->serve_sim = app->add_subcommand(
      "serve-sim", "A simulated OpenAI/Anthropic-compatible streaming server (a stand-in)");
  CLI::App* s = o->serve_sim;
  s->add_option("--port", o->port, "Port (0: any free one)")
      ->check(Whole(0, 65535))
      ->capture_default_str();
  s->add_option("--listen", o->listen, "Address to listen on")->capture_default_str();
  s->add_option("--model", o->sim.model, "Model name it reports")->capture_default_str();
  s->add_option("--base-ms", o->sim.base_ms, "Fixed delay before prefill")
      ->check(Real(0, endpoint::kMaxSimDelayMs));
  s->add_option("--prefill-us-per-token", o->sim.prefill_us_per_token,
                "Prefill time per uncached input token")
      ->check(Real(0, endpoint::kMaxSimPrefillUs));
  s->add_option("--decode-ms", o->sim.decode_ms, "Time per output token after the first")
      ->check(Real(0, endpoint::kMaxSimDelayMs));
  s->add_flag("--token-writes", o->sim.token_writes,
              "Send each token in its own write, streams taking turns like an engine step loop "
              "(with --decode-ms 0: as fast as the server can, one token per stream per turn)");
  s->add_option("--block-size", o->sim.block_tokens, "Prefix cache block (tokens)")
      ->check(Whole(1, 1 << 20))
      ->capture_default_str();
  s->add_option("--cache-blocks", o->sim.cache_blocks,
                "Prefix cache capacity in blocks (LRU; 0: no cache)")
      ->check(Whole(0, 1 << 26))
      ->capture_default_str();
  s->add_option("--max-tokens", o->sim.default_max_tokens,
                "Answer length when a request gives none")
      ->check(Whole(1, kMaxPromptWords))
      ->capture_default_str();
  s->add_option("--fault-429", o->sim.rate_429, "Share of requests answered 429 (with Retry-After)")
      ->check(Share());
  s->add_option("--fault-500", o->sim.rate_500, "Share answered 500")->check(Share());
  s->add_option("--fault-cut", o->sim.rate_cut, "Share whose stream is cut half-way")
      ->check(Share());
  s->add_option("--fault-error-event", o->sim.rate_error_event,
                "Share given an error event after 200")
      ->check(Share());
  s->add_option("--fault-slow-start", o->sim.rate_slow_start, "Share whose first token is late")
      ->check(Share());
  s->add_option("--retry-after", o->sim.retry_after_s, "Retry-After seconds on 429")
      ->check(Real(0, endpoint::kMaxSimSeconds))
      ->capture_default_str();
  s->add_option("--slow-start-ms", o->sim.slow_start_ms, "Extra delay of a slow start")
      ->check(Real(0, endpoint::kMaxSimDelayMs))
      ->capture_default_str();
  s->add_option("--trickle-ms", o->sim.trickle_ms, "Gap between bytes of a trickled answer")
      ->check(Real(0, endpoint::kMaxSimDelayMs))
      ->capture_default_str();
  s->add_option("--seed", o->sim.seed, "Seed for drawn faults")
      ->check(AnyUnsigned())
      ->capture_default_str();
  s->add_option("--duration", o->sim_duration_s, "Stop after this many seconds (0: at Ctrl-C)")
      ->check(SecondsIn(kMaxSeconds, /*zero_means_none=*/true));
  s->add_option("--header-timeout", o->sim.header_timeout_s,
                "Seconds a request may take to arrive whole after its first byte (then 408)")
      ->check(SecondsIn(endpoint::kMaxSimSeconds))
      ->capture_default_str();
  s->add_option("--idle-timeout", o->sim.idle_timeout_s,
                "Seconds a connection may sit with no request, or not read its answer")
      ->check(SecondsIn(endpoint::kMaxSimSeconds))
      ->capture_default_str();
  s->add_option("--max-connections", o->sim.max_connections,
                "Connections held at once; more are answered 503 and closed")
      ->check(Whole(1, kMaxStreams))
      ->capture_default_str();
  s->footer(
      "Faults can also be asked per request with the header x-cmax-sim-fault: 429 | 500 | cut |\n"
      "error-event | slow-start | malformed-json | huge-line | no-done | http10 | byte-split |\n"
      "trickle | close-early.");
  return {app, [o](Context& ctx) {
            if (o->run->parsed()) return RunOrReplay(ctx, *o, false);
            if (o->replay->parsed()) {
              o->concurrency = o->replay_concurrency;
              return RunOrReplay(ctx, *o, true);
            }
            if (o->sweep->parsed()) return Sweep(ctx, *o);
            return ServeSim(ctx, *o);
          }};
}

}  // namespace cmax::cli
