// The one way a test waits: for a state (a file, a line in a log, a process gone, a node state),
// never for a fixed time. Polls `done` until it holds or the timeout passes.
#pragma once

#include <unistd.h>

#include <arpa/inet.h>
#include <chrono>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>

namespace cmax::testing {

// True as soon as `done()` holds; false when it still does not after `timeout`.
template <class Done>
bool WaitUntil(Done done, std::chrono::milliseconds timeout = std::chrono::seconds(20),
               std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

// What the file holds now ("" when it is not there yet).
inline std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Waits until the file (a daemon's log, a stand-in's marker) contains `text`.
inline bool WaitForText(const std::string& path, const std::string& text,
                        std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  return WaitUntil([&] { return FileText(path).find(text) != std::string::npos; }, timeout);
}

// Whether something accepts connections on 127.0.0.1:port now.
inline bool Listening(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return up;
}

// Waits until a server (a daemon the test started) listens on 127.0.0.1:port.
inline bool WaitForPort(int port, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  return WaitUntil([&] { return Listening(port); }, timeout);
}

}  // namespace cmax::testing
