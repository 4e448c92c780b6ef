#include "sys/metrics_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <utility>

#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::sys {

Result<ListeningSocket> ListenTcp(const std::string& address, int backlog) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "listen address '{}' is not HOST:PORT", address);
  }
  const std::string host = address.substr(0, colon);
  const std::optional<int> port = ParseWhole<int>(std::string_view(address).substr(colon + 1));
  if (!port || *port < 0 || *port > 65535) {
    return Fail(ErrorCode::kInvalidArgument, "listen address '{}' has a bad port", address);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  if (host.empty() || host == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Fail(ErrorCode::kInvalidArgument, "listen address '{}': '{}' is not an IPv4 address",
                address, host);
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Fail(ErrorCode::kIo, "socket: {}", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, backlog) != 0) {
    const int e = errno;
    ::close(fd);
    return Fail(ErrorCodeFromErrno(e), "cannot listen on {}: {}", address, std::strerror(e));
  }
  socklen_t length = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  return ListeningSocket{fd, ntohs(addr.sin_port)};
}

Result<MetricsServer> MetricsServer::Listen(const std::string& address) {
  auto socket = ListenTcp(address, 16);
  if (!socket) return tl::unexpected(socket.error());
  return MetricsServer(socket->fd, socket->port);
}

MetricsServer::MetricsServer(MetricsServer&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_), served_(other.served_) {}

MetricsServer& MetricsServer::operator=(MetricsServer&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
    served_ = other.served_;
  }
  return *this;
}

MetricsServer::~MetricsServer() {
  if (fd_ >= 0) ::close(fd_);
}

bool MetricsServer::Resting() const {
  return std::chrono::steady_clock::now() < rest_until_;
}

void MetricsServer::Serve(const HttpHandler& handler, Duration budget, int max_connections) {
  Serve(
      [&handler](const ServedRequest& r) -> std::optional<ServedResponse> {
        if (r.method != "GET") return ServedResponse{405, "text/plain", "only GET\n"};
        return handler(r.path);
      },
      budget, max_connections);
}

void MetricsServer::Serve(const RequestHandler& handler, Duration budget, int max_connections) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (int i = 0; i < max_connections && std::chrono::steady_clock::now() < deadline; ++i) {
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        rest_until_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      }
      return;  // EAGAIN: nobody else is waiting
    }
    Answer(client, handler, deadline);
    ::close(client);
  }
}

void MetricsServer::Answer(int client, const RequestHandler& handler,
                           std::chrono::steady_clock::time_point deadline) {
  std::string request;
  const auto read_more = [&]() {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buffer[4096];
    const ssize_t n = ::read(client, buffer, sizeof(buffer));
    if (n <= 0) return false;
    request.append(buffer, static_cast<size_t>(n));
    return true;
  };
  size_t head_end = std::string::npos;
  while ((head_end = request.find("\r\n\r\n")) == std::string::npos && request.size() < 8192) {
    if (!read_more()) return;
  }
  // "GET /metrics HTTP/1.1"
  const size_t line_end = request.find("\r\n");
  const std::string_view line = std::string_view(request).substr(0, line_end);
  const size_t first = line.find(' ');
  const size_t second = line.find(' ', first + 1);
  std::optional<ServedResponse> response;
  if (head_end == std::string::npos || first == std::string_view::npos ||
      second == std::string_view::npos) {
    response = ServedResponse{400, "text/plain", "bad request\n"};
  } else {
    ServedRequest r;
    r.method = std::string(line.substr(0, first));
    std::string_view path = line.substr(first + 1, second - first - 1);
    r.path = std::string(path.substr(0, path.find('?')));
    // Content-Length, in any case; no chunked bodies (webhook senders give a length).
    size_t length = 0;
    const std::string head = ToLower(std::string_view(request).substr(0, head_end));
    if (const size_t at = head.find("\r\ncontent-length:"); at != std::string::npos) {
      length = std::strtoull(head.c_str() + at + 17, nullptr, 10);
    }
    if (length > kMaxRequestBody) {
      response = ServedResponse{413, "text/plain", "body too large\n"};
    } else {
      while (request.size() < head_end + 4 + length) {
        if (!read_more()) return;
      }
      r.body = request.substr(head_end + 4, length);
      response = handler(r);
      if (!response) response = ServedResponse{404, "text/plain", "not found\n"};
    }
  }
  const char* reason = response->status == 200   ? "OK"
                       : response->status == 404 ? "Not Found"
                       : response->status == 405 ? "Method Not Allowed"
                       : response->status == 413 ? "Payload Too Large"
                                                 : "Bad Request";
  const std::string head = "HTTP/1.1 " + std::to_string(response->status) + " " + reason +
                           "\r\nContent-Type: " + response->content_type +
                           "\r\nContent-Length: " + std::to_string(response->body.size()) +
                           "\r\nConnection: close\r\n\r\n";
  const std::string out = head + response->body;
  size_t sent = 0;
  // Writing gets its own short allowance: the request was read within the budget.
  const auto write_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (sent < out.size() && std::chrono::steady_clock::now() < write_deadline) {
    const ssize_t n = ::send(client, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{client, POLLOUT, 0};
      ::poll(&p, 1, 50);
      continue;
    }
    break;
  }
  ++served_;
}

}  // namespace cmax::sys
