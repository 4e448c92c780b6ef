// An incremental HTTP/1.x request parser for serve-sim: bytes in, split anywhere; a whole
// request (line, headers, Content-Length body) out. Keep-alive per RFC 9112: HTTP/1.1 keeps the
// connection unless "Connection: close"; HTTP/1.0 closes unless "Connection: keep-alive".
// Bounded: headers over 64 KiB or a body over the limit are errors, never buffered. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::endpoint {

struct HttpRequest {
  std::string method;
  std::string target;  // path and query as sent
  int minor_version = 1;
  std::map<std::string, std::string> headers;  // names lower-cased; a repeated name keeps the last
  std::string body;
  bool keep_alive = true;
  std::string Header(const std::string& lower_name) const;
  std::string Path() const;  // target without the query
};

class HttpRequestParser {
 public:
  enum class State { kNeedMore, kDone, kError };
  explicit HttpRequestParser(size_t max_body = size_t{64} << 20) : max_body_(max_body) {}
  // Consumes bytes up to the end of one request; returns how many it used (the rest belongs to
  // the next request on the connection).
  size_t Feed(std::string_view bytes);
  State GetState() const { return state_; }
  // A request has begun (some of its bytes came) and is not whole yet.
  bool Began() const { return state_ == State::kNeedMore && (!head_.empty() || in_body_); }
  // On kError: the status to answer with (400, 413, 431, 501, 505) and why.
  int ErrorStatus() const { return error_status_; }
  const std::string& ErrorReason() const { return error_reason_; }
  HttpRequest& Request() { return request_; }
  void Reset();

 private:
  bool ParseHead();
  void Error(int status, std::string reason);
  size_t max_body_;
  State state_ = State::kNeedMore;
  std::string head_;
  bool in_body_ = false;
  size_t body_left_ = 0;
  HttpRequest request_;
  int error_status_ = 0;
  std::string error_reason_;
};

}  // namespace cmax::endpoint
