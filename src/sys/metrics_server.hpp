// A very small HTTP/1.1 server for Prometheus scrapes: GET only, one response per connection,
// driven from the agent's poll loop (no thread). A client gets a bounded time to send its
// request, so a slow or silent one cannot stall the loop for long.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

struct ServedResponse {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

// Answers a path ("/metrics"); nullopt means 404.
using HttpHandler = std::function<std::optional<ServedResponse>(std::string_view path)>;

// A request with its body, for servers that take POSTs (alert webhooks).
struct ServedRequest {
  std::string method;
  std::string path;  // without the query
  std::string body;
};
using RequestHandler = std::function<std::optional<ServedResponse>(const ServedRequest& request)>;
inline constexpr size_t kMaxRequestBody = size_t{1} << 20;

// A non-blocking listening TCP socket on "HOST:PORT" (":PORT" for all addresses, port 0 for any
// free one); the caller owns the fd.
struct ListeningSocket {
  int fd = -1;
  int port = 0;
};
Result<ListeningSocket> ListenTcp(const std::string& address, int backlog);

class MetricsServer {
 public:
  // "127.0.0.1:9470", ":9470" (all addresses) or "0.0.0.0:0" (any free port).
  static Result<MetricsServer> Listen(const std::string& address);
  MetricsServer(MetricsServer&& other) noexcept;
  MetricsServer& operator=(MetricsServer&& other) noexcept;
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  ~MetricsServer();

  int Fd() const { return fd_; }
  int Port() const { return port_; }
  // Answers waiting connections, at most max_connections of them and within budget in all, so
  // that clients that connect and say nothing cannot hold the caller's loop.
  void Serve(const HttpHandler& handler, Duration budget = std::chrono::milliseconds(100),
             int max_connections = 8);
  // The same for any method; a body (Content-Length, at most kMaxRequestBody) is read too.
  void Serve(const RequestHandler& handler, Duration budget, int max_connections);
  uint64_t Served() const { return served_; }
  // After accept failed for lack of file descriptors the listener is rested for a second; a
  // poll loop leaves the fd out meanwhile, or it would spin on a readable socket.
  bool Resting() const;

 private:
  MetricsServer(int fd, int port) : fd_(fd), port_(port) {}
  void Answer(int client, const RequestHandler& handler,
              std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  int port_ = 0;
  uint64_t served_ = 0;
  std::chrono::steady_clock::time_point rest_until_{};
};

}  // namespace cmax::sys
