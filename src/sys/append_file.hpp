// A file written as it grows (a job's log while the job prints): each piece appended at once,
// so that whatever was written before a crash, ours or the job's, is on disk.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "core/result.hpp"

namespace cmax::sys {

class AppendFile {
 public:
  // Creates the file (or appends to the one there).
  static Result<AppendFile> Open(const std::string& path, mode_t mode = 0600);
  // Creates the file, or empties the one there, as the shell's > does: a link is followed, a
  // FIFO or a character device written into.
  static Result<AppendFile> Create(const std::string& path, mode_t mode = 0600);
  AppendFile(AppendFile&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  AppendFile& operator=(AppendFile&& other) noexcept;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  ~AppendFile();
  Result<void> Append(std::string_view data);
  // Syncs a regular file to disk and closes it, saying whether both went through (a full disk
  // on NFS may say so only here). Appending after it fails.
  Result<void> Close();

 private:
  explicit AppendFile(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// An output written as it grows: `append` in order, then `finish` once (syncs and closes; may
// be empty).
struct GrowingOutput {
  std::function<Result<void>(std::string_view)> append;
  std::function<Result<void>()> finish;
};

}  // namespace cmax::sys
