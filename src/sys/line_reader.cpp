#include "sys/line_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <utility>

#include "sys/file_system.hpp"

namespace cmax::sys {
namespace {

constexpr size_t kReadBytes = size_t{64} << 10;

}  // namespace

LineReader::LineReader(int fd, std::string name, Options options)
    : fd_(fd), name_(std::move(name)), options_(std::move(options)), buffer_(kReadBytes, '\0') {
  if (options_.max_line_bytes == 0) options_.max_line_bytes = 1;
}

LineReader::LineReader(LineReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      name_(std::move(other.name_)),
      options_(std::move(other.options_)),
      buffer_(std::move(other.buffer_)),
      start_(other.start_),
      filled_(other.filled_),
      line_(std::move(other.line_)),
      cutting_(other.cutting_),
      line_returned_(other.line_returned_),
      eof_(other.eof_),
      lines_(other.lines_),
      cut_lines_(other.cut_lines_),
      bytes_(other.bytes_) {}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<LineReader> LineReader::Open(const std::string& path, Options options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int saved = errno;
    if (saved == ENXIO) {
      return Fail(ErrorCode::kInvalidArgument, "{} is a socket; name a file to read", path);
    }
    return Fail(ErrorCodeFromErrno(saved), "cannot open {}: {}", path, std::strerror(saved));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Fail(ErrorCode::kInvalidArgument, "{} is a directory; name a file to read", path);
  }
  return LineReader(fd, path, std::move(options));
}

Result<size_t> LineReader::Fill() {
  start_ = 0;
  filled_ = 0;
  while (true) {
    if (options_.interrupted && options_.interrupted()) {
      return Fail(ErrorCode::kInterrupted, "reading {} was interrupted", name_);
    }
    const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
    if (n < 0 && errno == EINTR) continue;  // the check above decides whether to go on
    if (n < 0) {
      const int saved = errno;
      return Fail(ErrorCodeFromErrno(saved) == ErrorCode::kNotFound ? ErrorCode::kIo
                                                                    : ErrorCodeFromErrno(saved),
                  "cannot read {} after {} bytes: {}", name_, bytes_, std::strerror(saved));
    }
    filled_ = static_cast<size_t>(n);
    bytes_ += static_cast<uint64_t>(n);
    return static_cast<size_t>(n);
  }
}

Result<std::optional<std::string_view>> LineReader::Next() {
  if (line_returned_) {
    line_.clear();
    cutting_ = false;
    line_returned_ = false;
  }
  // Adds part of a line to line_, up to the limit; the rest of a long line is dropped.
  auto keep = [this](std::string_view piece) {
    const size_t room = options_.max_line_bytes - line_.size();
    if (piece.size() > room) {
      line_.append(piece.substr(0, room));
      if (!cutting_) ++cut_lines_;
      cutting_ = true;
    } else {
      line_.append(piece);
    }
  };
  auto too_long = [this]() {
    return Fail(ErrorCode::kInvalidArgument, "{} line {} is longer than {} bytes", name_,
                lines_ + 1, options_.max_line_bytes);
  };
  while (true) {
    const std::string_view rest(buffer_.data() + start_, filled_ - start_);
    const size_t newline = rest.find('\n');
    if (newline != std::string_view::npos) {
      if (options_.long_line_is_error && line_.size() + newline > options_.max_line_bytes) {
        return too_long();
      }
      start_ += newline + 1;
      ++lines_;
      if (line_.empty() && !cutting_ && newline <= options_.max_line_bytes) {
        return std::optional<std::string_view>(rest.substr(0, newline));  // no copy
      }
      keep(rest.substr(0, newline));
      line_returned_ = true;
      return std::optional<std::string_view>(line_);
    }
    if (options_.long_line_is_error && line_.size() + rest.size() > options_.max_line_bytes) {
      return too_long();
    }
    keep(rest);
    start_ = filled_ = 0;
    if (eof_) {
      if (line_.empty() && !cutting_) return std::optional<std::string_view>();
      ++lines_;  // the last line, without its "\n"
      line_returned_ = true;
      return std::optional<std::string_view>(line_);
    }
    auto n = Fill();
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) eof_ = true;
  }
}

}  // namespace cmax::sys
