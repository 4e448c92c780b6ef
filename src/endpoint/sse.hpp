// Server-sent events, as inference endpoints stream their tokens: an incremental parser that
// takes bytes as they arrive, split anywhere (even between the CR and LF of one line end), and
// hands out whole events. Lines end in LF, CR or CRLF; lines starting with ':' are comments
// (keep-alive pings); "data" lines of one event are joined with LF; a blank line ends the event.
// (WHATWG HTML, "Server-sent events", the event stream interpretation.) Memory is bounded: an
// event larger than the limit is dropped whole and counted, never buffered without end. Pure.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::endpoint {

struct SseEvent {
  std::string event;  // the "event" field; empty means "message"
  std::string data;   // "data" lines joined with LF
  std::string id;
  std::optional<long> retry;  // milliseconds, when the server set it
};

class SseParser {
 public:
  using Sink = std::function<void(const SseEvent&)>;
  explicit SseParser(size_t max_event_bytes = size_t{1} << 20) : max_event_(max_event_bytes) {}

  // Parses `bytes`, calling `sink` for each event they complete.
  void Feed(std::string_view bytes, const Sink& sink);
  // The stream ended. Per the standard an event without its blank line is not dispatched; it is
  // reported here (true: the stream was cut inside an event).
  bool Finish();

  size_t Events() const { return events_; }
  size_t Oversized() const { return oversized_; }  // events dropped for exceeding the limit
  size_t Comments() const { return comments_; }

 private:
  void Consume(std::string_view bytes, const Sink& sink);
  void Line(std::string_view line, bool blank, const Sink& sink);
  bool Fits(size_t bytes);            // false (and the event dropped) when over the limit
  void Keep(std::string_view piece);  // part of a line that goes on in the next read

  size_t max_event_;
  std::string line_;        // the line being read (what is kept of it)
  bool line_seen_ = false;  // the line has characters, kept or not: it is not a blank line
  std::string prefix_;      // the first bytes, until it is clear whether they are a BOM
  bool after_cr_ = false;   // the last byte was CR: an LF right after it ends nothing more
  bool bom_checked_ = false;
  SseEvent pending_;
  bool has_data_ = false;
  bool in_event_ = false;  // a field has been seen since the last dispatch
  bool skipping_ = false;  // the event under way is over the limit: drop to its end
  size_t event_bytes_ = 0;
  size_t events_ = 0;
  size_t oversized_ = 0;
  size_t comments_ = 0;
};

}  // namespace cmax::endpoint
