#include "endpoint/http_response.hpp"

#include <algorithm>

#include "core/strings.hpp"
#include "endpoint/http_head.hpp"

namespace cmax::endpoint {
namespace {

constexpr size_t kMaxTrailerBytes = 64 << 10;
constexpr size_t kMaxExtensionBytes = 4 << 10;
constexpr int kMaxSizeDigits = 15;  // 2^60 bytes: no chunk is larger, no sum overflows

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether a comma-separated header value lists `token` (case does not matter).
bool Lists(std::string_view value, std::string_view token) {
  for (std::string_view item : Split(value, ',')) {
    if (ToLower(Trim(item)) == token) return true;
  }
  return false;
}

bool IsTokenChar(char c) {
  return c > 0x20 && c < 0x7f &&
         std::string_view("()<>@,;:\\\"/[]?={}").find(c) == std::string_view::npos;
}

}  // namespace

std::string HttpResponseReader::Joined(std::string_view lower_name) const {
  std::string joined;
  for (const auto& [name, value] : headers_) {
    if (name != lower_name) continue;
    if (!joined.empty()) joined += ',';
    joined += value;
  }
  return joined;
}

std::optional<std::string_view> HttpResponseReader::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers_) {
    if (name == lower_name) return value;
  }
  return std::nullopt;
}

void HttpResponseReader::Reset() {
  state_ = State::kHead;
  began_ = false;
  head_read_ = false;
  head_.clear();
  body_.clear();
  headers_.clear();
  status_ = 0;
  minor_ = 1;
  keep_alive_ = false;
  framing_ = Framing::kNone;
  left_ = 0;
  chunk_ = Chunk::kSize;
  size_digits_ = 0;
  line_bytes_ = 0;
  trailer_bytes_ = 0;
  error_.clear();
}

void HttpResponseReader::Fail(std::string why) {
  state_ = State::kError;
  keep_alive_ = false;
  error_ = std::move(why);
}

size_t HttpResponseReader::Feed(std::string_view bytes) {
  body_.clear();
  size_t used = 0;
  if (!bytes.empty()) began_ = true;
  while (used < bytes.size()) {
    const std::string_view rest = bytes.substr(used);
    if (state_ == State::kHead) {
      used += FeedHead(rest);
    } else if (state_ == State::kBody && framing_ == Framing::kChunked) {
      used += FeedChunked(rest);
    } else if (state_ == State::kBody) {
      const size_t take = framing_ == Framing::kClose
                              ? rest.size()
                              : static_cast<size_t>(std::min<uint64_t>(left_, rest.size()));
      body_.push_back(rest.substr(0, take));
      used += take;
      if (framing_ == Framing::kLength) {
        left_ -= take;
        if (left_ == 0) state_ = State::kDone;
      }
    } else {
      break;  // done or failed: the rest is not this response's
    }
  }
  return used;
}

void HttpResponseReader::Close() {
  if (state_ == State::kBody && framing_ == Framing::kClose) state_ = State::kDone;
}

size_t HttpResponseReader::FeedHead(std::string_view bytes) {
  // The head ends at the first empty line; it may have begun in an earlier read.
  const size_t before = head_.size();
  head_.append(
      bytes.substr(0, std::min(bytes.size(), max_head_ + 4 - std::min(max_head_ + 4, before))));
  // What does not begin like a status line is not waited on (HTTP/0.9, another protocol, a
  // server that never sends a line end): it fails as soon as its first bytes differ.
  constexpr std::string_view kStatusStart = "HTTP/1.";
  const size_t check = std::min(head_.size(), kStatusStart.size());
  if (std::string_view(head_).substr(0, check) != kStatusStart.substr(0, check)) {
    Fail("not an HTTP/1.x status line");
    return bytes.size();
  }
  const size_t head_length = HeadLength(head_, before);
  if (head_length == std::string::npos) {
    if (head_.size() > max_head_) Fail("the response head exceeds the size limit");
    return bytes.size();
  }
  const size_t used = head_length - before;
  const std::string head = head_.substr(0, head_length);
  head_.clear();
  if (!ParseHead(head)) return used;
  if (status_ < 200) headers_.clear();  // an interim answer (100, 103): the real one follows
  return used;
}

