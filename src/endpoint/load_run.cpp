#include "endpoint/load_run.hpp"

#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "endpoint/engine.hpp"
#include "endpoint/results.hpp"
#include "endpoint/workload.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/curl_library.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"

namespace cmax::endpoint {
namespace {

// Everything checked and built before the first request.
struct Prepared {
  Target target;
  EngineOptions engine_options;
  std::unique_ptr<Engine> engine;  // one for every phase: connections are kept
  Slo slo;
  std::optional<Price> price;
  RunDescription description;
  std::vector<std::string> secrets;  // taken out of what the run shows (RequestSecrets)
};

Result<Prepared> Prepare(const TargetOptions& o, const PaceOptions& pace, const LoadRunIo& io) {
  Prepared p;
  auto api = ParseApi(o.api);
  if (!api) return tl::unexpected(api.error());
  auto url = EndpointUrl(o.url, *api, o.endpoint_path);
  if (!url) return tl::unexpected(url.error());
  p.target.api = *api;
  p.target.url = std::move(*url);
  // Where the results go is checked before the run, not found wrong after it.
  for (const std::string* path : {&o.output_file, &o.requests_file}) {
    if (path->empty() || *path == "-") continue;
    if (auto ok = sys::CheckOutputPath(*path); !ok) return tl::unexpected(ok.error());
  }
  if (!o.output_file.empty() && o.output_file != "-" && !o.requests_file.empty() &&
      o.requests_file != "-" && !sys::FirstRepeatedFile({o.output_file, o.requests_file}).empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--output-file and --requests-file name the same file ({}): the requests would "
                "overwrite the results",
                SanitizeUtf8(o.output_file));
  }
  // The trust given is read now: libcurl would fail every request as "tls" for a file that is
  // missing or holds no certificate.
  if (!o.cacert.empty()) {
    auto pem = io.fs->ReadFile(o.cacert, 16 << 20);
    if (!pem) {
      return Fail(ErrorCode::kInvalidArgument, "--cacert {}: {}", SanitizeUtf8(o.cacert),
                  pem.error().message);
    }
    if (pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--cacert {}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)",
                  SanitizeUtf8(o.cacert));
    }
  }
  // libcurl reads the URL (and carries https): a machine without it is told so, not told
  // that its URL is wrong.
  if (auto loaded = sys::LoadCurl(); !loaded) return tl::unexpected(loaded.error());
  // Before anything is sent: a URL the engine cannot read would fail every request as "dns".
  if (auto ok = CheckUrl(p.target.url); !ok) {
    return Fail(ErrorCode::kInvalidArgument, "--url {}: {}", SanitizeUtf8(ShownUrl(o.url)),
                ok.error().message);
  }
  auto key = ApiKey({.file = o.api_key_file, .env = o.api_key_env}, *api, *io.fs, io.env);
  if (!key) return tl::unexpected(key.error());
  std::vector<std::string> given_headers = o.headers;
  if (!o.header_file.empty()) {
    auto text = io.fs->ReadFile(o.header_file, 64 << 10);
    if (!text) return Wrap(text.error(), "--header-file");
    for (std::string& h : HeaderFileLines(*text)) given_headers.push_back(std::move(h));
  }
  p.secrets = RequestSecrets(*key, given_headers);
  auto headers = RequestHeaders(*api, *key, given_headers);
  if (!headers) return tl::unexpected(headers.error());
  p.target.headers = std::move(*headers);
  p.target.body.model = o.model;
  p.target.body.stream = !o.no_stream;
  p.target.body.include_usage = !o.no_usage;
  p.target.body.ignore_eos = o.ignore_eos;
  if (!o.extra_body.empty()) {
    auto extra = nlohmann::json::parse(o.extra_body, nullptr, false);
    if (!extra.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "--extra-body is not a JSON object");
    }
    p.target.body.extra = std::move(extra);
  }
  p.engine_options.insecure = o.insecure;
  p.engine_options.ca_file = o.cacert;
  p.engine_options.http2 = !o.http1;
  p.engine_options.http1_pool = o.http_client == "cmax";
  p.engine_options.timeout_s = o.timeout_s;
  p.engine_options.connect_timeout_s = o.connect_timeout_s;
  p.engine_options.idle_timeout_s = o.idle_timeout_s;
  auto slo = ParseGoodput(o.goodput);
  if (!slo) return tl::unexpected(slo.error());
  p.slo = *slo;
  if (!o.prices.empty()) {
    auto text = io.fs->ReadFile(o.prices, 16 << 20);
    if (!text) return Wrap(text.error(), "--prices");
    auto table = ParsePrices(*text);
    if (!table) return Wrap(table.error(), o.prices);
    const std::string model = o.price_model.empty() ? o.model : o.price_model;
    const auto it = table->find(model);
    if (it == table->end()) {
      return Fail(ErrorCode::kInvalidArgument, "{} has no prices for model '{}' (--price-model)",
                  o.prices, model);
    }
    p.price = it->second;
  }
  auto engine = Engine::Create(p.engine_options);
  if (!engine) return tl::unexpected(engine.error());
  p.engine = std::move(*engine);
  // DNS once, outside every request's timing; a name that does not resolve is left to fail
  // each request as "dns", so that every request still gets its outcome.
  if (!p.engine->PinAddress(p.target.url)) {
    log::Warn("cannot resolve the host of {}; requests will fail as dns", ShownUrl(p.target.url));
  }
  p.description.label = o.label;
  p.description.url = ShownUrl(p.target.url);
  p.description.model = o.model;
  p.description.api = *api;
  p.description.concurrency = pace.concurrency;
  p.description.rate = pace.rate;
  p.description.burstiness = pace.burstiness;
  return p;
}

