// One TCP connection, closed as soon as it is made: whether this machine reaches HOST:PORT. The
// audit's outbound-internet check uses it, and only when told (--allow-side-effects).
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

// Resolves `host` (getaddrinfo: the resolver's own timeouts apply to that part) and tries each
// address in turn until one accepts, all within `timeout`. Errors: kNotFound (the name does not
// resolve), kTimeout (no answer in time), kUnavailable (refused or unreachable, with the
// reason). Sends nothing.
Result<void> TcpConnect(const std::string& host, uint16_t port, Duration timeout);

}  // namespace cmax::sys
