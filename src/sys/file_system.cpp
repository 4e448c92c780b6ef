#include "sys/file_system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

#include "core/strings.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::sys {

ErrorCode ErrorCodeFromErrno(int error_number) {
  switch (error_number) {
    case ENOENT:
    case ENOTDIR: return ErrorCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS: return ErrorCode::kPermissionDenied;
    case EEXIST: return ErrorCode::kAlreadyExists;
    case EBUSY:
    case EAGAIN: return ErrorCode::kBusy;
    case ETIMEDOUT: return ErrorCode::kTimeout;
    case EINTR: return ErrorCode::kInterrupted;
    default: return ErrorCode::kIo;
  }
}

namespace {

tl::unexpected<Error> ErrnoError(std::string_view what, const std::string& path) {
  const int saved = errno;
  return Fail(ErrorCodeFromErrno(saved), "{} {}: {}", what, path, std::strerror(saved));
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

Result<void> WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", path);
    }
    written += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

Result<std::string> LocalFileSystem::ReadFile(const std::string& path, size_t max_bytes) const {
  // A device is no file to read: /dev/zero fed a GiB before the size limit said no, and opening
  // one can act (a watchdog starts counting). Refused before it is opened. A FIFO is read (a
  // shell's `<(...)`), and a Ctrl-C or SIGTERM while it waits for a writer ends the wait.
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && (S_ISCHR(before.st_mode) || S_ISBLK(before.st_mode))) {
    return Fail(ErrorCode::kInvalidArgument, "{} is a device; name a file to read", path);
  }
  int fd = -1;
  while ((fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0 && errno == EINTR) {
    if (Interrupted()) return Fail(ErrorCode::kInterrupted, "opening {} was interrupted", path);
  }
  if (fd < 0) return ErrnoError("cannot open", path);
  FdCloser closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    return Fail(ErrorCode::kInvalidArgument, "{} is a directory; name a file to read", path);
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {  // swapped in after the look above
    return Fail(ErrorCode::kInvalidArgument, "{} is a device; name a file to read", path);
  }
  std::string data;
  char buffer[16384];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      // Ctrl-C while a FIFO or a terminal makes us wait: stop, do not wait on.
      if (errno == EINTR && Interrupted()) {
        return Fail(ErrorCode::kInterrupted, "reading {} was interrupted", path);
      }
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path);
    }
    if (n == 0) break;
    if (data.size() + static_cast<size_t>(n) > max_bytes) {
      return Fail(ErrorCode::kInvalidArgument, "{} is larger than {} bytes", path, max_bytes);
    }
    data.append(buffer, static_cast<size_t>(n));
  }
  return data;
}

Result<std::string> ReadInputFile(const FileSystem& fs, const std::string& path, size_t max_bytes,
                                  const std::function<bool()>& interrupted) {
  auto text = fs.ReadFile(path, max_bytes);
  if (text) return text;
  if ((interrupted && interrupted()) || text.error().code == ErrorCode::kInterrupted) {
    return Fail(ErrorCode::kInterrupted, "interrupted reading {}; nothing was recorded",
                AsOneLine(path));
  }
  return Fail(text.error().code == ErrorCode::kNotFound ? ErrorCode::kNotFound
                                                        : ErrorCode::kInvalidArgument,
              "{}: {}", AsOneLine(path), text.error().message);
}

tl::unexpected<Error> StoppedNothingRecorded() {
  return Fail(ErrorCode::kInterrupted, "interrupted; nothing was recorded");
}

