#include "endpoint/plan.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "core/strings.hpp"
#include "endpoint/http_head.hpp"
#include "endpoint/workload.hpp"

namespace cmax::endpoint {
namespace {

// The paths that name an endpoint rather than a base, as the APIs end them.
constexpr std::array<std::string_view, 3> kApiPathEnds = {"/chat/completions", "/completions",
                                                          "/messages"};

}  // namespace

Result<std::string> EndpointUrl(const std::string& url, Api api, const std::string& endpoint) {
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    return Fail(ErrorCode::kInvalidArgument, "--url must start with http:// or https://");
  }
  const size_t authority = url.find("://") + 3;
  const size_t query_at = std::min(url.find_first_of("?#", authority), url.size());
  const size_t path_at = std::min(url.find('/', authority), query_at);
  const std::string origin = url.substr(0, path_at);
  std::string path = url.substr(path_at, query_at - path_at);
  const std::string query = url.substr(query_at);
  const std::string_view usual = DefaultPath(api);  // "/v1/..."
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (!endpoint.empty()) {
    // vLLM's --base-url + --endpoint: the path given, below the base, whatever it is.
    if (!endpoint.starts_with('/') || endpoint.find_first_of("?# ") != std::string::npos) {
      return Fail(ErrorCode::kInvalidArgument, "--endpoint must be a path starting with /");
    }
    return origin + path + endpoint + query;
  }
  for (const std::string_view end : kApiPathEnds) {
    if (path.ends_with(end)) return origin + path + query;
  }
  if (path.empty()) return origin + std::string(usual) + query;
  if (path.ends_with("/v1")) return origin + path + std::string(usual.substr(3)) + query;
  return origin + path + std::string(usual) + query;
}

Result<std::string> ApiKey(const KeySource& source, Api api, sys::FileSystem& fs,
                           const EnvLookup& env) {
  if (!source.file.empty()) {
    auto text = fs.ReadFile(source.file, 64 << 10);
    if (!text) return Wrap(text.error(), "--api-key-file");
    if (Trim(*text).empty()) {
      return Fail(ErrorCode::kInvalidArgument, "--api-key-file {} is empty",
                  SanitizeUtf8(source.file));
    }
    return std::string(Trim(*text));
  }
  if (!source.env.empty()) {
    if (!IsEnvName(source.env)) {
      // Most likely the key itself, given where its variable's name goes: never repeated.
      return Fail(ErrorCode::kInvalidArgument,
                  "--api-key-env names an environment variable (letters, digits, '_'), not the "
                  "key; what was given is not shown");
    }
    const std::string value = env(source.env);
    const std::string key(Trim(value));
    if (key.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "--api-key-env {}: the variable is not set or empty",
                  SanitizeUtf8(source.env));
    }
    return key;
  }
  const std::string value = env(api == Api::kAnthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
  return std::string(Trim(value));
}

Result<std::vector<std::string>> RequestHeaders(Api api, const std::string& key,
                                                const std::vector<std::string>& extra) {
  std::vector<std::string> headers;
  if (!key.empty()) {
    // A line break in a header would let the key (or a file posing as one) add headers.
    if (key.find_first_of("\r\n") != std::string::npos) {
      return Fail(ErrorCode::kInvalidArgument, "the API key holds a line break");
    }
    headers.push_back(api == Api::kAnthropic ? "x-api-key: " + key
                                             : "Authorization: Bearer " + key);
  }
  if (api == Api::kAnthropic) headers.emplace_back("anthropic-version: 2023-06-01");
  for (const std::string& h : extra) {
    const size_t colon = h.find(':');
    // A name is a token right up to its colon (RFC 9112 5.1): "X-Key : v" is refused by
    // servers that follow it, serve-sim among them, with a 400 for every request.
    const bool named =
        colon != std::string::npos && colon != 0 &&
        std::ranges::all_of(std::string_view(h).substr(0, colon), IsFieldNameCharacter);
    // Errors name the header by its name alone, never its value: a header is often a credential.
    const std::string shown = named ? " " + h.substr(0, std::min<size_t>(colon, 40)) : "";
    if (h.find_first_of("\r\n") != std::string::npos) {
      return Fail(ErrorCode::kInvalidArgument,
                  "header{} holds a line break: a header is one line (its value is not shown)",
                  shown);
    }
    if (!named) {
      return Fail(ErrorCode::kInvalidArgument,
                  "a header (--header, or a line of --header-file) is not 'Name: value' with a "
                  "name of letters, digits and "
                  "!#$%&'*+-.^_`|~ right up to its colon (what was given is not shown: it may "
                  "hold a credential)");
    }
    headers.push_back(h);
  }
  return headers;
}

