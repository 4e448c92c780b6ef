// serve-sim's HTTP/1.x request reader on any bytes, as a hostile client sends them: it never
// crashes, keeps head and body within their limits, and reads the same requests, one after
// another on a kept-alive connection, whether the bytes come at once or split anywhere (the
// first input byte picks the split size).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "endpoint/http_request.hpp"

namespace {

using cmax::endpoint::HttpRequestParser;

// Each request read, or the error that ended the connection, as one line.
std::vector<std::string> ReadAll(std::string_view text, size_t chunk) {
  HttpRequestParser parser(4096);
  std::vector<std::string> out;
  std::string pending;
  for (size_t at = 0; at < text.size(); at += chunk) {
    pending.append(text.substr(at, std::min(chunk, text.size() - at)));
    while (!pending.empty()) {
      const size_t used = parser.Feed(pending);
      if (used > pending.size()) std::abort();
      pending.erase(0, used);
      if (parser.GetState() == HttpRequestParser::State::kError) {
        out.push_back("error " + std::to_string(parser.ErrorStatus()));
        return out;  // the server answers and closes
      }
      if (parser.GetState() == HttpRequestParser::State::kNeedMore) break;
      const auto& r = parser.Request();
      if (r.body.size() > 4096) std::abort();
      std::string line = r.method + " " + r.target + " " + std::to_string(r.minor_version) + " " +
                         (r.keep_alive ? "keep" : "close") + " " + std::to_string(r.body.size());
      for (const auto& [name, value] : r.headers) line += " " + name + "=" + value;
      out.push_back(line + " " + r.body);
      if (out.size() > 1000) std::abort();  // every request takes at least a few bytes
      parser.Reset();
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 23;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (ReadAll(text, text.size() + 1) != ReadAll(text, chunk)) std::abort();
  return 0;
}