Result<std::unique_ptr<Workload>> MakeWorkload(const TargetOptions& target,
                                               const WorkloadOptions& o, const LoadRunIo& io,
                                               std::string& name) {
  if (!o.prompts.empty()) {
    name = "prompts " + o.prompts;
    return ReadPromptFile(o.prompts, o.output_len, io.hooks.interrupted);
  }
  name = fmt::format("random input {} output {} range {} prefix {} turns {}", o.input_len,
                     o.output_len, o.range_ratio, o.prefix_len, o.turns);
  return MakeRandomWorkload({.input_len = o.input_len,
                             .output_len = o.output_len,
                             .range_ratio = o.range_ratio,
                             .prefix_len = o.prefix_len,
                             .turns = o.turns,
                             .seed = target.seed});
}

// One load run (after its warm-up): what happened, its summary, and the result document that
// the output file, the sweep's list and the store's evidence are all made from.
struct Measured {
  LoadResult run;
  LoadSummary summary;
  nlohmann::json result;
};

// `requests`, when the requests file is asked for, gets the measured run's requests as they end
// (not the warm-up's); a write to it that fails stops the run.
Result<Measured> Measure(Prepared& p, Workload& workload, const LoadShape& shape, size_t warmup,
                         const LoadRunIo& io, RequestsStream* requests = nullptr) {
  if (warmup > 0) {
    auto w = RunLoad(*p.engine, p.target, workload, WarmupShape(shape, warmup), io.hooks);
    if (!w) return tl::unexpected(w.error());
    size_t failed = 0;
    for (const auto& r : w->records) failed += r.timing.ok ? 0 : 1;
    if (io.note) {
      io.note(
          fmt::format("warm-up: {} requests ({} failed), not counted", w->records.size(), failed));
    }
  }
  LoadHooks hooks = io.hooks;
  if (requests != nullptr) {
    hooks.on_record = [requests](const RequestRecord& r) { requests->Add(r); };
    hooks.interrupted = [requests, asked = io.hooks.interrupted] {
      return requests->Failed() || (asked && asked());
    };
  }
  auto run = RunLoad(*p.engine, p.target, workload, shape, hooks);
  if (!run) return tl::unexpected(run.error());
  Measured m{std::move(*run), {}, {}};
  RedactSecrets(m.run, p.secrets);
  m.summary = Summarize(m.run, p.slo, p.price);
  m.result = ResultJson(p.description, m.run, m.summary);
  return m;
}

std::string Dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The result without its per-request arrays: what the store keeps as evidence.
std::string EvidenceJson(const Measured& m) {
  nlohmann::json evidence = nlohmann::json::object();
  for (const auto& [key, value] : m.result.items()) {
    if (!value.is_array()) evidence[key] = value;  // every array is per request
  }
  return Dump(evidence, -1);
}

// The paths were checked before the run: what fails now (a full disk) is not the user's.
Result<void> Write(const LoadRunIo& io, const std::string& path, std::string_view text) {
  if (path.empty()) return {};
  if (auto ok = io.write_output(path, text); !ok) {
    return Fail(ErrorCode::kIo, "{}", ok.error().message);
  }
  return {};
}

// A run recorded in the store from its first request to its end.
Result<store::RecordedRun> Record(const LoadRunIo& io, const std::string& target) {
  return store::BeginRecordedRun(io.db_path, {.command = "endpoint",
                                              .target = target,
                                              .started_at = SystemClock().Now(),
                                              .cmax_version = io.cmax_version,
                                              .provider = io.provider});
}

