// An incremental HTTP/1.x response reader for the client's own plain-HTTP connections: bytes in,
// split anywhere; the status, the headers and the body out, with the body's framing undone
// (RFC 9112 section 6.3: no body for 1xx/204/304, chunked when it is the last transfer coding,
// else Content-Length, else everything to the close). Interim 1xx answers are passed over.
// Keep-alive as RFC 9112 section 9.3 says: HTTP/1.1 keeps the connection unless "Connection:
// close", HTTP/1.0 only with "Connection: keep-alive", and never a body read to the close.
// Bounded: a head over the limit, a bad status line, header, length or chunk size is an error,
// never buffered. Body bytes are not copied: they are handed out as views into the input. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmax::endpoint {

// The most a response head may take (status line, headers, interim answers' heads apart).
inline constexpr size_t kMaxResponseHeadBytes = size_t{64} << 10;

class HttpResponseReader {
 public:
  enum class State { kHead, kBody, kDone, kError };
  explicit HttpResponseReader(size_t max_head_bytes = kMaxResponseHeadBytes)
      : max_head_(max_head_bytes) {}

  // Reads bytes up to the end of the response; returns how many it used (any left over were
  // sent after the response ended). The body bytes this call found are in Body().
  size_t Feed(std::string_view bytes);
  // The connection was closed: a body read to the close is complete; anything else stays cut.
  void Close();
  State GetState() const { return state_; }
  bool Began() const { return began_; }  // a byte of the response came
  // The final head was read (true also when its framing, or the body after it, was bad).
  bool HeadRead() const { return head_read_; }
  const std::vector<std::string_view>& Body() const { return body_; }  // views into Feed's input
  int Status() const { return status_; }
  int MinorVersion() const { return minor_; }  // HTTP/1.0 or HTTP/1.1
  // The headers, names lower-cased, in the order they came.
  const std::vector<std::pair<std::string, std::string>>& Headers() const { return headers_; }
  std::optional<std::string_view> Header(std::string_view lower_name) const;  // the first
  bool KeepAlive() const { return keep_alive_; }  // the connection may carry another request
  const std::string& Error() const { return error_; }
  void Reset();

 private:
  enum class Framing { kNone, kLength, kChunked, kClose };
  enum class Chunk { kSize, kExtension, kSizeEnd, kData, kDataEnd, kDataEndLf, kTrailer };
  std::string Joined(std::string_view lower_name) const;  // every line of the name, joined
  size_t FeedHead(std::string_view bytes);
  size_t FeedChunked(std::string_view bytes);
  bool ParseHead(std::string_view head);
  void Fail(std::string why);

  size_t max_head_;
  State state_ = State::kHead;
  bool began_ = false;
  bool head_read_ = false;
  std::string head_;
  std::vector<std::string_view> body_;
  std::vector<std::pair<std::string, std::string>> headers_;
  int status_ = 0;
  int minor_ = 1;
  bool keep_alive_ = false;
  Framing framing_ = Framing::kNone;
  uint64_t left_ = 0;  // body bytes left (Content-Length) or chunk bytes left
  Chunk chunk_ = Chunk::kSize;
  int size_digits_ = 0;
  size_t line_bytes_ = 0;     // of the chunk extension or trailer line under way
  size_t trailer_bytes_ = 0;  // all trailer lines
  std::string error_;
};

}  // namespace cmax::endpoint
