// `cmax endpoint`: load-tests an inference endpoint (OpenAI chat/completions or Anthropic
// messages, streaming) and records latency, throughput, errors, cache hit rate and cost.
//   run       one load run (fixed concurrency, or a request rate with burstiness)
//   sweep     the same at rising concurrency (1, 2, 4 ... N): throughput against latency
//   replay    a Mooncake-style trace at its own timestamps, with the ideal cache hit rate
//   serve-sim a simulated OpenAI/Anthropic-compatible streaming server (a stand-in for tests,
//             demos and the lab)
// API keys come from the environment or a file and go only into request headers: never
// printed, logged or stored.
#include <CLI/CLI.hpp>
#include <chrono>
#include <fmt/format.h>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "endpoint/load_run.hpp"
#include "endpoint/sim_server.hpp"
#include "endpoint/workload.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace cmax::cli {
namespace {

using endpoint::Api;

constexpr auto kMaxPromptWords = static_cast<int64_t>(endpoint::kMaxPromptTokens);

// Each subcommand has its own options, made of the groups it has flags for.
struct RunFlags {
  endpoint::TargetOptions target;
  endpoint::WorkloadOptions workload;
  endpoint::PaceOptions pace;
};
struct SweepFlags {
  endpoint::TargetOptions target;
  endpoint::WorkloadOptions workload;
  endpoint::PaceOptions pace;
  endpoint::SweepOptions sweep;
};
struct ReplayFlags {
  endpoint::TargetOptions target;
  endpoint::ReplayOptions replay;
  endpoint::PaceOptions pace{.concurrency = 0};  // a trace sets its own pace: no cap unless asked
};
struct SimFlags {
  std::string listen = "127.0.0.1";
  int port = 8000;
  endpoint::SimConfig sim;
  double duration_s = 0;
};

// What a load run takes from this process: files, environment, Ctrl-C, the terminal.
endpoint::LoadRunIo Io(Context& ctx, sys::FileSystem& fs) {
  sys::RaiseOpenFileLimit();  // each stream is a socket; a soft limit of 1024 would cap them
  endpoint::LoadRunIo io;
  io.db_path = ctx.DbPath();
  io.cmax_version = VersionString();
  io.fs = &fs;
  io.env = sys::EnvironmentValue;
  io.hooks.interrupted = sys::Interrupted;
  if (!ctx.global.quiet && (sys::StderrIsTerminal() || ctx.global.verbosity > 0)) {
    io.hooks.progress = [&ctx](const endpoint::LoadProgress& p) {
      ctx.err << fmt::format("{:7.1f} s  sent {}  done {}  failed {}  in flight {}\n", p.elapsed_s,
                             p.sent, p.done, p.failed, p.in_flight);
    };
  }
  io.interrupt_signal = sys::InterruptSignal;
  io.note = [&ctx](std::string_view line) { ctx.err << line << "\n"; };
  io.table = [&ctx](std::string_view line) { ctx.out << line << std::flush; };
  io.write_output = [&ctx](const std::string& path, std::string_view text) {
    return WriteOutput(ctx, path, text);
  };
  io.open_growing = [&ctx](const std::string& path) { return OpenGrowingOutput(ctx, path); };
  return io;
}

int ServeSim(Context& ctx, const SimFlags& o) {
  sys::RaiseOpenFileLimit();
  return PrintText(
      ctx, "cmax endpoint serve-sim",
      endpoint::ServeSim(o.listen, o.port, o.sim, o.duration_s, sys::Interrupted,
                         [&ctx](std::string_view line) { ctx.out << line << std::endl; }));
}

void AddTargetFlags(CLI::App* app, endpoint::TargetOptions& o) {
  Opt(app, "--url", o.url,
      "Endpoint or base URL, as the OpenAI SDK takes it: http://HOST:PORT and "
      "http://HOST:PORT/v1 get the API's path (/v1/chat/completions, /v1/completions, "
      "/v1/messages); a URL ending in one is used as it is")
      ->required();
  Opt(app, "--endpoint", o.endpoint_path,
      "The API's path below --url instead of the usual one, as vLLM's benchmark takes it "
      "(--url http://HOST:PORT --endpoint /generate)");
  Opt(app, "--api", o.api, "chat | completions | anthropic");
  Opt(app, "--model", o.model, "Model name sent in each request")->required();
  Opt(app, "--api-key-env", o.api_key_env,
      "Environment variable holding the API key (default OPENAI_API_KEY, or ANTHROPIC_API_KEY "
      "for --api anthropic); never printed or stored");
  Opt(app, "--api-key-file", o.api_key_file, "File holding the API key instead");
  Repeated(app, "--header", o.headers,
           "Extra request header 'Name: value' (repeatable); a credential goes in "
           "--header-file instead, which ps does not show");
  Opt(app, "--header-file", o.header_file,
      "More request headers from a file, one 'Name: value' a line ('#' lines and blank ones "
      "skipped), e.g. a gateway's credential kept off the command line");
  Opt(app, "--extra-body", o.extra_body, "JSON object merged into every request body");
  Flag(app, "--no-stream", o.no_stream, "Ask for whole responses instead of streams");
  Flag(app, "--no-usage", o.no_usage, "Do not ask for stream_options.include_usage");
  Flag(app, "--ignore-eos", o.ignore_eos, "Send ignore_eos (vLLM/SGLang): exactly max tokens");
  Flag(app, "--insecure", o.insecure, "Do not verify TLS certificates (verified by default)");
  Opt(app, "--cacert", o.cacert, "CA bundle to verify the server with");
  Flag(app, "--http1.1", o.http1, "No HTTP/2 (offered by ALPN on https by default)");
  Choice(app, "--http-client", o.http_client, {"cmax", "libcurl"},
         "What carries plain http:// requests: cmax (its own HTTP/1.1 connections, the cheapest "
         "per token) or libcurl (as https always is)");
  const CLI::Validator seconds_or_none = SecondsIn(kMaxSeconds, /*zero_means_none=*/true);
  Num(app, "--timeout", o.timeout_s, seconds_or_none,
      "Seconds a request may take in all (0: no limit)");
  Num(app, "--connect-timeout", o.connect_timeout_s, seconds_or_none,
      "Seconds to connect (0: no limit)");
  Num(app, "--idle-timeout", o.idle_timeout_s, seconds_or_none,
      "Seconds without a byte before a request times out (0: off)");
  Num(app, "--retries", o.retries, Whole(0, 100),
      "Retry 408/409/429/5xx/connect/timeout like the OpenAI SDK (default 0: off, as a "
      "measurement should be)");
  Opt(app, "--goodput", o.goodput, "SLOs for goodput: ttft:MS tpot:MS e2el:MS");
  Opt(app, "--prices", o.prices, "Price table (cmax.prices/v1 JSON) for the run's cost");
  Opt(app, "--price-model", o.price_model, "Model to price as (default --model)");
  Opt(app, "--output-file", o.output_file,
      "Result JSON with vLLM's benchmark keys plus cmax's under \"cmax\"");
  Opt(app, "--requests-file", o.requests_file,
      "One JSON line per request, written as requests end (a killed run keeps those that "
      "ended); run and replay only, a sweep refuses it");
  Opt(app, "--label", o.label, "Label in the result file (vLLM's label key)");
  Num(app, "--seed", o.seed, AnyUnsigned(),
      "Seed for prompts and arrival times (default 0, as vLLM's benchmark: the same prompts "
      "every run, so a second run against one server may hit the first's prefix cache)");
  Num(app, "--cache-block", o.cache_block, Whole(1, 1 << 20),
      "Block size (tokens) for the ideal cache hit rate");
}

void AddPaceFlags(CLI::App* app, endpoint::PaceOptions& o, bool concurrency) {
  if (concurrency) {
    Num(app, "--concurrency", o.concurrency, Whole(0, kMaxStreams),
        "Requests in flight at most (0: no cap)");
  }
  Num(app, "--rate", o.rate, Real(0, 1e6),
      "Conversations started per second (0: as fast as allowed)");
  Num(app, "--burstiness", o.burstiness, Positive(1e6), "Gamma shape of arrival gaps (1: Poisson)");
  Num(app, "--requests", o.requests, Whole(1, kMaxCount),
      "Requests to send (default 200 with no --duration)");
  Num(app, "--duration", o.duration_s, SecondsIn(), "Seconds to keep sending");
  Num(app, "--warmup", o.warmup, Whole(0, kMaxCount), "Requests sent first and not counted");
}

void AddWorkloadFlags(CLI::App* app, endpoint::WorkloadOptions& o) {
  const CLI::Validator words = Whole(1, kMaxPromptWords);
  Num(app, "--input-len", o.input_len, words, "Words per random prompt (≈ tokens)");
  Num(app, "--output-len", o.output_len, words, "Max tokens per answer");
  Num(app, "--range-ratio", o.range_ratio, Real(0, 0.999),
      "Lengths uniform in [L(1-r), L(1+r)], r < 1");
  Num(app, "--prefix-len", o.prefix_len, Whole(0, kMaxPromptWords),
      "Words of a prefix every prompt shares");
  Num(app, "--turns", o.turns, Whole(1, 1000), "Turns per conversation; each resends the history");
  Opt(app, "--prompts", o.prompts,
      "JSONL prompts: {\"prompt\"|\"messages\"|\"turns\", \"max_tokens\"}");
}

}  // namespace