std::vector<std::string> HeaderFileLines(std::string_view text) {
  std::vector<std::string> headers;
  for (std::string_view line : SplitLines(text)) {
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (Trim(line).empty() || Trim(line).starts_with('#')) continue;
    headers.emplace_back(line);
  }
  return headers;
}

std::vector<std::string> RequestSecrets(const std::string& key,
                                        const std::vector<std::string>& extra) {
  std::vector<std::string> secrets;
  if (!key.empty()) secrets.push_back(key);
  for (const std::string& header : extra) {
    const size_t colon = header.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = ToLower(Trim(std::string_view(header).substr(0, colon)));
    const auto has = [&name](std::string_view part) {
      return name.find(part) != std::string::npos;
    };
    // "token" as a word of the name (X-Token, X-Auth-Token), not X-Max-Tokens.
    const auto words = Split(name, '-');
    const bool credential = has("auth") || has("key") || has("secret") || has("pass") ||
                            has("credential") || has("cookie") || has("session") ||
                            has("signature") || std::ranges::find(words, "token") != words.end();
    if (!credential) continue;
    const std::string_view value = Trim(std::string_view(header).substr(colon + 1));
    // A number is a setting, not a secret: redacting it would hide ordinary figures.
    if (value.empty() || ParseWhole<uint64_t>(value)) continue;
    secrets.emplace_back(value);
    // "Bearer sk-...": a gateway may echo the token alone.
    if (const size_t space = value.find(' '); space != std::string_view::npos) {
      const std::string_view credential_alone = Trim(value.substr(space + 1));
      if (!credential_alone.empty()) secrets.emplace_back(credential_alone);
    }
  }
  return secrets;
}

Result<Slo> ParseGoodput(const std::vector<std::string>& items) {
  Slo slo;
  for (const std::string& item : items) {
    for (std::string_view part : Split(item, ',')) {
      part = Trim(part);
      if (part.empty()) continue;
      const size_t colon = part.find(':');
      const double ms = colon == std::string_view::npos
                            ? -1
                            : ParseNonNegative(part.substr(colon + 1)).value_or(-1);
      const std::string_view key = colon == std::string_view::npos ? part : part.substr(0, colon);
      if (ms < 0) {
        return Fail(ErrorCode::kInvalidArgument, "--goodput '{}': use ttft:MS, tpot:MS or e2el:MS",
                    SanitizeUtf8(part));
      }
      std::optional<double>* target = key == "ttft"                   ? &slo.ttft_ms
                                      : key == "tpot"                 ? &slo.tpot_ms
                                      : key == "e2el" || key == "e2e" ? &slo.e2e_ms
                                                                      : nullptr;
      if (target != nullptr && target->has_value()) {
        return Fail(ErrorCode::kInvalidArgument, "--goodput '{}': {} is given twice",
                    SanitizeUtf8(part), SanitizeUtf8(key));
      }
      if (target != nullptr) {
        *target = ms;
      } else {
        return Fail(ErrorCode::kInvalidArgument, "--goodput '{}': unknown metric '{}'",
                    SanitizeUtf8(part), SanitizeUtf8(key));
      }
    }
  }
  return slo;
}

Result<std::vector<size_t>> SweepLevels(const std::vector<size_t>& levels, size_t max_concurrency) {
  if (!levels.empty()) {
    if (std::find(levels.begin(), levels.end(), 0U) != levels.end())
      return Fail(ErrorCode::kInvalidArgument, "--levels: a level of 0");
    return levels;
  }
  if (max_concurrency == 0) return Fail(ErrorCode::kInvalidArgument, "--max-concurrency of 0");
  std::vector<size_t> out;
  for (size_t c = 1; c <= max_concurrency; c *= 2) {
    out.push_back(c);
    if (c > max_concurrency / 2) break;  // the next doubling would pass it (or overflow)
  }
  return out;
}

size_t SweepRequests(size_t requests, double duration_s, size_t concurrency) {
  if (duration_s > 0) return requests;
  return std::max(requests > 0 ? requests : size_t{64}, 4 * concurrency);
}

LoadShape WarmupShape(const LoadShape& measured, size_t warmup) {
  LoadShape warm = measured;
  warm.requests = warmup;
  warm.duration_s = 0;
  warm.rate = 0;
  warm.trace_times = false;
  return warm;
}

std::vector<std::string> ReplayMarkers(size_t copies, uint64_t seed, bool no_marker) {
  std::vector<std::string> markers;
  markers.reserve(copies);
  for (size_t i = 0; i < copies; ++i)
    markers.push_back(no_marker ? std::string() : ReplayMarker(seed * 1000 + i + 1));
  return markers;
}

}  // namespace cmax::endpoint
