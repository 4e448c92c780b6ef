#include "sys/tcp_connect.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace cmax::sys {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// What one name lookup found, shared between the caller and the thread that asks the resolver:
// getaddrinfo has no timeout of its own (the resolver's can add up to tens of seconds), so the
// caller waits for it only until its deadline and leaves the thread to finish on its own.
struct Lookup {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  int rc = 0;
  std::vector<sockaddr_storage> addresses;
  std::vector<socklen_t> lengths;
};

void Resolve(const std::shared_ptr<Lookup>& lookup, const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  const std::lock_guard lock(lookup->mutex);
  lookup->rc = rc;
  for (const addrinfo* a = rc == 0 ? found : nullptr; a != nullptr; a = a->ai_next) {
    sockaddr_storage address{};
    std::memcpy(&address, a->ai_addr, a->ai_addrlen);
    lookup->addresses.push_back(address);
    lookup->lengths.push_back(a->ai_addrlen);
  }
  if (found != nullptr) freeaddrinfo(found);
  lookup->done = true;
  lookup->done_cv.notify_all();
}

// Connects one address before `deadline`: 0 when it accepted, else the errno (ETIMEDOUT when the
// deadline passed first). *local is set when the failure was this machine's (no socket).
int ConnectOne(const sockaddr_storage& address, socklen_t length, SteadyTime deadline,
               bool* local) {
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *local = true;
    return errno;
  }
  int error = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
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
        socklen_t size = sizeof so_error;
        error = getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &size) == 0 ? so_error : errno;
        break;
      }
    }
  }
  close(fd);
  return error;
}

// The network's answers: the host cannot be reached from here (refused, unreachable, dropped,
// or a local firewall's refusal). Anything else is this machine failing to try.
bool NetworkAnswer(int error) {
  switch (error) {
    case ECONNREFUSED:
    case ECONNRESET:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN:
    case ETIMEDOUT:
    case EACCES:
    case EPERM: return true;
    default: return false;
  }
}

}  // namespace

Result<void> TcpConnect(const std::string& host, uint16_t port, Duration timeout) {
  const SteadyTime deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  const double seconds = std::chrono::duration<double>(timeout).count();
  auto lookup = std::make_shared<Lookup>();
  std::thread(Resolve, lookup, host, port).detach();
  std::unique_lock lock(lookup->mutex);
  if (!lookup->done_cv.wait_until(lock, deadline, [&] { return lookup->done; })) {
    return Fail(ErrorCode::kTimeout, "{} did not resolve within {} s", host, seconds);
  }
  if (lookup->rc == EAI_NONAME || lookup->rc == EAI_NODATA || lookup->rc == EAI_AGAIN) {
    return Fail(ErrorCode::kNotFound, "{} does not resolve ({})", host, gai_strerror(lookup->rc));
  }
  if (lookup->rc != 0) {
    return Fail(ErrorCode::kInternal, "cannot look up {}: {}", host, gai_strerror(lookup->rc));
  }
  const std::vector<sockaddr_storage> addresses = lookup->addresses;
  const std::vector<socklen_t> lengths = lookup->lengths;
  lock.unlock();
  // Each address gets an equal share of the time left, so that a family that drops packets
  // (an IPv6 route to nowhere) does not use it all before the next is tried. The network's
  // answer counts over this machine's failure to try one address (no IPv6 socket here).
  int network = 0;
  int local = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    const auto share = (deadline - now) / static_cast<int64_t>(addresses.size() - i);
    bool no_socket = false;
    const int error = ConnectOne(addresses[i], lengths[i], now + share, &no_socket);
    if (error == 0) return {};
    (no_socket || !NetworkAnswer(error) ? local : network) = error;
  }
  if (network == ETIMEDOUT || (network == 0 && local == 0)) {
    return Fail(ErrorCode::kTimeout, "no answer from {}:{} within {} s", host, port, seconds);
  }
  if (network != 0) {
    return Fail(ErrorCode::kUnavailable, "{}:{}: {}", host, port, std::strerror(network));
  }
  return Fail(ErrorCode::kInternal, "cannot try {}:{}: {}", host, port, std::strerror(local));
}

}  // namespace cmax::sys
