// An exclusive flock on a file, released when the holder is destroyed or its process ends (a
// crash cannot leave it held). For work two cmax processes must not do at once on one host:
// two controllers acting on one store, two namespace labs choosing the same addresses.
#pragma once

#include <chrono>
#include <string>

#include "core/result.hpp"

namespace cmax::sys {

class FileLock {
 public:
  // The lock on `path` (created 0600 if missing) now, or kBusy when another holds it.
  static Result<FileLock> TryTake(const std::string& path);
  // The lock once it is free, within `wait` (kBusy after); a holder keeps it for seconds at
  // most in the uses above, and flock gives no way to wait with a deadline, so it is retried.
  static Result<FileLock> Take(const std::string& path, std::chrono::milliseconds wait);
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace cmax::sys
