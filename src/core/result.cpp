#include "core/result.hpp"

namespace cmax {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid-argument";
    case ErrorCode::kNotFound: return "not-found";
    case ErrorCode::kAlreadyExists: return "already-exists";
    case ErrorCode::kPermissionDenied: return "permission-denied";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kCorrupt: return "corrupt";
    case ErrorCode::kBusy: return "busy";
    case ErrorCode::kInterrupted: return "interrupted";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

}  // namespace cmax
