#include "sys/file_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sys/file.h>
#include <thread>

namespace cmax::sys {

Result<FileLock> FileLock::TryTake(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Fail(ErrorCode::kIo, "cannot open {}: {}", path, std::strerror(errno));
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) return Fail(ErrorCode::kBusy, "{} is held by another process", path);
    return Fail(ErrorCode::kIo, "cannot lock {}: {}", path, std::strerror(error));
  }
  return FileLock(fd);
}

Result<FileLock> FileLock::Take(const std::string& path, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto lock = TryTake(path);
    if (lock || lock.error().code != ErrorCode::kBusy ||
        std::chrono::steady_clock::now() >= deadline) {
      return lock;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace cmax::sys