// Closes a run as an error when the work fails half-way.
void Abandon(store::RecordedRun& run) {
  (void)run.writer.FinishWithError(store::kRunError, SystemClock().Now());
}

int InterruptSignal(const LoadRunIo& io) {
  return io.interrupt_signal ? io.interrupt_signal() : 0;
}

// The requests file, opened (and emptied) before the run is recorded: one that cannot be opened
// is said before anything is sent.
Result<std::unique_ptr<RequestsStream>> OpenRequests(const std::string& path, const Prepared& p,
                                                     const LoadRunIo& io) {
  if (path.empty()) return nullptr;
  if (!io.open_growing) return Fail(ErrorCode::kInternal, "no way to write --requests-file");
  auto sink = io.open_growing(path);
  if (!sink) return Wrap(sink.error(), "--requests-file");
  return std::make_unique<RequestsStream>(std::move(*sink), p.secrets);
}

// A run or a replay, once its workload and shape are known.
Result<LoadRunReport> MeasureAndRecord(const TargetOptions& o, Prepared& p, Workload& workload,
                                       const LoadShape& shape, size_t warmup, const LoadRunIo& io) {
  auto requests = OpenRequests(o.requests_file, p, io);
  if (!requests) return tl::unexpected(requests.error());
  auto recorded = Record(io, "endpoint/" + p.description.url);
  if (!recorded) return SystemFailure(recorded.error());
  store::RunWriter& writer = recorded->writer;
  auto measured = Measure(p, workload, shape, warmup, io, requests->get());
  if (!measured) {
    Abandon(*recorded);
    return SystemFailure(measured.error());
  }
  // The paths were checked before the run: a write that fails now (a full disk) is not the
  // user's, and it cut the run short.
  if (*requests) {
    if (auto ok = (*requests)->Finish(); !ok) {
      Abandon(*recorded);
      return Fail(ErrorCode::kIo, "--requests-file {}: {}", SanitizeUtf8(o.requests_file),
                  ok.error().message);
    }
  }
  if (auto ok = writer.Add({{"endpoint.result", EvidenceJson(*measured)}},
                           LoadFindings(measured->summary),
                           StoreMetrics(measured->summary, p.description));
      !ok) {
    return SystemFailure(ok.error());
  }
  if (auto ok = Write(io, o.output_file,
                      o.output_file.empty() ? std::string() : Dump(measured->result, 2) + "\n");
      !ok) {
    Abandon(*recorded);
    return tl::unexpected(ok.error());
  }
  auto outcome = writer.Finish(InterruptSignal(io), SystemClock().Now());
  if (!outcome) return SystemFailure(outcome.error());
  return LoadRunReport{writer.RunId(), outcome->exit_code,
                       SummaryText(p.description, measured->summary) +
                           fmt::format("stored as run {}\n", writer.RunId())};
}

}  // namespace

LoadShape ShapeOf(const TargetOptions& target, const PaceOptions& pace, size_t concurrency,
                  size_t requests) {
  LoadShape shape;
  shape.concurrency = concurrency;
  shape.rate = pace.rate;
  shape.burstiness = pace.burstiness;
  shape.requests = requests;
  shape.duration_s = pace.duration_s;
  shape.retries = target.retries;
  shape.cache_block_tokens = target.cache_block;
  shape.seed = target.seed;
  return shape;
}

Result<LoadRunReport> RunEndpoint(const TargetOptions& target, const WorkloadOptions& workload,
                                  const PaceOptions& pace, const LoadRunIo& io) {
  auto p = Prepare(target, pace, io);
  if (!p) return tl::unexpected(p.error());
  auto w = MakeWorkload(target, workload, io, p->description.workload);
  if (!w) return tl::unexpected(w.error());
  LoadShape shape = ShapeOf(target, pace, pace.concurrency, pace.requests);
  if (shape.requests == 0 && shape.duration_s <= 0) shape.requests = 200;
  return MeasureAndRecord(target, *p, **w, shape, pace.warmup, io);
}

