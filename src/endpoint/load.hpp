// A load run: sends a workload's requests through the engine in the shape asked for, and
// records what happened to every request. Shapes:
//   fixed concurrency: at most N requests in flight, the next one sent as soon as one ends;
//   request rate: conversations start at gamma-distributed gaps (shape = burstiness, mean
//     1/rate; burstiness 1 is a Poisson process), optionally capped by a concurrency;
//   trace times: each conversation starts at its own time (replay).
// A conversation's next turn is sent when its answer is in (after its think time) and goes
// ahead of new conversations, so that N concurrent users each finish what they began.
// It stops sending after `requests` requests or `duration_s`, whichever comes first, and waits
// for those in flight: every request sent gets an outcome.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "endpoint/api.hpp"
#include "endpoint/engine.hpp"
#include "endpoint/prefix_cache.hpp"
#include "endpoint/workload.hpp"

namespace cmax::endpoint {

struct Target {
  std::string url;  // the full endpoint URL
  Api api = Api::kChat;
  std::vector<std::string> headers;
  BodyOptions body;
};

struct LoadShape {
  size_t concurrency = 0;  // 0: no cap
  double rate = 0;         // conversations per second; 0: as fast as the cap allows
  double burstiness = 1;
  bool trace_times = false;
  size_t requests = 0;    // 0: no count (then duration_s)
  double duration_s = 0;  // 0: no limit (then requests)
  int retries = 0;        // OpenAI-SDK-like retries; 0 when measuring
  double max_retry_wait_s = 60;
  size_t cache_block_tokens = 16;  // for the ideal hit rate
  uint64_t seed = 0;
};

struct RequestRecord {
  uint64_t index = 0;  // in order of sending
  size_t conversation = 0;
  size_t turn = 0;
  int attempt = 0;
  double due_s = 0;        // when it could first have been sent
  double lateness_ms = 0;  // sent - max(due, the moment a slot freed)
  RequestTiming timing;
  long http_status = 0;
  std::string http_version;
  std::string error_message;
  std::optional<TokenUsage> usage;
  std::optional<double> server_lag_ms;
  uint64_t ideal_cached_tokens = 0;
  uint64_t prompt_words = 0;
};

struct LoadProgress {
  double elapsed_s = 0;
  size_t sent = 0;
  size_t done = 0;
  size_t failed = 0;
  size_t in_flight = 0;
};

struct LoadResult {
  std::vector<RequestRecord> records;  // the final attempt of each request
  double duration_s = 0;               // first send to last outcome
  size_t max_in_flight = 0;
  uint64_t retries = 0;
  IdealHits ideal;
  double client_cpu_s = 0;  // this process, user + system, during the run
  bool interrupted = false;
};

struct LoadHooks {
  std::function<bool()> interrupted;                  // asked every 100 ms at least
  std::function<void(const LoadProgress&)> progress;  // every progress_every_s
  double progress_every_s = 2;
  // Each request's record as it ends (its last attempt), on the run's thread: what it does
  // holds the event loop, whose reads time the tokens, so it should only copy.
  std::function<void(const RequestRecord&)> on_record;
};

// Gaps between arrivals: gamma(shape = burstiness, scale = 1 / (rate * burstiness)).
double NextArrivalGap(double rate, double burstiness, std::mt19937_64& rng);

// Runs on `engine`, whose kept-alive connections a later run (the measured one after a
// warm-up, the next sweep level) reuses. It must have nothing in flight.
Result<LoadResult> RunLoad(Engine& engine, const Target& target, Workload& workload,
                           const LoadShape& shape, const LoadHooks& hooks);

}  // namespace cmax::endpoint
