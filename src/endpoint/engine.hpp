// The client's network engine: one thread, one epoll set, so that ten thousand streams cost
// only the bytes that arrive on them. Each response is read as it arrives: SSE events are
// parsed incrementally and their times taken on arrival. The load shapes (load.hpp) drive it
// through Start and Poll and never see a transport.
//
// Inside (transport.hpp), two transports behind one interface (Transport):
// - Http1Pool (http1_pool.hpp): plain http over cmax's own HTTP/1.1 connections, kept alive in
//   a pool per origin; a request is sent again once over a new connection when the server
//   closed a kept-alive one under it. It costs a third less CPU per token than libcurl.
// - CurlTransport (curl_transport.hpp): https, and http with --http-client libcurl, through
//   libcurl's multi interface driven by socket events: TLS, HTTP/2 by ALPN, sharded 256
//   transfers per multi handle. libcurl is loaded when the first engine is created.
// Both read a response into an Exchange (the body, its SSE events, their arrival times) and end
// it through EventHub::Complete, the one exit, where the outcome is decided by a pure function
// over what the exchange saw (outcome.hpp: ClassifyOutcome). Sockets whose answer is still
// awaited are also in a second epoll set that is read first on each round, so that a first
// chunk is not timed behind a wave of other streams' tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "endpoint/api.hpp"
#include "endpoint/metrics.hpp"
#include "endpoint/outcome.hpp"
#include "endpoint/usage.hpp"

namespace cmax::endpoint {

struct EngineOptions {
  bool insecure = false;   // skip certificate verification (--insecure)
  std::string ca_file;     // extra trust (--cacert)
  bool http2 = true;       // offer h2 by ALPN on TLS; plain http is HTTP/1.1
  bool http1_pool = true;  // plain http:// over cmax's own HTTP/1.1 connections (else libcurl)
  double connect_timeout_s = 10;
  double timeout_s = 600;     // the whole request
  double idle_timeout_s = 0;  // no byte for this long: timeout (0: off; whole seconds)
  size_t max_event_bytes = size_t{1} << 20;
  size_t max_body_bytes = size_t{64} << 20;
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
};

struct Call {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; secrets go here and nowhere else
  std::string body;
  Api api = Api::kChat;
  bool stream = true;
  bool keep_text = false;  // multi-turn needs the answer to send it back
};

// How a call ended. `timing` holds its times in seconds from the engine's epoch.
struct CallResult {
  RequestTiming timing;
  long http_status = 0;
  std::string http_version;  // "1.0", "1.1", "2", "3"; empty when no answer came
  std::optional<TokenUsage> usage;
  std::string text;
  std::string error_message;            // when !timing.ok
  std::optional<double> retry_after_s;  // from retry-after-ms or retry-after
  std::optional<double> server_lag_ms;  // serve-sim only: first chunk received - sent
  uint64_t sse_comments = 0;
};

// Whether the engine can send to this URL: http or https, a host, a port in 1..65535, no spaces
// or control characters; read by libcurl's parser, as both clients read it. The error says
// what is wrong (without repeating the URL, which may hold a key).
Result<void> CheckUrl(const std::string& url);

struct Completion {
  uint64_t tag = 0;
  CallResult result;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // Pins a host name to the address it resolves to now, so that DNS is looked up once and not
  // inside any request's timing. False when it does not resolve (requests then fail "dns").
  bool PinAddress(const std::string& url);
  // Starts a call now; Poll hands out its completion, whatever the end.
  void Start(uint64_t tag, Call call);
  // Waits for network events (at most until `until`), handles them and appends the calls that
  // ended to `done`.
  void Poll(std::chrono::steady_clock::time_point until, std::vector<Completion>& done);
  size_t InFlight() const;
  double SecondsSinceEpoch() const;
  // Drops every call in flight without an outcome (the run that sent them was interrupted and
  // gives them theirs).
  void CancelAll();
  // Times count from now on (between the phases of a run; kept-alive connections stay open).
  void ResetEpoch();

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmax::endpoint
