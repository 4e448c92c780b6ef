// One TCP connection, closed as soon as it is made: whether this machine reaches HOST:PORT. The
// audit's outbound-internet check uses it, and only when told (--allow-side-effects).
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

// Resolves `host` and tries each address in turn (each an equal share of the time left) until
// one accepts, all within `timeout`. Sends nothing. Errors: kNotFound (the name does not
// resolve), kTimeout (no answer, or no name, in time), kUnavailable (refused or unreachable,
// with the reason): the network's answers; kInternal when this machine could not try (no
// socket, a resolver failure of its own).
Result<void> TcpConnect(const std::string& host, uint16_t port, Duration timeout);

}  // namespace cmax::sys
