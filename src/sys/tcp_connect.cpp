#include "sys/tcp_connect.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

namespace cmax::sys {
namespace {

struct AddrInfoFree {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};

// Connects one address before `deadline`: 0 when it accepted, else the errno (ETIMEDOUT when
// the deadline passed first).
int ConnectOne(const addrinfo& address, std::chrono::steady_clock::time_point deadline) {
  const int fd = socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        address.ai_protocol);
  if (fd < 0) return errno;
  int error = 0;
  if (connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      error = ETIMEDOUT;
      while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
        const int ready = poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        int so_error = 0;
        socklen_t length = sizeof so_error;
        error = getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length) == 0 ? so_error : errno;
        break;
      }
    }
  }
  close(fd);
  return error;
}

}  // namespace

Result<void> TcpConnect(const std::string& host, uint16_t port, Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Fail(ErrorCode::kNotFound, "{} does not resolve ({})", host, gai_strerror(rc));
  }
  const std::unique_ptr<addrinfo, AddrInfoFree> addresses(found);
  int last = ETIMEDOUT;
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    last = ConnectOne(*a, deadline);
    if (last == 0) return {};
    if (last == ETIMEDOUT) break;  // the time is spent
  }
  if (last == ETIMEDOUT) {
    return Fail(ErrorCode::kTimeout, "no answer from {}:{} within {} s", host, port,
                std::chrono::duration<double>(timeout).count());
  }
  return Fail(ErrorCode::kUnavailable, "{}:{}: {}", host, port, std::strerror(last));
}

}  // namespace cmax::sys