bool LocalFileSystem::Exists(const std::string& path) const {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool LocalFileSystem::IsDirectory(const std::string& path) const {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool LocalFileSystem::IsRegularFile(const std::string& path) const {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<std::vector<std::string>> LocalFileSystem::ListDir(const std::string& path) const {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return ErrnoError("cannot list", path);
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> LocalFileSystem::ReadLink(const std::string& path) const {
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof(buffer));
  if (n < 0) return ErrnoError("cannot read link", path);
  return std::string(buffer, static_cast<size_t>(n));
}

namespace {

// A temporary file a killed writer left beside `path` (PATH.tmp.PID): its process is gone and
// it has not been written to for a while. The age keeps a live writer's file on a folder shared
// with another host (whose pids this one cannot see) safe.
void RemoveStaleTemporaries(const std::string& path) {
  constexpr time_t kStaleAfterS = 600;
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return;
  const time_t now = ::time(nullptr);
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(prefix)) continue;
    const std::optional<int> pid = ParseWhole<int>(name.substr(prefix.size()));
    if (!pid || *pid <= 0 || ProcessAlive(*pid)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        now - st.st_mtime < kStaleAfterS) {
      continue;
    }
    (void)::unlinkat(::dirfd(dir), entry->d_name, 0);
  }
  ::closedir(dir);
}

}  // namespace

Result<void> LocalFileSystem::WriteFileAtomic(const std::string& path, std::string_view data,
                                              mode_t mode) {
  RemoveStaleTemporaries(path);
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  // O_EXCL: a link planted at the temporary name is never followed; one left by a crashed run
  // of the same pid is removed first.
  ::unlink(temp.c_str());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError("cannot create", temp);
  if (auto ok = WriteAll(fd, data, temp); !ok) {
    ::close(fd);
    ::unlink(temp.c_str());
    return ok;
  }
  // The mode given wins over the umask: the store and lab keys must be 0600 whatever it is.
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) {
    auto error = ErrnoError("cannot finish", temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return error;
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    auto error = ErrnoError("cannot rename over", path);
    ::unlink(temp.c_str());
    return error;
  }
  return {};
}

Result<void> CheckOutputPath(const std::string& path) {
  if (path.empty()) return Fail(ErrorCode::kInvalidArgument, "empty output path");
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) {
    if (errno != ENOENT) return ErrnoError("cannot write", path);
    // New (or a dangling link, made on write): its folder must be there and writable.
    const size_t slash = path.rfind('/');
    const std::string folder = slash == std::string::npos ? "."
                               : slash == 0               ? "/"
                                                          : path.substr(0, slash);
    if (::access(folder.c_str(), W_OK | X_OK) != 0) {
      return Fail(ErrorCodeFromErrno(errno), "cannot write {}: folder {}: {}", path, folder,
                  std::strerror(errno));
    }
    return {};
  }
  if (S_ISDIR(target.st_mode)) {
    return Fail(ErrorCode::kInvalidArgument, "{} is a directory; name a file to write", path);
  }
  if (S_ISBLK(target.st_mode)) {
    return Fail(ErrorCode::kInvalidArgument, "{} is a block device; refusing to write on it", path);
  }
  if (S_ISSOCK(target.st_mode)) {
    return Fail(ErrorCode::kInvalidArgument, "{} is a socket; name a file to write", path);
  }
  return {};
}

Result<void> LocalFileSystem::WriteOutputFile(const std::string& path, std::string_view data,
                                              mode_t mode) {
  if (auto ok = CheckOutputPath(path); !ok) return ok;
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno == ENOENT) return WriteFileAtomic(path, data, mode);
    return ErrnoError("cannot write", path);
  }
  if (S_ISREG(link.st_mode)) return WriteFileAtomic(path, data, mode);
  // A symlink is followed (a dangling one creates its target, as the shell's > does); a FIFO or
  // a character device is written into.
  struct stat target {};
  const bool dangling = ::stat(path.c_str(), &target) != 0;
  if (dangling && errno != ENOENT) return ErrnoError("cannot write", path);
  // O_TRUNC empties a regular file behind a link and is ignored by FIFOs and terminals.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError("cannot open", path);
  auto ok = WriteAll(fd, data, path);
  // A regular file behind a link is synced like an atomic write; a device or FIFO may refuse.
  if (ok && S_ISREG(target.st_mode) && ::fsync(fd) != 0) ok = ErrnoError("cannot finish", path);
  if (::close(fd) != 0 && ok) ok = ErrnoError("cannot finish", path);
  return ok;
}

