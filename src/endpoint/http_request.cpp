#include "endpoint/http_request.hpp"

#include <algorithm>
#include <utility>

#include "core/strings.hpp"
#include "endpoint/http_head.hpp"

namespace cmax::endpoint {
namespace {
constexpr size_t kMaxHead = size_t{64} << 10;
}

std::string HttpRequest::Header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string HttpRequest::Path() const {
  return target.substr(0, target.find('?'));
}

void HttpRequestParser::Reset() {
  state_ = State::kNeedMore;
  head_.clear();
  in_body_ = false;
  body_left_ = 0;
  request_ = HttpRequest{};
  error_status_ = 0;
  error_reason_.clear();
}

void HttpRequestParser::Error(int status, std::string reason) {
  state_ = State::kError;
  error_status_ = status;
  error_reason_ = std::move(reason);
}

size_t HttpRequestParser::Feed(std::string_view bytes) {
  size_t used = 0;
  while (state_ == State::kNeedMore && used < bytes.size()) {
    if (in_body_) {
      const size_t take = std::min(body_left_, bytes.size() - used);
      request_.body.append(bytes.substr(used, take));
      used += take;
      body_left_ -= take;
      if (body_left_ == 0) state_ = State::kDone;
      continue;
    }
    // Head: look for its blank line, which may straddle what was kept and what came.
    const size_t before = head_.size();
    const size_t take = std::min(bytes.size() - used, kMaxHead + 4 - before);
    head_.append(bytes.substr(used, take));
    const size_t head_len = HeadLength(head_, before);
    if (head_len == std::string::npos) {
      used += take;
      if (head_.size() > kMaxHead) Error(431, "request header fields too large");
      continue;
    }
    used += head_len - before;
    head_.resize(head_len);
    if (!ParseHead()) return used;
    if (body_left_ == 0) {
      state_ = State::kDone;
    } else {
      in_body_ = true;
      request_.body.reserve(body_left_);
    }
  }
  return used;
}

bool HttpRequestParser::ParseHead() {
  std::vector<std::string_view> lines = HeadLines(head_);
  while (!lines.empty() && lines.front().empty()) lines.erase(lines.begin());  // stray CRLFs
  if (lines.empty()) {
    Error(400, "empty request");
    return false;
  }
  const auto parts = Split(lines.front(), ' ');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty()) {
    Error(400, "malformed request line");
    return false;
  }
  request_.method = std::string(parts[0]);
  request_.target = std::string(parts[1]);
  if (parts[2] == "HTTP/1.1") {
    request_.minor_version = 1;
  } else if (parts[2] == "HTTP/1.0") {
    request_.minor_version = 0;
  } else {
    Error(505, "HTTP version not supported");
    return false;
  }
  std::optional<uint64_t> length;  // Content-Length, however often given, saying one length
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    // RFC 9112 5.1-5.2: a name is a token right up to its colon, and a line that continues the
    // one before (obsolete folding) is refused, so that no two readers of these bytes could take
    // them for different requests.
    const size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos || colon == 0 ||
        !std::ranges::all_of(lines[i].substr(0, colon), IsFieldNameCharacter)) {
      Error(400, "malformed header line");
      return false;
    }
    const std::string name = ToLower(lines[i].substr(0, colon));
    const std::string_view value = Trim(lines[i].substr(colon + 1));
    if (name == "content-length") {
      // RFC 9112 6.3: every value given (twice, or as a list "5, 5") must be the same length.
      for (const std::string_view item : Split(value, ',')) {
        const std::optional<uint64_t> n = ContentLengthItem(item);
        if (!n) {
          Error(400, "bad Content-Length");
          return false;
        }
        if (length && *length != *n) {
          Error(400, "conflicting Content-Length values");
          return false;
        }
        length = n;
      }
      continue;
    }
    request_.headers[name] = std::string(value);
  }
  const std::string connection = ToLower(request_.Header("connection"));
  request_.keep_alive = request_.minor_version == 1
                            ? connection.find("close") == std::string::npos
                            : connection.find("keep-alive") != std::string::npos;
  if (!request_.Header("transfer-encoding").empty()) {
    Error(501, "chunked request bodies are not supported; send Content-Length");
    return false;
  }
  if (length) {
    if (*length > max_body_) {
      Error(413, "request body too large");
      return false;
    }
    request_.headers["content-length"] = std::to_string(*length);
    body_left_ = *length;
  }
  return true;
}

}  // namespace cmax::endpoint
