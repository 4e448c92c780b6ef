// One TCP connection on loopback: a listening socket of the test's own accepts it (and is sent
// nothing); a port nothing listens on refuses it; an address no route answers fails within the
// time given; a name that cannot resolve is told apart from the rest.
#include "sys/tcp_connect.hpp"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include "support/free_port.hpp"

namespace cmax::sys {
namespace {

using namespace std::chrono_literals;

TEST(TcpConnect, ConnectsSendsNothingAndSaysWhyNot) {
  int port = 0;
  const int listener = testing::ListenOnLoopback(&port);
  ASSERT_GE(listener, 0);
  for (const char* host : {"127.0.0.1", "localhost"}) {
    const auto ok = TcpConnect(host, static_cast<uint16_t>(port), 5s);
    EXPECT_TRUE(ok) << host << ": " << ok.error().message;
  }
  // Accepted, and closed by the other side without a byte.
  pollfd p{.fd = listener, .events = POLLIN, .revents = 0};
  ASSERT_EQ(::poll(&p, 1, 1000), 1);
  const int fd = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(fd, 0);
  char byte = 0;
  EXPECT_EQ(::read(fd, &byte, 1), 0);
  ::close(fd);
  ::close(listener);

  const auto refused = TcpConnect("127.0.0.1", static_cast<uint16_t>(port), 5s);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable) << refused.error().message;
  EXPECT_NE(refused.error().message.find("refused"), std::string::npos) << refused.error().message;

  // TEST-NET-1 (RFC 5737): nothing answers; dropped (no answer in time) or unreachable.
  const auto start = std::chrono::steady_clock::now();
  const auto dropped = TcpConnect("192.0.2.1", 443, 300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  ASSERT_FALSE(dropped);
  EXPECT_TRUE(dropped.error().code == ErrorCode::kTimeout ||
              dropped.error().code == ErrorCode::kUnavailable)
      << dropped.error().message;

  // A name of the reserved .invalid domain resolves nowhere (or the resolver does not answer
  // in time, where no name server is reachable).
  const auto nowhere = TcpConnect("cmax-test.invalid", 443, 3s);
  ASSERT_FALSE(nowhere);
  EXPECT_TRUE(nowhere.error().code == ErrorCode::kNotFound ||
              nowhere.error().code == ErrorCode::kTimeout)
      << nowhere.error().message;
}

}  // namespace
}  // namespace cmax::sys
