// The test helper that names a port for a server told its port up front: the ports it gives
// lie below the kernel's ephemeral range, where no client's connect() can take one between the
// choice and the server's bind (the CI failure "Couldn't bind to port 53516: Address already
// in use"), and every one of the run of ports asked for can be bound.
#include "support/free_port.hpp"

#include <gtest/gtest.h>

namespace cmax::testing {
namespace {

TEST(FreePort, ARunOfPortsBelowTheEphemeralRangeThatCanEachBeBound) {
  for (int i = 0; i < 20; ++i) {
    const int first = FreePort(3);
    ASSERT_GE(first, 20000);
    EXPECT_LT(first + 2, FirstEphemeralPort());
    EXPECT_LT(first + 2, 23800) << "the test labs' ports begin at 23817";
    for (int port = first; port < first + 3; ++port) EXPECT_TRUE(CanBindLoopback(port)) << port;
  }
}

TEST(FreePort, APortSomeoneListensOnIsNotFree) {
  int port = 0;
  const int listener = ListenOnLoopback(&port);
  ASSERT_GE(listener, 0);
  EXPECT_FALSE(CanBindLoopback(port));
  ::close(listener);
}

}  // namespace
}  // namespace cmax::testing
