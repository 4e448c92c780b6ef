#include "sys/kmsg_reader.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::sys {

std::optional<uint64_t> KmsgSequence(std::string_view raw) {
  const size_t first = raw.find(',');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t second = raw.find(',', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  return ParseWhole<uint64_t>(raw.substr(first + 1, second - first - 1));
}

Result<KmsgReader> KmsgReader::Open(const std::string& path, Start start) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return Fail(ErrorCodeFromErrno(e), "cannot open {}: {}", path, std::strerror(e));
  }
  KmsgReader reader(fd, path);
  if (start == Start::kNow) {
    // Skip what is there by reading it rather than seeking to the end: then the sequence
    // number of the last record is known, and a later overrun can be counted exactly.
    while (true) {
      auto record = reader.Next();
      if (!record) return tl::unexpected(record.error());
      if (!*record) break;
    }
    reader.records_ = 0;
    reader.lost_ = 0;
    reader.overruns_ = 0;
  }
  return reader;
}

KmsgReader::KmsgReader(KmsgReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      last_sequence_(other.last_sequence_),
      lost_(other.lost_),
      overruns_(other.overruns_),
      records_(other.records_) {}

KmsgReader& KmsgReader::operator=(KmsgReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    last_sequence_ = other.last_sequence_;
    lost_ = other.lost_;
    overruns_ = other.overruns_;
    records_ = other.records_;
  }
  return *this;
}

KmsgReader::~KmsgReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::optional<std::string>> KmsgReader::Next() {
  // A record is at most a few KiB (message plus dictionary); the kernel refuses a read into
  // a smaller buffer with EINVAL rather than truncating.
  char buffer[16384];
  while (true) {
    const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
    if (n > 0) {
      std::string record(buffer, static_cast<size_t>(n));
      ++records_;
      if (auto sequence = KmsgSequence(record)) {
        if (last_sequence_ && *sequence > *last_sequence_ + 1) {
          lost_ += *sequence - *last_sequence_ - 1;
        }
        last_sequence_ = sequence;
      }
      return std::optional<std::string>(std::move(record));
    }
    if (n == 0) return std::optional<std::string>();
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<std::string>();
    if (errno == EPIPE) {
      // The ring overwrote what we were about to read; the next read returns the oldest
      // record still there, and the gap in sequence numbers says how many were lost.
      ++overruns_;
      continue;
    }
    const int e = errno;
    return Fail(ErrorCodeFromErrno(e), "cannot read {}: {}", path_, std::strerror(e));
  }
}

Result<bool> KmsgReader::Wait(Duration timeout) {
  pollfd fds{fd_, POLLIN, 0};
  const int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(timeout).count());
  while (true) {
    const int ready = ::poll(&fds, 1, ms);
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno == EINTR) return false;  // let the caller look at its interrupt flag
    const int e = errno;
    return Fail(ErrorCode::kIo, "cannot wait on {}: {}", path_, std::strerror(e));
  }
}

}  // namespace cmax::sys