Result<LoadRunReport> ReplayEndpoint(const TargetOptions& target, const ReplayOptions& replay,
                                     const PaceOptions& pace, const LoadRunIo& io) {
  auto p = Prepare(target, pace, io);
  if (!p) return tl::unexpected(p.error());
  const auto markers = ReplayMarkers(replay.copies, target.seed, replay.no_marker);
  auto copies =
      ReadTraceFile(replay.trace, {.block_tokens = replay.block_tokens, .speedup = replay.speedup},
                    markers, io.hooks.interrupted);
  if (!copies) return tl::unexpected(copies.error());
  std::unique_ptr<Workload> workload =
      copies->size() == 1 ? std::move(copies->front()) : MergeByTime(std::move(*copies));
  p->description.workload =
      fmt::format("trace {} x{} speedup {}", replay.trace, replay.copies, replay.speedup);
  LoadShape shape = ShapeOf(target, pace, pace.concurrency, pace.requests);
  shape.trace_times = true;
  shape.rate = 0;
  if (pace.requests == 0 && pace.duration_s <= 0) shape.requests = SIZE_MAX;  // the whole trace
  return MeasureAndRecord(target, *p, *workload, shape, pace.warmup, io);
}

Result<LoadRunReport> SweepEndpoint(const TargetOptions& target, const WorkloadOptions& workload,
                                    const PaceOptions& pace, const SweepOptions& sweep,
                                    const LoadRunIo& io) {
  if (!target.requests_file.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--requests-file is for run and replay: a sweep keeps each level's summary "
                "(--output-file), not its requests");
  }
  auto p = Prepare(target, pace, io);
  if (!p) return tl::unexpected(p.error());
  auto levels = SweepLevels(sweep.levels, sweep.max_concurrency);
  if (!levels) return tl::unexpected(levels.error());
  // The first level's workload is made before the run is recorded: a prompts file that cannot
  // be read is the user's to fix (exit 2), not a run that failed.
  auto first = MakeWorkload(target, workload, io, p->description.workload);
  if (!first) return tl::unexpected(first.error());
  auto recorded = Record(io, "endpoint-sweep/" + p->description.url);
  if (!recorded) return SystemFailure(recorded.error());
  store::RunWriter& writer = recorded->writer;
  const auto table = [&](const std::string& line) {
    if (io.table) io.table(line);
  };
  table(fmt::format("{:>11} {:>9} {:>7} {:>10} {:>12} {:>10} {:>10} {:>10}\n", "CONCURRENCY",
                    "REQUESTS", "FAILED", "REQ/S", "OUT TOK/S", "TTFT P50", "TTFT P99",
                    "TPOT P50"));
  nlohmann::json all = nlohmann::json::array();
  std::vector<Finding> findings;
  for (const size_t c : *levels) {
    if (io.hooks.interrupted && io.hooks.interrupted()) break;
    auto w = first ? std::move(first) : MakeWorkload(target, workload, io, p->description.workload);
    first = tl::unexpected(Error{});  // later levels make their own
    if (!w) {
      Abandon(*recorded);
      return SystemFailure(w.error());
    }
    p->description.concurrency = c;
    const LoadShape shape =
        ShapeOf(target, pace, c, SweepRequests(pace.requests, pace.duration_s, c));
    auto m = Measure(*p, **w, shape, pace.warmup, io);
    if (!m) {
      Abandon(*recorded);
      return SystemFailure(m.error());
    }
    const auto& x = m->summary.metrics;
    table(fmt::format("{:>11} {:>9} {:>7} {:>10.2f} {:>12.1f} {:>10.2f} {:>10.2f} {:>10.2f}\n", c,
                      x.completed + x.failed, x.failed, x.request_throughput, x.output_throughput,
                      x.ttft_chunk_ms.p50, x.ttft_chunk_ms.p99, x.tpot_ms.p50));
    for (Finding f : LoadFindings(m->summary)) {
      f.check_id += fmt::format(".c{}", c);
      findings.push_back(std::move(f));
    }
    if (auto ok = writer.Add({{fmt::format("endpoint.sweep.c{}", c), EvidenceJson(*m)}}, {},
                             StoreMetrics(m->summary, p->description));
        !ok) {
      return SystemFailure(ok.error());
    }
    all.push_back(std::move(m->result));
  }
  if (auto ok = writer.Add({}, findings); !ok) return SystemFailure(ok.error());
  if (auto ok = Write(io, target.output_file, Dump(all, 2) + "\n"); !ok) {
    Abandon(*recorded);
    return tl::unexpected(ok.error());
  }
  auto outcome = writer.Finish(InterruptSignal(io), SystemClock().Now());
  if (!outcome) return SystemFailure(outcome.error());
  return LoadRunReport{
      writer.RunId(), outcome->exit_code,
      fmt::format("stored as run {} (cmax report {} --format html draws the sweep)\n",
                  writer.RunId(), writer.RunId())};
}

}  // namespace cmax::endpoint
