#include "endpoint/outcome.hpp"

#include <fmt/format.h>

#include "endpoint/api.hpp"

namespace cmax::endpoint {

std::string_view ErrorClassName(ErrorClass error_class) {
  switch (error_class) {
    case ErrorClass::kNone: return "";
    case ErrorClass::kDns: return "dns";
    case ErrorClass::kConnect: return "connect";
    case ErrorClass::kTls: return "tls";
    case ErrorClass::kTimeout: return "timeout";
    case ErrorClass::kTruncated: return "truncated";
    case ErrorClass::kMalformed: return "malformed";
    case ErrorClass::kStreamError: return "stream-error";
    case ErrorClass::kHttp408: return "http-408";
    case ErrorClass::kHttp409: return "http-409";
    case ErrorClass::kHttp429: return "http-429";
    case ErrorClass::kHttp4xx: return "http-4xx";
    case ErrorClass::kHttp5xx: return "http-5xx";
    case ErrorClass::kHttpOther: return "http-other";
    case ErrorClass::kCancelled: return "cancelled";
    case ErrorClass::kOther: return "other";
  }
  return "other";
}

ErrorClass HttpErrorClass(long status) {
  if (status == 429) return ErrorClass::kHttp429;
  if (status == 408) return ErrorClass::kHttp408;  // 408 and 409 are retried, other 4xx not
  if (status == 409) return ErrorClass::kHttp409;
  if (status >= 400 && status < 500) return ErrorClass::kHttp4xx;
  if (status >= 500 && status < 600) return ErrorClass::kHttp5xx;
  return ErrorClass::kHttpOther;
}

bool Retryable(ErrorClass error_class) {
  switch (error_class) {
    case ErrorClass::kHttp408:
    case ErrorClass::kHttp409:
    case ErrorClass::kHttp429:
    case ErrorClass::kHttp5xx:
    case ErrorClass::kConnect:
    case ErrorClass::kTimeout: return true;
    default: return false;
  }
}

Outcome ClassifyOutcome(const ExchangeFacts& f) {
  if (f.too_big) return {ErrorClass::kMalformed, "response larger than the body limit"};
  if (f.bad_head) return {ErrorClass::kMalformed, std::string(*f.bad_head)};
  if (f.transport_failure != ErrorClass::kNone) {
    return {f.transport_failure, std::string(f.transport_why)};
  }
  if (f.http_status != 200) {
    return {HttpErrorClass(f.http_status),
            fmt::format("HTTP {}: {}", f.http_status, ErrorMessage(f.body))};
  }
  if (f.stream) {
    if (f.stream_error) return {ErrorClass::kStreamError, std::string(*f.stream_error)};
    if (f.malformed_event) return {ErrorClass::kMalformed, "a stream event was not JSON"};
    if (f.oversized_event) {
      return {ErrorClass::kMalformed, "a stream event exceeded the size limit"};
    }
    if (f.cut_in_event || (!f.saw_done && !f.saw_finish)) {
      return {ErrorClass::kTruncated, "the stream ended without its end marker"};
    }
    if (!f.any_chunk) return {ErrorClass::kTruncated, "the stream carried no answer"};
    return {};
  }
  if (f.whole_error) return {ErrorClass::kStreamError, std::string(*f.whole_error)};
  if (f.whole_malformed) return {ErrorClass::kMalformed, "the response was not a completion"};
  return {};
}

}  // namespace cmax::endpoint
