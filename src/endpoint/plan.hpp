// The decisions `cmax endpoint` takes before and around the load, as plain functions over
// values: which URL a --url means, the key and the headers sent, the SLOs, the sweep's levels
// and request counts, the warm-up, the replay's markers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "endpoint/api.hpp"
#include "endpoint/load.hpp"
#include "endpoint/metrics.hpp"
#include "sys/file_system.hpp"

namespace cmax::endpoint {

// The URL requests go to, following the base-URL convention of the OpenAI SDK and vLLM's
// --base-url. A path that already ends in an API path (/chat/completions, /completions,
// /messages) is the endpoint itself. No path (or "/") gets the API's usual path
// (/v1/chat/completions, /v1/completions, /v1/messages). Any other path is a base: the API's
// path below /v1 is appended when the base ends in /v1 (http://h:8000/v1 ->
// http://h:8000/v1/chat/completions), the whole usual path otherwise (a proxy prefix:
// http://h/proxy -> http://h/proxy/v1/chat/completions). A query stays at the end.
// `endpoint` (vLLM's --endpoint), when given, is the path below the base instead: for a server
// whose API lives elsewhere (http://h:8000 + /generate).
Result<std::string> EndpointUrl(const std::string& url, Api api, const std::string& endpoint = {});

// Where the API key comes from: --api-key-file, else --api-key-env, else the API's usual
// variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) when it is set.
struct KeySource {
  std::string file;
  std::string env;
};
using EnvLookup = std::function<std::string(const std::string& name)>;

// The key, trimmed. A named file or variable that is empty is an error: a run without the key
// the user meant to send would measure 401s. Empty when no key is named and none is set.
Result<std::string> ApiKey(const KeySource& source, Api api, sys::FileSystem& fs,
                           const EnvLookup& env);

// The headers every request carries: the key as the API wants it (Authorization: Bearer, or
// x-api-key and anthropic-version), then the user's own "Name: value" headers, checked.
Result<std::vector<std::string>> RequestHeaders(Api api, const std::string& key,
                                                const std::vector<std::string>& extra);

// The headers of a --header-file: one "Name: value" a line (a CRLF file too), blank lines and
// lines starting with '#' skipped; checked as --header's are (RequestHeaders). A file keeps a
// credential off the command line, where `ps` shows it to every user of the machine.
std::vector<std::string> HeaderFileLines(std::string_view text);

// What the requests carry that must never be printed or written, though a gateway may echo it in
// an error body: the API key, and each --header whose name says it carries credentials (a name
// holding "auth", "key", "secret", "pass", "credential", "cookie", "session" or "signature", or
// the word "token"), its whole value and the credential after a scheme word ("Bearer",
// "Basic"); a value that is a number is a setting, not a secret.
std::vector<std::string> RequestSecrets(const std::string& key,
                                        const std::vector<std::string>& extra);

// --goodput items: "ttft:MS", "tpot:MS", "e2el:MS", comma-separated or repeated.
Result<Slo> ParseGoodput(const std::vector<std::string>& items);

// The sweep's concurrency levels: the ones given, else powers of 2 up to max_concurrency.
Result<std::vector<size_t>> SweepLevels(const std::vector<size_t>& levels, size_t max_concurrency);

// Requests at one sweep level: enough that every level reaches a steady state (at least 4 per
// slot, 64 at least), unless --duration bounds the level instead.
size_t SweepRequests(size_t requests, double duration_s, size_t concurrency);

// The warm-up before a measured run: `warmup` requests at the run's concurrency, as fast as
// allowed, not on the trace's clock.
LoadShape WarmupShape(const LoadShape& measured, size_t warmup);

// One marker per replayed copy of a trace, so that copies do not share the server's cache
// (empty markers with no_marker: then they do).
std::vector<std::string> ReplayMarkers(size_t copies, uint64_t seed, bool no_marker);

}  // namespace cmax::endpoint
