// A stream of bytes read in pieces: a file, a gzip file (sys/gzip_file.hpp), a string in a test
// or a fuzz target. Readers that must hold only a window of their input (a 1 GB trace) pull from
// one of these instead of taking the whole text.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.hpp"

namespace cmax {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `size` bytes into `into`; 0 at the end. An error after some data has been read means
  // the input ends early there (a truncated or corrupt file): what came before it stands.
  virtual Result<size_t> Read(char* into, size_t size) = 0;
};

class StringByteSource final : public ByteSource {
 public:
  // `piece` > 0 hands the text over at most that many bytes a call (tests of the refill path).
  explicit StringByteSource(std::string_view text, size_t piece = 0) : text_(text), piece_(piece) {}
  Result<size_t> Read(char* into, size_t size) override {
    size_t n = std::min(size, text_.size() - at_);
    if (piece_ > 0) n = std::min(n, piece_);
    if (n > 0) std::memcpy(into, text_.data() + at_, n);
    at_ += n;
    return n;
  }

 private:
  std::string_view text_;
  size_t piece_ = 0;
  size_t at_ = 0;
};

// `source` until `stop` says so, then an error (kInterrupted) at the next read: a reader of a
// trace of many gigabytes gives up at its next buffer when Ctrl-C comes, not at the file's end.
class StoppableByteSource final : public ByteSource {
 public:
  StoppableByteSource(ByteSource& source, std::function<bool()> stop)
      : source_(source), stop_(std::move(stop)) {}
  Result<size_t> Read(char* into, size_t size) override {
    if (stop_ && stop_()) return Fail(ErrorCode::kInterrupted, "interrupted");
    return source_.Read(into, size);
  }

 private:
  ByteSource& source_;
  std::function<bool()> stop_;
};

}  // namespace cmax
