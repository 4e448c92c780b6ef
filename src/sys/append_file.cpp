#include "sys/append_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "sys/file_system.hpp"

namespace cmax::sys {

namespace {

Result<int> OpenFor(const std::string& path, int flags, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | flags, mode);
  if (fd < 0) {
    const int e = errno;
    // EINTR is a Ctrl-C while a FIFO waits for its reader: the user's, not an error.
    return Fail(ErrorCodeFromErrno(e), "cannot open {}: {}", path, std::strerror(e));
  }
  return fd;
}

}  // namespace

Result<AppendFile> AppendFile::Open(const std::string& path, mode_t mode) {
  auto fd = OpenFor(path, 0, mode);
  if (!fd) return tl::unexpected(fd.error());
  return AppendFile(*fd);
}

Result<AppendFile> AppendFile::Create(const std::string& path, mode_t mode) {
  auto fd = OpenFor(path, O_TRUNC, mode);
  if (!fd) return tl::unexpected(fd.error());
  return AppendFile(*fd);
}

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<void> AppendFile::Close() {
  if (fd_ < 0) return Fail(ErrorCode::kIo, "already closed");
  struct stat st {};
  Result<void> ok;
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd_) != 0) {
    ok = Fail(ErrorCodeFromErrno(errno), "cannot finish: {}", std::strerror(errno));
  }
  if (::close(fd_) != 0 && ok) {
    ok = Fail(ErrorCodeFromErrno(errno), "cannot finish: {}", std::strerror(errno));
  }
  fd_ = -1;
  return ok;
}

Result<void> AppendFile::Append(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail(ErrorCode::kIo, "cannot write: {}", std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

}  // namespace cmax::sys
