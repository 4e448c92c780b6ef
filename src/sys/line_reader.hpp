// Reads a file from outside (a saved kernel log, a scenario, a trace) line by line in bounded
// memory: a line longer than the limit is cut to it and counted, never buffered whole; each
// read checks for Ctrl-C/SIGTERM; a read error ends the reading with the error instead of
// looking like the end of the file. Every reader of outside files goes through this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cmax::sys {

class LineReader {
 public:
  struct Options {
    size_t max_line_bytes = size_t{64} << 10;
    // Checked before each read; true ends the reading with kInterrupted.
    std::function<bool()> interrupted;
    // A line over the limit ends the reading with kInvalidArgument instead of being cut (for
    // formats where a cut line would only be misread, such as JSON lines).
    bool long_line_is_error = false;
  };

  // A missing file is kNotFound, a directory (or a socket) kInvalidArgument: both are a wrong
  // path given by the user, not a read error.
  static Result<LineReader> Open(const std::string& path, Options options);
  LineReader(LineReader&& other) noexcept;
  LineReader& operator=(LineReader&&) = delete;
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  ~LineReader();

  // The next line without its "\n" (a "\r" before it stays), valid until the next call; nullopt
  // at the end of the file. A line over the limit comes cut to max_line_bytes.
  Result<std::optional<std::string_view>> Next();

  uint64_t Lines() const { return lines_; }
  uint64_t CutLines() const { return cut_lines_; }
  uint64_t Bytes() const { return bytes_; }
  const std::string& Name() const { return name_; }

 private:
  LineReader(int fd, std::string name, Options options);
  Result<size_t> Fill();  // reads more; 0 at the end

  int fd_ = -1;
  std::string name_;
  Options options_;
  std::string buffer_;  // one read's room, allocated once; [start_, filled_) not handed out
  size_t start_ = 0;
  size_t filled_ = 0;
  std::string line_;            // a line that spans reads, or a cut one
  bool cutting_ = false;        // the line under way passed the limit: the rest is dropped
  bool line_returned_ = false;  // line_ was handed out and is cleared on the next call
  bool eof_ = false;
  uint64_t lines_ = 0;
  uint64_t cut_lines_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace cmax::sys
