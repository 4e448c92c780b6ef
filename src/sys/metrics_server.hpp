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

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

// Answers a path ("/metrics"); nullopt means 404.
using HttpHandler = std::function<std::optional<HttpResponse>(std::string_view path)>;

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
  // Accepts every waiting connection and answers it; each may take at most request_timeout.
  void Serve(const HttpHandler& handler, Duration request_timeout = std::chrono::milliseconds(200));
  uint64_t Served() const { return served_; }

 private:
  MetricsServer(int fd, int port) : fd_(fd), port_(port) {}
  void Answer(int client, const HttpHandler& handler, Duration request_timeout);
  int fd_ = -1;
  int port_ = 0;
  uint64_t served_ = 0;
};

}  // namespace cmax::sys
