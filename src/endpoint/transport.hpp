// What the engine's two transports share (engine.hpp tells the whole design):
// - Exchange: one call as the engine reads it, whichever transport carries it: its response's
//   body read as it arrives (SSE events timed on arrival), the facts its outcome is decided on.
// - EventHub: the epoll sets, the clock, the marks of sockets awaiting a first chunk, and the
//   one exit of every transfer (Complete), which decides the outcome (ClassifyOutcome) and
//   hands out the completion.
// - Transport: what the engine drives. Http1Pool (http1_pool.hpp) and CurlTransport
//   (curl_transport.hpp) implement it.
// Internal to the engine: the load shapes drive Engine (engine.hpp), never a transport.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "endpoint/api.hpp"
#include "endpoint/engine.hpp"
#include "endpoint/outcome.hpp"
#include "endpoint/sse.hpp"

namespace cmax::endpoint {

using SteadyClock = std::chrono::steady_clock;

// A URL's parts, by libcurl's parser (as libcurl reads the URLs it is given).
struct UrlParts {
  std::string scheme;
  std::string host;    // an IPv6 address in brackets
  std::string port;    // the scheme's default when the URL has none
  std::string target;  // path and query
};
std::optional<UrlParts> PartsOf(const std::string& url);

// host:port looked up once (DNS is never inside a request's timing).
struct Address {
  sockaddr_storage address{};
  socklen_t length = 0;
  std::string error;  // empty: resolved
};
Address Resolve(const std::string& host, const std::string& port);

// An epoll event's data: the route (whose socket: a libcurl shard's index, or kHttp1Route) in
// the high 32 bits, the socket in the low.
inline constexpr uint32_t kHttp1Route = 0xffffffffU;
inline uint64_t EventKey(uint32_t route, int fd) {
  return (uint64_t{route} << 32) | static_cast<uint32_t>(fd);
}

// How the transport ended an exchange: nothing (the exchange went through; the response decides
// the rest) or its connection's failure.
struct Failure {
  ErrorClass error_class = ErrorClass::kNone;
  std::string why;
};

class EventHub;

// One call as the engine reads it. Transports extend it with what only they need.
struct Exchange {
  Exchange(EventHub& hub, uint64_t tag, Call call, uint32_t route);
  virtual ~Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // The time of the read under way, which every event it holds arrived at.
  void Stamp();
  // Body bytes of the response whose status is `status`, as they arrive; false when a whole
  // response outgrows the body limit (the transport then ends it; the outcome says why).
  bool ReadBody(const char* data, size_t n);
  // A response header (name lower-cased), whichever transport brought it.
  void HeaderField(std::string_view name, std::string_view value);

  EventHub* hub;
  uint64_t tag;
  Call call;
  uint32_t route;  // its transport's route in epoll events
  SseParser sse;
  StreamReader reader;
  CallResult result;
  std::string body;  // a whole response, or the start of an error's
  bool saw_done = false;
  bool saw_finish = false;
  bool malformed = false;
  bool too_big = false;
  std::optional<std::string> bad_head;  // why the response head was refused
  std::optional<std::string> stream_error;
  long status = 0;          // the response's, once its body began
  double arrived_s = 0;     // the read under way: when it came
  int64_t arrived_ns = 0;   // the same on CLOCK_MONOTONIC, before the first chunk only
  int awaited_socket = -1;  // its connection while its first chunk is awaited
};

class EventHub {
 public:
  explicit EventHub(const EngineOptions& options) : options_(options) {}
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;
  Result<void> Open();  // the epoll sets

  const EngineOptions& Options() const { return options_; }
  int EpollFd() const { return epoll_fd_; }
  int FirstEpollFd() const { return first_epoll_fd_; }
  double Now() const {
    return std::chrono::duration<double>(SteadyClock::now() - options_.epoch).count();
  }
  SteadyClock::time_point Epoch() const { return options_.epoch; }
  void ResetEpoch() { options_.epoch = SteadyClock::now(); }

  // Sockets whose answer is still awaited are also in a second epoll set, which Poll reads
  // first: when every stream's token comes in the same wave (a server's decode steps), the main
  // set holds a thousand ready sockets and one that just became ready waits behind all of them,
  // up to 10 ms at 1,024 streams; its first chunk would be timed that late (TTFT is the measure
  // a late read hurts most). Under HTTP/2 several exchanges share a socket and the latest to
  // begin holds the mark.
  void AwaitFirstChunk(Exchange& exchange, int socket);
  // Takes the exchange's mark; a transport calls it before it closes the socket.
  void FirstChunkCame(Exchange& exchange);
  bool Awaiting() const { return awaiting_ > 0; }

  // The one exit of every transfer: its outcome decided and its completion handed to the round
  // under way (or, outside Poll, to the next). The exchange's result is moved out; the transport
  // frees the exchange after.
  void Complete(Exchange& exchange, const Failure& failure);
  // A Poll round: completions of calls that ended between rounds come first.
  void BeginRound(std::vector<Completion>& done);
  void EndRound() { done_ = nullptr; }
  size_t Pending() const { return later_.size(); }
  // Drops every mark and pending completion (the calls in flight were cancelled).
  void Forget();

 private:
  EngineOptions options_;
  int epoll_fd_ = -1;
  int first_epoll_fd_ = -1;
  std::vector<Exchange*> awaiting_first_;  // by socket
  size_t awaiting_ = 0;
  std::vector<Completion>* done_ = nullptr;
  std::vector<Completion> later_;
};

// A way of carrying calls, driven by the engine on its one thread.
class Transport {
 public:
  virtual ~Transport() = default;
  // Whether a transport of this kind can send to this URL's origin: false when it does not
  // resolve (its requests then fail "dns"). Looked up once, outside any request's timing.
  virtual bool PinAddress(const std::string& url) = 0;
  // Starts a call now; it ends through EventHub::Complete, whatever the end.
  virtual void Start(uint64_t tag, Call call) = 0;
  // An event on one of its sockets (`route` is the high half of the event's key).
  virtual void OnEvent(uint32_t route, int fd, uint32_t events) = 0;
  // Its next deadline, in seconds from the epoch (infinity: none).
  virtual double NextWakeS() const = 0;
  // After each round's events: timers and deadlines.
  virtual void AfterEvents() = 0;
  virtual size_t InFlight() const = 0;
  // Drops every call in flight without an outcome.
  virtual void CancelAll() = 0;
  // The epoch moved `shift` seconds later: deadlines counted from it move back.
  virtual void ShiftEpoch(double shift) = 0;
};

inline void Exchange::Stamp() {
  arrived_s = hub->Now();
  arrived_ns = result.timing.first_chunk_s ? 0 : MonotonicNanos();  // only the first
}

}  // namespace cmax::endpoint
