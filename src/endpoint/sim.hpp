// serve-sim's model of an inference server, as pure functions: what a request asks for, how
// long it takes (prefill proportional to the uncached input, a fixed time per output token),
// which fault it gets, and the exact bytes of each response shape (OpenAI chat, completions,
// Anthropic messages). The event loop that sends them is sim_server. A stand-in for a real
// inference server, named as one wherever it is used.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "endpoint/api.hpp"
#include "endpoint/http_request.hpp"

namespace cmax::endpoint {

// Faults serve-sim can give a request: chosen per request by the header "x-cmax-sim-fault:
// NAME", or at random by the rates in SimConfig.
enum class SimFault {
  kNone,
  kTooMany,        // 429 with retry-after
  kServerError,    // 500
  kCut,            // the connection is closed half-way through the stream
  kErrorEvent,     // an error event half-way (after HTTP 200), then [DONE]
  kSlowStart,      // the first token comes slow_start_ms late
  kMalformedJson,  // one chunk is not JSON
  kHugeLine,       // one 10 MB data line
  kNoDone,         // the stream ends without [DONE] / message_stop
  kHttp10,         // an HTTP/1.0 answer, its end marked by closing the connection
  kByteSplit,      // every byte of the answer in its own write
  kTrickle,        // one byte per trickle interval (slowloris in reverse)
  kCloseEarly,     // the connection is closed before any answer
};
std::optional<SimFault> ParseSimFault(std::string_view name);
std::string_view SimFaultName(SimFault fault);

struct SimConfig {
  std::string model = "cmax-sim";
  double base_ms = 0;               // before prefill starts
  double prefill_us_per_token = 0;  // per uncached input token
  double decode_ms = 0;             // per output token after the first
  // Each token in its own write, streams taking turns like an engine's step loop (a real server
  // sends every step's token on its own); otherwise all tokens that are due go in one write.
  bool token_writes = false;
  size_t block_tokens = 16;
  size_t cache_blocks = 1 << 20;
  uint64_t default_max_tokens = 128;
  double rate_429 = 0, rate_500 = 0, rate_cut = 0, rate_error_event = 0, rate_slow_start = 0;
  double retry_after_s = 1;
  double slow_start_ms = 2000;
  double trickle_ms = 100;
  uint64_t seed = 1;
  // What a hostile or broken client may hold (slowloris, idle sockets, socket floods).
  double header_timeout_s = 10;    // a request must be whole this long after its first byte
  double idle_timeout_s = 60;      // a connection with no request under way, and one whose
                                   // answer the client stops reading, is closed after this
  size_t max_connections = 20000;  // more are answered 503 and closed
};
// serve-sim's bounds, the same for its flags and for CheckSimConfig: delays (ms) up to an hour,
// per-token prefill (µs) up to a second, Retry-After and the timeouts (s) up to a day.
inline constexpr double kMaxSimDelayMs = 3'600'000;
inline constexpr double kMaxSimPrefillUs = 1'000'000;
inline constexpr double kMaxSimSeconds = 86'400;
// Whether the numbers make sense (rates in [0, 1], delays and timeouts finite and not negative,
// timeouts and the connection limit above 0); the error names the field.
Result<void> CheckSimConfig(const SimConfig& config);

struct SimRequest {
  Api api = Api::kChat;
  bool stream = false;
  bool include_usage = false;
  std::string prompt;  // every message's content, in order: what the cache sees
  uint64_t max_tokens = 0;
  std::optional<SimFault> fault;  // from the header
};

struct SimError {
  int status = 400;
  std::string message;
};
// Reads a POST to one of the three API paths; an error says what status to answer.
tl::expected<SimRequest, SimError> ParseSimRequest(const HttpRequest& request,
                                                   const SimConfig& config);

// Draws the fault for a request without one in its header.
SimFault DrawFault(const SimConfig& config, std::mt19937_64& rng);

// The time to the first token and between tokens, in nanoseconds.
int64_t FirstTokenDelayNs(const SimConfig& config, uint64_t uncached_tokens, SimFault fault);
int64_t DecodeNs(const SimConfig& config);

// The n-th generated word (with its leading space).
std::string_view SimWord(uint64_t n);

struct SimUsage {
  uint64_t input = 0;
  uint64_t cached = 0;
  uint64_t output = 0;
};

// One response's pieces. `id` is unique per request; sent_ns goes into the first chunk.
std::string StreamStart(Api api, std::string_view id, std::string_view model, const SimUsage& usage,
                        int64_t sent_ns);
std::string StreamToken(Api api, std::string_view id, std::string_view model, uint64_t n,
                        bool first, int64_t sent_ns);
std::string StreamEnd(Api api, std::string_view id, std::string_view model, const SimUsage& usage,
                      bool include_usage, bool done_marker);
std::string StreamErrorEvent(Api api, std::string_view message);
std::string FullResponseBody(Api api, std::string_view id, std::string_view model,
                             const SimUsage& usage);
std::string ErrorBody(int status, std::string_view message);
std::string_view StatusText(int status);

}  // namespace cmax::endpoint
