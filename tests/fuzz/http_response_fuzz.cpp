// The client's HTTP/1.1 response reader on any bytes, as a hostile server sends them: it never
// crashes, never reads past its input, keeps its head bounded, and reads the same response
// (state, status, headers, body, keep-alive) whether the bytes come at once or split anywhere
// (the first input byte picks the split size).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "endpoint/http_response.hpp"

namespace {

using cmax::endpoint::HttpResponseReader;

struct Read {
  HttpResponseReader::State state;
  int status;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool keep_alive;
  size_t used;
  bool operator==(const Read&) const = default;
};

Read ReadAll(std::string_view text, size_t chunk) {
  HttpResponseReader reader(4096);
  Read r{};
  for (size_t at = 0; at < text.size(); at += chunk) {
    const std::string_view piece = text.substr(at, std::min(chunk, text.size() - at));
    const size_t n = reader.Feed(piece);
    if (n > piece.size()) std::abort();
    r.used += n;
    for (const std::string_view b : reader.Body()) {
      if (b.data() < piece.data() || b.data() + b.size() > piece.data() + piece.size()) {
        std::abort();  // body bytes are views into this piece, nowhere else
      }
      r.body.append(b);
    }
    if (n < piece.size()) break;  // the response ended (or failed) inside this piece
  }
  reader.Close();
  r.state = reader.GetState();
  r.status = reader.Status();
  r.headers = reader.Headers();
  r.keep_alive = reader.KeepAlive();
  if (r.state == HttpResponseReader::State::kError) {
    if (reader.Error().empty()) std::abort();
    r.used = 0;  // how much a failed read took does not matter: the connection is closed
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 23;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const Read whole = ReadAll(text, text.size() + 1);
  const Read split = ReadAll(text, chunk);
  if (!(whole == split)) std::abort();
  if (whole.used > text.size()) std::abort();
  if (whole.state != HttpResponseReader::State::kError && whole.body.size() > whole.used) {
    std::abort();
  }
  size_t header_bytes = 0;
  for (const auto& [name, value] : whole.headers) header_bytes += name.size() + value.size();
  if (header_bytes > 4096 + 4) std::abort();  // the head limit holds
  return 0;
}
