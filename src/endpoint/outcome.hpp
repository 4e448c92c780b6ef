// How a call ended, decided from what its transfer saw, whichever transport carried it. Pure:
// the transports gather the facts (ExchangeFacts), ClassifyOutcome gives the class and the
// message, and tests/unit/endpoint/outcome_test.cpp holds the table of every class.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::endpoint {

// A failed request's class. The names (ErrorClassName) are what the results and the summary
// show; the OpenAI SDK retries some of them (Retryable).
enum class ErrorClass : uint8_t {
  kNone,         // the call succeeded
  kDns,          // the host did not resolve
  kConnect,      // no connection, or it broke before any answer
  kTls,          // the TLS handshake or the certificate failed
  kTimeout,      // a deadline passed: connect, idle or the whole request
  kTruncated,    // the answer began and did not end whole
  kMalformed,    // the answer broke HTTP, SSE, JSON or a size limit
  kStreamError,  // the server answered 200 and said it failed (an error event or body)
  kHttp408,
  kHttp409,
  kHttp429,
  kHttp4xx,    // any other 4xx
  kHttp5xx,    // any 5xx
  kHttpOther,  // a final status outside 200, 4xx and 5xx
  kCancelled,  // the run ended before the call (interrupted)
  kOther,      // the transport failed in a way none of the above names
};
inline constexpr ErrorClass kLastErrorClass = ErrorClass::kOther;

// "dns", "connect", "tls", "timeout", "truncated", "malformed", "stream-error", "http-408",
// "http-409", "http-429", "http-4xx", "http-5xx", "http-other", "cancelled", "other"; "" for none.
std::string_view ErrorClassName(ErrorClass error_class);
// The class of a final HTTP status other than 200.
ErrorClass HttpErrorClass(long status);
// Whether an OpenAI-SDK-like client would try again: 408, 409, 429, 5xx, connection errors and
// timeouts.
bool Retryable(ErrorClass error_class);

// What one transfer saw, whichever transport carried it.
struct ExchangeFacts {
  ErrorClass transport_failure = ErrorClass::kNone;  // the connection's own failure, if any
  std::string_view transport_why;                    // its message
  bool too_big = false;                              // a whole answer over the body limit
  std::optional<std::string_view> bad_head;          // why the response head was refused
  long http_status = 0;
  std::string_view body;  // a non-streamed answer, or the start of an error's body
  bool stream = false;
  // A streamed 200:
  std::optional<std::string_view> stream_error;  // the first error event
  bool malformed_event = false;                  // an event that was not JSON
  bool oversized_event = false;                  // an event over the event size limit
  bool cut_in_event = false;                     // the stream ended inside an event
  bool saw_done = false;                         // [DONE] or message_stop
  bool saw_finish = false;                       // a finish_reason
  bool any_chunk = false;                        // a choice-bearing chunk came
  // A non-streamed 200, as ReadFullResponse read it:
  std::optional<std::string_view> whole_error;
  bool whole_malformed = false;
};

struct Outcome {
  ErrorClass error_class = ErrorClass::kNone;
  std::string message;  // empty when kNone
};

// The rules, first match wins: the body limit; a refused head; the transport's failure; a status
// other than 200; then for a stream an error event, a malformed or oversized event, a missing end
// marker (or an end inside an event), no chunk at all; for a whole answer its error or a body
// that is not a completion.
Outcome ClassifyOutcome(const ExchangeFacts& facts);

}  // namespace cmax::endpoint
