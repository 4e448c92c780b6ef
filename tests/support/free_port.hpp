// Loopback ports for test servers: one that nothing listens on right now, for a server that
// must be told its port up front; and a listening socket of the test's own, on a port the
// kernel picks (no window between choosing and binding: prefer it where the server is ours).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cstdint>
#include <cstdio>
#include <netinet/in.h>
#include <random>
#include <sys/socket.h>

namespace cmax::testing {

// Ports below the kernel's ephemeral range (ip_local_port_range, 32768-60999 by default): the
// kernel never hands one of these to a client's connect() or to another bind(0), which is what
// took a port the kernel had just called free before the test's server could bind it (CI saw
// "Couldn't bind to port 53516: Address already in use" with the suites running in parallel).
// A test picks at random among them, so that two test processes rarely try the same one, and
// checks it can bind each: `count` consecutive ports (a server per rail takes base + i).
inline int FirstEphemeralPort() {
  int low = 32768;
  if (std::FILE* range = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(range, "%d", &low) != 1) low = 32768;
    std::fclose(range);
  }
  return low;
}

inline bool CanBindLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// Where the ephemeral range leaves no room below it (a container's `1024 65535`): a port the
// kernel picks, with the window this helper otherwise avoids; -1 when `count` cannot follow it.
inline int KernelsFreePort(int count) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0;
    ::close(fd);
    if (!ok) return -1;
    const int first = ntohs(addr.sin_port);
    bool all_free = first + count - 1 <= 65535;
    for (int i = 1; i < count && all_free; ++i) all_free = CanBindLoopback(first + i);
    if (all_free) return first;
  }
  return -1;
}

// A loopback port nothing listens on now, for a server that must be told its port up front
// (Prometheus, openssl s_server, ib_write_bw): the first of `count` free consecutive ports, or -1.
inline int FreePort(int count = 1) {
  // Above every default port of cmax and its tools, below the labs the tests bring up (their
  // slurmctld ports from 23817 on, tests/integration) and the ephemeral range.
  constexpr int kLowest = 20000;
  const int end = std::min(23800, FirstEphemeralPort());
  if (end - kLowest < 1000) return KernelsFreePort(count);  // an ephemeral range set wide
  static std::mt19937 pick(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> base(kLowest, end - count);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int first = base(pick);
    bool all_free = true;
    for (int i = 0; i < count && all_free; ++i) all_free = CanBindLoopback(first + i);
    if (all_free) return first;
  }
  return -1;
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
