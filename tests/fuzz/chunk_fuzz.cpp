// The stream chunk reader and serve-sim's request parser and request reader on any bytes: they
// never crash, throw or read past their input (ASan watches), memory stays bounded, and a chunk
// the reader calls well-formed content is one the full JSON library accepts as an object, and a
// reader with the quick chunk path says, event by event, what one with the full parse says (and
// at the end the same text, usage and send stamp); the
// client's HTTP response reader takes the same bytes as a response. The
// first byte picks the API and the split size; the bytes are also a request body to serve-sim.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "endpoint/api.hpp"
#include "endpoint/http_request.hpp"
#include "endpoint/http_response.hpp"
#include "endpoint/sim.hpp"
#include "endpoint/sse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using namespace cmax::endpoint;  // NOLINT(google-build-using-namespace): a fuzz entry point
  const Api api = static_cast<Api>(data[0] % 3);
  const size_t chunk = 1 + (data[0] >> 2) % 13;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  StreamReader reader(api, true);
  StreamReader full(api, true, /*quick=*/false);
  SseParser parser(1024);
  for (size_t at = 0; at < text.size(); at += chunk) {
    parser.Feed(text.substr(at, chunk), [&](const SseEvent& e) {
      const StreamEffect effect = reader.Read(e);
      if (effect.content && !effect.error) {
        const auto doc = nlohmann::json::parse(e.data, nullptr, /*allow_exceptions=*/false);
        if (!doc.is_object()) std::abort();  // content read from something that is not JSON
      }
      const StreamEffect reference = full.Read(e);
      if (effect.choice != reference.choice || effect.content != reference.content ||
          effect.done != reference.done || effect.finish != reference.finish ||
          effect.malformed != reference.malformed || effect.error != reference.error) {
        std::abort();  // the quick path read a chunk otherwise than the full parse
      }
    });
  }
  parser.Finish();
  if (reader.Text().size() > text.size()) std::abort();
  if (reader.Text() != full.Text() || reader.ContentChunks() != full.ContentChunks() ||
      reader.ServerSentNs() != full.ServerSentNs()) {
    std::abort();
  }
  const auto& usage = reader.Usage();
  const auto& reference_usage = full.Usage();
  if (usage.has_value() != reference_usage.has_value() ||
      (usage && (usage->input != reference_usage->input ||
                 usage->cache_read != reference_usage->cache_read ||
                 usage->cache_write != reference_usage->cache_write ||
                 usage->output != reference_usage->output))) {
    std::abort();  // the quick path read the usage otherwise than the full parse
  }
  HttpRequestParser request(4096);
  size_t used = 0;
  for (size_t at = 0; at < text.size() && request.GetState() == HttpRequestParser::State::kNeedMore;
       at += chunk) {
    used += request.Feed(text.substr(at, std::min(chunk, text.size() - at)));
  }
  if (used > text.size() || request.Request().body.size() > 4096) std::abort();
  const SimConfig config;
  if (request.GetState() == HttpRequestParser::State::kDone) {
    (void)ParseSimRequest(request.Request(), config);
  }
  // The client's response reader: bounded, body bytes only from the input, nothing used twice.
  HttpResponseReader response(4096);
  size_t response_used = 0;
  size_t body_bytes = 0;
  for (size_t at = 0; at < text.size(); at += chunk) {
    const std::string_view piece = text.substr(at, std::min(chunk, text.size() - at));
    const size_t n = response.Feed(piece);
    if (n > piece.size()) std::abort();
    response_used += n;
    for (std::string_view b : response.Body()) {
      if (b.data() < piece.data() || b.data() + b.size() > piece.data() + piece.size())
        std::abort();
      body_bytes += b.size();
    }
    if (n < piece.size()) break;
  }
  response.Close();
  if (response_used > text.size() || body_bytes > response_used) std::abort();
  HttpRequest post;  // the bytes as the body of a POST to the API's path
  post.method = "POST";
  post.target = api == Api::kChat          ? "/v1/chat/completions"
                : api == Api::kCompletions ? "/v1/completions"
                                           : "/v1/messages";
  post.body = std::string(text);
  (void)ParseSimRequest(post, config);
  return 0;
}