bool HttpResponseReader::ParseHead(std::string_view head) {
  const std::vector<std::string_view> lines = HeadLines(head);
  // The status line: HTTP/1.x SP 3DIGIT [SP reason]
  const std::string_view status = lines.empty() ? std::string_view() : lines[0];
  if (status.size() < 12 || status.substr(0, 7) != "HTTP/1." ||
      (status[7] != '0' && status[7] != '1') || status[8] != ' ' ||
      !std::all_of(status.begin() + 9, status.begin() + 12,
                   [](char c) { return c >= '0' && c <= '9'; }) ||
      (status.size() > 12 && status[12] != ' ')) {
    Fail("not an HTTP/1.x status line");
    return false;
  }
  minor_ = status[7] - '0';
  status_ = (status[9] - '0') * 100 + (status[10] - '0') * 10 + (status[11] - '0');
  if (status_ < 100) {
    Fail("not an HTTP/1.x status line");
    return false;
  }
  headers_.clear();
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos ||
        !std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(colon),
                     IsTokenChar)) {
      Fail("a malformed response header");  // folded lines too (RFC 9112 section 5.2)
      return false;
    }
    headers_.emplace_back(ToLower(line.substr(0, colon)),
                          std::string(Trim(line.substr(colon + 1))));
  }
  if (status_ == 101) {
    Fail("the server switched protocols");
    return false;
  }
  if (status_ < 200) return true;  // interim: the caller waits for the next head
  head_read_ = true;
  // The body's framing. Repeated lines of a list header are one list (RFC 9110 section 5.3).
  const std::string connection = Joined("connection");
  keep_alive_ = minor_ == 1 ? !Lists(connection, "close") : Lists(connection, "keep-alive");
  state_ = State::kBody;
  if (status_ == 204 || status_ == 304) {
    framing_ = Framing::kNone;
    state_ = State::kDone;
    return true;
  }
  if (Header("transfer-encoding")) {
    // With Content-Length too, or in HTTP/1.0, the framing is suspect: the body is read by the
    // coding but the connection is not used again (RFC 9112 sections 6.1 and 6.3).
    if (minor_ == 0 || Header("content-length")) keep_alive_ = false;
    const std::string coding = Joined("transfer-encoding");
    const std::vector<std::string_view> codings = Split(coding, ',');
    if (!codings.empty() && ToLower(Trim(codings.back())) == "chunked") {
      framing_ = Framing::kChunked;
      chunk_ = Chunk::kSize;
      size_digits_ = 0;
      left_ = 0;
      return true;
    }
    framing_ = Framing::kClose;  // a coding other than chunked last: to the close
    keep_alive_ = false;
    return true;
  }
  std::optional<uint64_t> length;
  for (const auto& [name, value] : headers_) {
    if (name != "content-length") continue;
    for (const std::string_view item : Split(value, ',')) {
      const std::optional<uint64_t> n = ContentLengthItem(item);
      if (!n) {
        Fail("a malformed Content-Length");
        return false;
      }
      if (length && *length != *n) {
        Fail("conflicting Content-Length values");
        return false;
      }
      length = n;
    }
  }
  if (length) {
    framing_ = Framing::kLength;
    left_ = *length;
    if (left_ == 0) state_ = State::kDone;
    return true;
  }
  framing_ = Framing::kClose;
  keep_alive_ = false;
  return true;
}

size_t HttpResponseReader::FeedChunked(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size() && state_ == State::kBody) {
    const char c = bytes[i];
    switch (chunk_) {
      case Chunk::kSize: {
        const int digit = HexValue(c);
        if (digit >= 0) {
          if (++size_digits_ > kMaxSizeDigits) {
            Fail("a chunk size too large");
            return i;
          }
          left_ = left_ * 16 + static_cast<uint64_t>(digit);
          ++i;
          break;
        }
        if (size_digits_ == 0) {
          Fail("a malformed chunk size");
          return i;
        }
        if (c == ';' || c == ' ' || c == '\t') {
          chunk_ = Chunk::kExtension;
          line_bytes_ = 0;
        } else if (c == '\r') {
          chunk_ = Chunk::kSizeEnd;
          ++i;
        } else if (c == '\n') {
          chunk_ = Chunk::kSizeEnd;  // a bare LF ends the line too
        } else {
          Fail("a malformed chunk size");
          return i;
        }
        break;
      }
      case Chunk::kExtension:
        if (c == '\r' || c == '\n') {
          chunk_ = Chunk::kSizeEnd;  // which reads the LF
          if (c == '\r') ++i;
          break;
        }
        if (++line_bytes_ > kMaxExtensionBytes) {
          Fail("a chunk extension too long");
          return i;
        }
        ++i;
        break;
      case Chunk::kSizeEnd:
        if (c != '\n') {
          Fail("a malformed chunk size line");
          return i;
        }
        ++i;
        size_digits_ = 0;
        if (left_ == 0) {
          chunk_ = Chunk::kTrailer;
          line_bytes_ = 0;
        } else {
          chunk_ = Chunk::kData;
        }
        break;
      case Chunk::kData: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(left_, bytes.size() - i));
        body_.push_back(bytes.substr(i, take));
        i += take;
        left_ -= take;
        if (left_ == 0) chunk_ = Chunk::kDataEnd;
        break;
      }
      case Chunk::kDataEnd:
        if (c == '\r') {
          chunk_ = Chunk::kDataEndLf;
          ++i;
        } else if (c == '\n') {
          chunk_ = Chunk::kSize;
          ++i;
        } else {
          Fail("a chunk longer than its size");
          return i;
        }
        break;
      case Chunk::kDataEndLf:
        if (c != '\n') {
          Fail("a chunk longer than its size");
          return i;
        }
        chunk_ = Chunk::kSize;
        ++i;
        break;
      case Chunk::kTrailer:
        // Trailer lines are read and dropped; the empty line ends the response.
        ++i;
        if (++trailer_bytes_ > kMaxTrailerBytes) {
          Fail("the trailers exceed the size limit");
          return i;
        }
        if (c == '\n') {
          if (line_bytes_ == 0) state_ = State::kDone;
          line_bytes_ = 0;
        } else if (c != '\r') {
          ++line_bytes_;
        }
        break;
    }
  }
  return i;
}

}  // namespace cmax::endpoint
