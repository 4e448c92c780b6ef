// cmax's own plain-HTTP/1.1 transport (http:// URLs unless --http-client libcurl): one request at
// a time per connection, connections kept alive in a pool per origin. libcurl costs a poll() per
// read, several epoll changes and its own bookkeeping per request; these cost a send, the reads
// and nothing else (the measured difference is in docs/PERFORMANCE.md). TLS and HTTP/2 stay
// with libcurl (curl_transport.hpp). Responses are read by HttpResponseReader.
#pragma once

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "endpoint/http_response.hpp"
#include "endpoint/transport.hpp"

namespace cmax::endpoint {

class Http1Pool final : public Transport {
 public:
  explicit Http1Pool(EventHub& hub) : hub_(hub) {}
  ~Http1Pool() override;
  Http1Pool(const Http1Pool&) = delete;
  Http1Pool& operator=(const Http1Pool&) = delete;

  // Starts the call when this pool carries its URL (plain http, unless the engine was told to
  // use libcurl) and says whether it did; one lookup of the URL either way.
  bool StartIfCarried(uint64_t tag, Call& call);
  bool Carries(const std::string& url) { return UrlOf(url).has_value(); }

  bool PinAddress(const std::string& url) override;
  void Start(uint64_t tag, Call call) override;
  void OnEvent(uint32_t route, int fd, uint32_t events) override;
  double NextWakeS() const override;
  void AfterEvents() override { CheckDeadlines(); }
  size_t InFlight() const override { return transfers_.size(); }
  void CancelAll() override;
  void ShiftEpoch(double shift) override;

 private:
  struct Conn;
  struct Transfer : Exchange {
    using Exchange::Exchange;
    std::string wire;  // the request as it goes on the wire
    size_t wire_at = 0;
    size_t origin = 0;
    Conn* conn = nullptr;
    double deadline_s = 0;  // the whole request, seconds from the epoch
    double activity_s = 0;  // the last byte that came (idle timeout)
    bool resent = false;    // once sent again over a fresh connection
    std::list<std::unique_ptr<Transfer>>::iterator self;
  };
  struct Conn {
    int fd = -1;
    size_t origin = 0;
    Transfer* transfer = nullptr;  // null: idle in its origin's pool
    bool connecting = true;
    bool reused = false;   // it carried an earlier request
    bool writing = false;  // EPOLLOUT is asked for
    double connect_deadline_s = 0;
    HttpResponseReader reader;
  };
  struct Origin {
    std::string host;  // as the Host header gives it
    Address address;
    std::vector<Conn*> idle;
  };
  struct Target {
    size_t origin = 0;
    std::string path;  // path and query
  };

  const std::optional<Target>& UrlOf(const std::string& url);
  size_t OriginOf(const std::string& host, const std::string& port);
  std::string Wire(const Target& target, const Call& call) const;
  void Attach(Transfer& t, bool fresh);
  Conn* Connect(size_t origin, std::string& why);
  void Writing(Conn& c, bool on);
  void Send(Conn& c);
  bool Receive(Conn& c);
  bool Arrived(Conn& c, size_t n);
  void ConnectionEnded(Conn& c, int error);
  void Detach(Conn& c);
  void Close(Conn& c);
  double Due(const Transfer& t) const;
  void CheckDeadlines();
  // The one way a transfer ends: its connection goes back to the pool (`keep_connection`) or is
  // closed, and the hub decides its outcome.
  void End(Transfer& t, Failure failure, bool keep_connection = false);

  EventHub& hub_;
  std::list<std::unique_ptr<Transfer>> transfers_;
  std::vector<std::unique_ptr<Conn>> conns_;  // by socket
  std::vector<Origin> origins_;
  std::unordered_map<std::string, size_t> origin_index_;            // "host:port"
  std::unordered_map<std::string, std::optional<Target>> targets_;  // nullopt: not ours
  std::vector<char> inbox_ = std::vector<char>(size_t{64} << 10);   // every read lands here
  double next_deadline_s_ = std::numeric_limits<double>::infinity();
};

}  // namespace cmax::endpoint