Command SetupEndpointCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "endpoint",
      "Load-test an inference endpoint: latency (TTFT, TPOT, ITL, E2E), throughput, errors,\n"
      "prompt-cache hit rate and cost; or serve a simulated endpoint (serve-sim)");
  app->require_subcommand(1);

  auto run = std::make_shared<RunFlags>();
  CLI::App* run_app =
      app->add_subcommand("run", "One load run at a fixed concurrency or request rate");
  AddTargetFlags(run_app, run->target);
  AddPaceFlags(run_app, run->pace, true);
  AddWorkloadFlags(run_app, run->workload);

  auto sweep = std::make_shared<SweepFlags>();
  CLI::App* sweep_app = app->add_subcommand("sweep", "Load runs at concurrency 1, 2, 4 ... N");
  AddTargetFlags(sweep_app, sweep->target);
  AddPaceFlags(sweep_app, sweep->pace, false);
  AddWorkloadFlags(sweep_app, sweep->workload);
  CLI::Option* levels =
      Opt(sweep_app, "--levels", sweep->sweep.levels, "Concurrency levels (default powers of 2)")
          ->check(Whole(1, kMaxStreams))
          ->delimiter(',');
  Num(sweep_app, "--max-concurrency", sweep->sweep.max_concurrency, Whole(1, kMaxStreams),
      "Highest power-of-2 level (instead of --levels)")
      ->excludes(levels);

  auto replay = std::make_shared<ReplayFlags>();
  CLI::App* r = app->add_subcommand("replay", "Replay a Mooncake-style trace at its timestamps");
  Opt(r, "TRACE", replay->replay.trace,
      "JSONL: timestamp (ms), input_length, output_length, hash_ids")
      ->required();
  AddTargetFlags(r, replay->target);
  endpoint::PaceOptions& pace = replay->pace;
  endpoint::ReplayOptions& trace = replay->replay;
  Num(r, "--concurrency", pace.concurrency, Whole(0, kMaxStreams),
      "Cap on requests in flight (0: none)");
  Num(r, "--requests", pace.requests, Whole(1, kMaxCount), "Stop after this many requests");
  Num(r, "--duration", pace.duration_s, SecondsIn(), "Stop sending after this many seconds");
  Num(r, "--trace-block", trace.block_tokens, Whole(1, 1 << 20), "Tokens per hash_id block");
  Num(r, "--speedup", trace.speedup, Positive(1e6), "Divide the trace's gaps by this");
  Num(r, "--copies", trace.copies, Whole(1, 1000),
      "Copies of the trace replayed at once, each with its own marker");
  Flag(r, "--no-marker", trace.no_marker, "No per-replay marker (copies then share cache)");
  Num(r, "--warmup", pace.warmup, Whole(0, kMaxCount), "Requests sent first and not counted");

  auto sim = std::make_shared<SimFlags>();
  CLI::App* s = app->add_subcommand(
      "serve-sim", "A simulated OpenAI/Anthropic-compatible streaming server (a stand-in)");
  endpoint::SimConfig& c = sim->sim;
  const CLI::Validator delay = Real(0, endpoint::kMaxSimDelayMs);
  Num(s, "--port", sim->port, Whole(0, 65535), "Port (0: any free one)");
  Opt(s, "--listen", sim->listen, "Address to listen on");
  Opt(s, "--model", c.model, "Model name it reports");
  Num(s, "--base-ms", c.base_ms, delay, "Fixed delay before prefill");
  Num(s, "--prefill-us-per-token", c.prefill_us_per_token, Real(0, endpoint::kMaxSimPrefillUs),
      "Prefill time per uncached input token");
  Num(s, "--decode-ms", c.decode_ms, delay, "Time per output token after the first");
  Flag(s, "--token-writes", c.token_writes,
       "Send each token in its own write, streams taking turns like an engine step loop (with "
       "--decode-ms 0: as fast as the server can, one token per stream per turn)");
  Num(s, "--block-size", c.block_tokens, Whole(1, 1 << 20), "Prefix cache block (tokens)");
  Num(s, "--cache-blocks", c.cache_blocks, Whole(0, 1 << 26),
      "Prefix cache capacity in blocks (LRU; 0: no cache)");
  Num(s, "--max-tokens", c.default_max_tokens, Whole(1, kMaxPromptWords),
      "Answer length when a request gives none");
  Num(s, "--fault-429", c.rate_429, Share(), "Share of requests answered 429 (with Retry-After)");
  Num(s, "--fault-500", c.rate_500, Share(), "Share answered 500");
  Num(s, "--fault-cut", c.rate_cut, Share(), "Share whose stream is cut half-way");
  Num(s, "--fault-error-event", c.rate_error_event, Share(),
      "Share given an error event after 200");
  Num(s, "--fault-slow-start", c.rate_slow_start, Share(), "Share whose first token is late");
  Num(s, "--retry-after", c.retry_after_s, Real(0, endpoint::kMaxSimSeconds),
      "Retry-After seconds on 429");
  Num(s, "--slow-start-ms", c.slow_start_ms, delay, "Extra delay of a slow start");
  Num(s, "--trickle-ms", c.trickle_ms, delay, "Gap between bytes of a trickled answer");
  Num(s, "--seed", c.seed, AnyUnsigned(), "Seed for drawn faults");
  Num(s, "--duration", sim->duration_s, SecondsIn(kMaxSeconds, /*zero_means_none=*/true),
      "Stop after this many seconds (0: at Ctrl-C)");
  const CLI::Validator sim_seconds = SecondsIn(endpoint::kMaxSimSeconds);
  Num(s, "--header-timeout", c.header_timeout_s, sim_seconds,
      "Seconds a request may take to arrive whole after its first byte (then 408)");
  Num(s, "--idle-timeout", c.idle_timeout_s, sim_seconds,
      "Seconds a connection may sit with no request, or not read its answer");
  Num(s, "--max-connections", c.max_connections, Whole(1, kMaxStreams),
      "Connections held at once; more are answered 503 and closed");
  s->footer(
      "Faults can also be asked per request with the header x-cmax-sim-fault: 429 | 500 | cut |\n"
      "error-event | slow-start | malformed-json | huge-line | no-done | http10 | byte-split |\n"
      "trickle | close-early.");
  return {app, [=](Context& ctx) {
            sys::LocalFileSystem fs;
            if (run_app->parsed()) {
              return PrintReport(
                  ctx, "cmax endpoint run",
                  endpoint::RunEndpoint(run->target, run->workload, run->pace, Io(ctx, fs)));
            }
            if (r->parsed()) {
              return PrintReport(ctx, "cmax endpoint replay",
                                 endpoint::ReplayEndpoint(replay->target, replay->replay,
                                                          replay->pace, Io(ctx, fs)));
            }
            if (sweep_app->parsed()) {
              return PrintReport(ctx, "cmax endpoint sweep",
                                 endpoint::SweepEndpoint(sweep->target, sweep->workload,
                                                         sweep->pace, sweep->sweep, Io(ctx, fs)));
            }
            return ServeSim(ctx, *sim);
          }};
}

}  // namespace cmax::cli
