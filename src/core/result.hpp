// Result<T>: the return type of every operation that can fail in an expected way.
// An Error carries a code a caller can branch on and a message a person can act on.
#pragma once

#include <fmt/format.h>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

namespace cmax {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kUnavailable,
  kTimeout,
  kIo,
  kCorrupt,
  kBusy,
  kInterrupted,
  kUnsupported,
  kInternal,
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// Use only the members std::expected shares (bool, *, ->, value, error, value_or, and_then)
// so that moving to C++23 is a one-line change.
template <class T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> Fail(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

template <class... Args>
tl::unexpected<Error> Fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return tl::unexpected<Error>(Error{code, fmt::format(format, std::forward<Args>(args)...)});
}

// Adds context in front of an error's message, keeping its code.
inline tl::unexpected<Error> Wrap(const Error& error, std::string_view context) {
  return tl::unexpected<Error>(Error{error.code, fmt::format("{}: {}", context, error.message)});
}

// An error the user could not have caused by what they typed (the store, a port, a step of a run
// already recorded): a kInvalidArgument or kNotFound from deep inside becomes kIo, so that the
// command exits 3, as the run it recorded does, and not 2 ("your input").
inline tl::unexpected<Error> SystemFailure(const Error& error) {
  const bool users =
      error.code == ErrorCode::kInvalidArgument || error.code == ErrorCode::kNotFound;
  return tl::unexpected<Error>(Error{users ? ErrorCode::kIo : error.code, error.message});
}

std::string_view ErrorCodeName(ErrorCode code);

}  // namespace cmax
