#include "endpoint/sse.hpp"

#include <cstring>

#include "core/strings.hpp"

namespace cmax::endpoint {

void SseParser::Feed(std::string_view bytes, const Sink& sink) {
  if (bom_checked_) {
    Consume(bytes, sink);
    return;
  }
  // A UTF-8 byte order mark may open the stream and is not part of the first line; it can
  // itself arrive split, so the first bytes wait until it is clear.
  static constexpr std::string_view kBom = "\xEF\xBB\xBF";
  prefix_.append(bytes);
  if (prefix_.size() < kBom.size() && kBom.starts_with(prefix_)) return;
  bom_checked_ = true;
  const std::string first = std::move(prefix_);
  prefix_.clear();
  std::string_view rest = first;
  if (rest.starts_with(kBom)) rest.remove_prefix(kBom.size());
  Consume(rest, sink);
}

void SseParser::Consume(std::string_view bytes, const Sink& sink) {
  size_t i = 0;
  const size_t n = bytes.size();
  const char* const p = bytes.data();
  while (i < n) {
    if (after_cr_ && p[i] == '\n') {  // the LF of a CRLF: the line already ended at the CR
      after_cr_ = false;
      ++i;
      continue;
    }
    after_cr_ = false;
    // The rest of the line, in one piece: tokens arrive as whole lines, so this is the hot path.
    // Two memchr calls (vectorised) rather than one loop over the bytes testing both endings.
    const void* lf = std::memchr(p + i, '\n', n - i);
    size_t end = lf != nullptr ? static_cast<size_t>(static_cast<const char*>(lf) - p) : n;
    if (const void* cr = std::memchr(p + i, '\r', end - i); cr != nullptr) {
      end = static_cast<size_t>(static_cast<const char*>(cr) - p);
    }
    const std::string_view piece = bytes.substr(i, end - i);
    if (end == n) {  // the line goes on in the next read: keep what the limit allows
      if (!piece.empty()) Keep(piece);
      return;
    }
    after_cr_ = p[end] == '\r';
    i = end + 1;
    if (line_.empty() && !line_seen_) {              // the whole line is in this read: no copy
      if (!piece.empty()) (void)Fits(piece.size());  // over the limit: Line drops the event
      Line(piece, piece.empty(), sink);
      continue;
    }
    if (!piece.empty()) Keep(piece);
    Line(line_, !line_seen_, sink);
    line_.clear();
    line_seen_ = false;
  }
}

bool SseParser::Fits(size_t bytes) {
  // Bounded: past the limit nothing more of the event is kept; it is dropped at its end.
  const size_t used = event_bytes_ + line_.size();
  const size_t room = skipping_ || used >= max_event_ ? 0 : max_event_ - used;
  if (bytes <= room) return true;
  if (!skipping_) {
    skipping_ = true;
    ++oversized_;
  }
  return false;
}

void SseParser::Keep(std::string_view piece) {
  line_seen_ = true;
  if (Fits(piece.size())) line_.append(piece);
}

void SseParser::Line(std::string_view line, bool blank, const Sink& sink) {
  if (blank) {  // dispatch
    if (!skipping_ && in_event_ && has_data_) {
      if (!pending_.data.empty() && pending_.data.back() == '\n') pending_.data.pop_back();
      ++events_;
      sink(pending_);
    }
    // Cleared, not replaced: the strings keep their buffers for the next event.
    pending_.event.clear();
    pending_.data.clear();
    pending_.id.clear();
    pending_.retry.reset();
    has_data_ = false;
    in_event_ = false;
    skipping_ = false;
    event_bytes_ = 0;
    return;
  }
  if (skipping_) return;
  if (line.front() == ':') {
    ++comments_;
    return;
  }
  in_event_ = true;
  event_bytes_ += line.size();
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    pending_.data.append(value);
    pending_.data.push_back('\n');
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) pending_.id = std::string(value);
  } else if (field == "retry") {
    if (const std::optional<long> ms = ParseWhole<long>(value); ms && *ms >= 0)
      pending_.retry = *ms;
  }
}

bool SseParser::Finish() {
  const bool cut = line_seen_ || in_event_ || skipping_ || !prefix_.empty();
  line_.clear();
  line_seen_ = false;
  prefix_.clear();
  pending_ = SseEvent{};
  has_data_ = in_event_ = skipping_ = false;
  event_bytes_ = 0;
  return cut;
}

}  // namespace cmax::endpoint
