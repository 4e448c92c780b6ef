// libcurl's transport: https, and http with --http-client libcurl. libcurl's multi interface
// driven by socket events (curl_multi_socket_action): keep-alive reuse, TLS (verified unless told
// otherwise), HTTP/2 by ALPN. Transfers are sharded 256 per multi handle, because libcurl walks
// every connection to a host when it looks for one to reuse. libcurl is loaded by the engine's
// creation (sys/curl_library.hpp). Its header checks are held to HttpResponseReader's limits,
// so both transports refuse the same answers.
#pragma once

#include <curl/curl.h>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "endpoint/transport.hpp"

namespace cmax::endpoint {

// The class of a transfer that ended with a libcurl error; `answered` says whether any response
// had begun (a connection that breaks before it is a connection failure).
ErrorClass CurlErrorClass(int curl_code, bool answered);
// libcurl's CURLINFO_HTTP_VERSION as "1.0", "1.1", "2", "3" (empty: none).
std::string HttpVersionName(long curl_version);
// Seconds as libcurl's milliseconds, with libcurl's 0 kept for "no limit" only: a positive value
// is never rounded down to 0, and a connect timeout of 0 (libcurl would read its 300 s default)
// is the longest libcurl takes.
long CurlMillis(double seconds, bool connect);

class CurlTransport final : public Transport {
 public:
  explicit CurlTransport(EventHub& hub) : hub_(hub) {}
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  bool PinAddress(const std::string& url) override;
  void Start(uint64_t tag, Call call) override;
  void OnEvent(uint32_t route, int fd, uint32_t events) override;
  double NextWakeS() const override;
  void AfterEvents() override;
  size_t InFlight() const override { return transfers_.size(); }
  void CancelAll() override;
  void ShiftEpoch(double /*shift*/) override {}  // libcurl keeps its own clock

 private:
  struct Transfer : Exchange {
    using Exchange::Exchange;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    bool added = false;     // in its shard's multi handle
    bool answered = false;  // a response began
    // Head bytes so far: held to HttpResponseReader's limits, which libcurl does not apply
    // (it takes 300 KB of headers and reads past a Content-Length it cannot parse).
    size_t head_bytes = 0;
    std::list<std::unique_ptr<Transfer>>::iterator self;
  };
  // One multi handle with ten thousand connections spends its time looking for a reusable one,
  // so transfers are spread over shards of at most kShardTransfers each, every shard a multi
  // handle with its own connections; all their sockets share the hub's epoll set.
  struct Shard {
    CurlTransport* transport = nullptr;
    uint32_t index = 0;
    CURLM* multi = nullptr;
    std::optional<SteadyClock::time_point> deadline;  // libcurl's timer
    size_t in_flight = 0;
  };
  static constexpr size_t kShardTransfers = 256;

  static int OnSocket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp);
  static int OnTimer(CURLM* multi, long timeout_ms, void* userp);
  static size_t OnHeader(char* data, size_t size, size_t count, void* userp);
  static size_t OnBody(char* data, size_t size, size_t count, void* userp);
  Shard* PickShard();
  CURL* Handle();
  void Configure(Transfer& t) const;
  void Done(CURL* easy, int code);
  // The one way a transfer ends: out of its multi handle, its handle kept for the next, and
  // the hub decides its outcome.
  void End(Transfer& t, const Failure& failure);

  EventHub& hub_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::list<std::unique_ptr<Transfer>> transfers_;
  std::vector<CURL*> idle_handles_;  // reused, so a new request does not pay curl_easy_init
  curl_slist* resolve_ = nullptr;    // CURLOPT_RESOLVE: the addresses pinned
};

}  // namespace cmax::endpoint
