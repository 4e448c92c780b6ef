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
  io.env = [](const std::string& name) { return sys::GetEnv(name.c_str()); };
  io.hooks.interrupted = [] { return sys::Interrupted(); };
  if (!ctx.global.quiet && (sys::StderrIsTerminal() || ctx.global.verbosity > 0)) {
    io.hooks.progress = [&ctx](const endpoint::LoadProgress& p) {
      ctx.err << fmt::format("{:7.1f} s  sent {}  done {}  failed {}  in flight {}\n", p.elapsed_s,
                             p.sent, p.done, p.failed, p.in_flight);
    };
  }
  io.interrupt_signal = [] { return sys::InterruptSignal(); };
  io.note = [&ctx](std::string_view line) { ctx.err << line << "\n"; };
  io.table = [&ctx](std::string_view line) { ctx.out << line << std::flush; };
  io.write_output = [&ctx](const std::string& path, std::string_view text) {
    return WriteOutput(ctx, path, text);
  };
  return io;
}

int ServeSim(Context& ctx, const SimFlags& o) {
  sys::RaiseOpenFileLimit();
  return PrintText(ctx, "cmax endpoint serve-sim",
                   endpoint::ServeSim(
                       o.listen, o.port, o.sim, o.duration_s, [] { return sys::Interrupted(); },
                       [&ctx](std::string_view line) { ctx.out << line << std::endl; }));
}

void AddTargetFlags(CLI::App* app, endpoint::TargetOptions& o) {
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

void AddPaceFlags(CLI::App* app, endpoint::PaceOptions& o, bool concurrency) {
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

void AddWorkloadFlags(CLI::App* app, endpoint::WorkloadOptions& o) {
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
  sweep_app->add_option("--levels", sweep->sweep.levels, "Concurrency levels (default powers of 2)")
      ->check(Whole(1, kMaxStreams))
      ->delimiter(',');
  sweep_app
      ->add_option("--max-concurrency", sweep->sweep.max_concurrency, "Highest power-of-2 level")
      ->check(Whole(1, kMaxStreams))
      ->capture_default_str();

  auto replay = std::make_shared<ReplayFlags>();
  CLI::App* r = app->add_subcommand("replay", "Replay a Mooncake-style trace at its timestamps");
  r->add_option("TRACE", replay->replay.trace,
                "JSONL: timestamp (ms), input_length, output_length, hash_ids")
      ->required();
  AddTargetFlags(r, replay->target);
  r->add_option("--concurrency", replay->pace.concurrency, "Cap on requests in flight (0: none)")
      ->check(Whole(0, kMaxStreams));
  r->add_option("--requests", replay->pace.requests, "Stop after this many requests")
      ->check(Whole(1, kMaxCount));
  r->add_option("--duration", replay->pace.duration_s, "Stop sending after this many seconds")
      ->check(SecondsIn());
  r->add_option("--trace-block", replay->replay.block_tokens, "Tokens per hash_id block")
      ->check(Whole(1, 1 << 20))
      ->capture_default_str();
  r->add_option("--speedup", replay->replay.speedup, "Divide the trace's gaps by this")
      ->check(Positive(1e6))
      ->capture_default_str();
  r->add_option("--copies", replay->replay.copies,
                "Copies of the trace replayed at once, each with its own marker")
      ->check(Whole(1, 1000))
      ->capture_default_str();
  r->add_flag("--no-marker", replay->replay.no_marker,
              "No per-replay marker (copies then share cache)");
  r->add_option("--warmup", replay->pace.warmup, "Requests sent first and not counted")
      ->check(Whole(0, kMaxCount));

  auto sim = std::make_shared<SimFlags>();
  CLI::App* serve_sim = app->add_subcommand(
      "serve-sim", "A simulated OpenAI/Anthropic-compatible streaming server (a stand-in)");
  CLI::App* s = serve_sim;
  SimFlags* o = sim.get();
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
  s->add_option("--duration", o->duration_s, "Stop after this many seconds (0: at Ctrl-C)")
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
