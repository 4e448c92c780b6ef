// Loopback ports for test servers: one that nothing listens on right now (the kernel picks it),
// for a server that must be told its port up front (Prometheus, openssl s_server); and a
// listening socket of the test's own, on a port the kernel picks.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace cmax::testing {

inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : -1;
}

// A socket listening on 127.0.0.1 (its port in *port), or -1.
inline int ListenOnLoopback(int* port, int backlog = 16) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    ::close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// The connections waiting on a listening socket now, each accepted and closed: how many there
// were.
inline int AcceptWaiting(int listener) {
  int count = 0;
  pollfd waiting{.fd = listener, .events = POLLIN, .revents = 0};
  while (::poll(&waiting, 1, 0) > 0) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) break;
    ::close(fd);
    ++count;
  }
  return count;
}

}  // namespace cmax::testing