Result<void> LocalFileSystem::RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError("cannot remove", path);
  return {};
}

Result<std::string> MakeTempDir(const std::string& parent, std::string_view prefix) {
  std::string path = parent + "/" + std::string(prefix) + "XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) return ErrnoError("cannot make a folder in", parent);
  return path;
}

Result<void> RemoveEmptyDir(const std::string& path) {
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return ErrnoError("cannot remove", path);
  return {};
}

Result<void> LocalFileSystem::CreateDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return Fail(ErrorCode::kInvalidArgument, "empty folder path");
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty() || IsDirectory(prefix)) continue;
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return ErrnoError("cannot create folder", prefix);
    }
  }
  if (!IsDirectory(path)) return Fail(ErrorCode::kIo, "{} exists and is not a folder", path);
  return {};
}

void MemoryFileSystem::AddFile(const std::string& path, std::string content) {
  files_[path] = std::move(content);
}

void MemoryFileSystem::AddLink(const std::string& path, std::string target) {
  links_[path] = std::move(target);
}

Result<std::string> MemoryFileSystem::ReadFile(const std::string& path, size_t max_bytes) const {
  auto it = files_.find(path);
  if (it == files_.end()) return Fail(ErrorCode::kNotFound, "cannot open {}: no such file", path);
  if (it->second.size() > max_bytes) {
    return Fail(ErrorCode::kInvalidArgument, "{} is larger than {} bytes", path, max_bytes);
  }
  return it->second;
}

bool MemoryFileSystem::Exists(const std::string& path) const {
  return files_.count(path) > 0 || links_.count(path) > 0 || IsDirectory(path);
}

bool MemoryFileSystem::IsRegularFile(const std::string& path) const {
  return files_.contains(path);
}

bool MemoryFileSystem::IsDirectory(const std::string& path) const {
  if (dirs_.count(path) > 0) return true;
  const std::string prefix = path.empty() || path.back() == '/' ? path : path + "/";
  auto has_prefix = [&](const auto& map) {
    auto it = map.lower_bound(prefix);
    return it != map.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  };
  return has_prefix(files_) || has_prefix(links_) || has_prefix(dirs_);
}

Result<std::vector<std::string>> MemoryFileSystem::ListDir(const std::string& path) const {
  if (!IsDirectory(path)) return Fail(ErrorCode::kNotFound, "cannot list {}: no such folder", path);
  const std::string prefix = path.back() == '/' ? path : path + "/";
  std::vector<std::string> names;
  auto collect = [&](const auto& map) {
    for (auto it = map.lower_bound(prefix);
         it != map.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      std::string rest = it->first.substr(prefix.size());
      rest = rest.substr(0, rest.find('/'));
      if (!rest.empty()) names.push_back(rest);
    }
  };
  collect(files_);
  collect(links_);
  collect(dirs_);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<std::string> MemoryFileSystem::ReadLink(const std::string& path) const {
  auto it = links_.find(path);
  if (it == links_.end()) return Fail(ErrorCode::kNotFound, "cannot read link {}", path);
  return it->second;
}

Result<void> MemoryFileSystem::WriteFileAtomic(const std::string& path, std::string_view data,
                                               mode_t /*mode*/) {
  files_[path] = std::string(data);
  return {};
}

Result<void> MemoryFileSystem::WriteOutputFile(const std::string& path, std::string_view data,
                                               mode_t mode) {
  if (IsDirectory(path)) {
    return Fail(ErrorCode::kInvalidArgument, "{} is a directory; name a file to write", path);
  }
  return WriteFileAtomic(path, data, mode);
}

Result<void> MemoryFileSystem::CreateDirs(const std::string& path, mode_t /*mode*/) {
  dirs_[path] = true;
  return {};
}

Result<void> MemoryFileSystem::RemoveFile(const std::string& path) {
  files_.erase(path);
  return {};
}

}  // namespace cmax::sys
