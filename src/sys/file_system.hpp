// FileSystem: every file the collectors, the store and the lab read or write goes through
// this, so parsers are tested on text they are handed and collectors on a MemoryFileSystem.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include "core/result.hpp"

namespace cmax::sys {

inline constexpr size_t kDefaultReadLimit = size_t{64} << 20;

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Reads to EOF (so /proc and /sys files, which report size 0, work); fails past max_bytes.
  virtual Result<std::string> ReadFile(const std::string& path,
                                       size_t max_bytes = kDefaultReadLimit) const = 0;
  virtual bool Exists(const std::string& path) const = 0;
  virtual bool IsDirectory(const std::string& path) const = 0;
  // A regular file (after links): what may be opened without side effects. A device, a FIFO or
  // a socket is not: opening one can block, or act (a watchdog starts counting).
  virtual bool IsRegularFile(const std::string& path) const = 0;
  // Entry names, sorted, without "." and "..".
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) const = 0;
  virtual Result<std::string> ReadLink(const std::string& path) const = 0;
  // Writes a temporary file beside the target and renames it over, so readers never see
  // half a file and a crash leaves the old one. The temporary file of a writer killed before
  // (PATH.tmp.PID, its process gone, untouched for ten minutes) goes with the next write.
  virtual Result<void> WriteFileAtomic(const std::string& path, std::string_view data,
                                       mode_t mode) = 0;
  // A file the user named as an output (a report, a result file): a new path or a regular
  // file is written atomically as above; an existing symlink, FIFO or character device is
  // written through, never replaced (`-o /dev/null` must not turn the device into a file); a
  // directory, a block device or a socket is refused with kInvalidArgument.
  virtual Result<void> WriteOutputFile(const std::string& path, std::string_view data,
                                       mode_t mode) = 0;
  // Like mkdir -p; existing folders are left as they are.
  virtual Result<void> CreateDirs(const std::string& path, mode_t mode) = 0;
  // Removes a file; one that is not there is not an error.
  virtual Result<void> RemoveFile(const std::string& path) = 0;
};

// An analyser's input file (`nccl analyze`, `train log`), read whole, with the errors its
// command reports: a read cut by the user's Ctrl-C or SIGTERM (`interrupted` says it was) is
// kInterrupted, nothing recorded; a file not there kNotFound; any other failure
// kInvalidArgument. Each message names the file.
Result<std::string> ReadInputFile(const FileSystem& fs, const std::string& path, size_t max_bytes,
                                  const std::function<bool()>& interrupted);
// What an analyser the user stopped between its files returns: kInterrupted, nothing recorded.
tl::unexpected<Error> StoppedNothingRecorded();

// A new folder of this process's own in `parent`, "PARENT/PREFIXxxxxxx": mkdtemp's, a name no
// one had, mode 0700, so that what is put in it is no one else's to swap or remove.
Result<std::string> MakeTempDir(const std::string& parent, std::string_view prefix);
// Removes an empty folder; one that is not there is not an error.
Result<void> RemoveEmptyDir(const std::string& path);

class LocalFileSystem final : public FileSystem {
 public:
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const override;
  bool Exists(const std::string& path) const override;
  bool IsDirectory(const std::string& path) const override;
  bool IsRegularFile(const std::string& path) const override;
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  Result<std::string> ReadLink(const std::string& path) const override;
  Result<void> WriteFileAtomic(const std::string& path, std::string_view data,
                               mode_t mode) override;
  Result<void> WriteOutputFile(const std::string& path, std::string_view data,
                               mode_t mode) override;
  Result<void> CreateDirs(const std::string& path, mode_t mode) override;
  Result<void> RemoveFile(const std::string& path) override;
};

// A stand-in file system held in memory, for tests of code that reads /proc, /sys and /etc.
// Folders exist implicitly as prefixes of file paths; links are files whose ReadLink answers.
class MemoryFileSystem final : public FileSystem {
 public:
  void AddFile(const std::string& path, std::string content);
  void AddLink(const std::string& path, std::string target);

  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const override;
  bool Exists(const std::string& path) const override;
  bool IsDirectory(const std::string& path) const override;
  bool IsRegularFile(const std::string& path) const override;  // a file added, not a folder
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  Result<std::string> ReadLink(const std::string& path) const override;
  Result<void> WriteFileAtomic(const std::string& path, std::string_view data,
                               mode_t mode) override;
  Result<void> WriteOutputFile(const std::string& path, std::string_view data,
                               mode_t mode) override;
  Result<void> CreateDirs(const std::string& path, mode_t mode) override;
  Result<void> RemoveFile(const std::string& path) override;

 private:
  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> links_;
  std::map<std::string, bool> dirs_;
};

// What LocalFileSystem::WriteOutputFile refuses (a directory, a block device or a socket, also
// behind a link), found before the work whose result goes there.
Result<void> CheckOutputPath(const std::string& path);

// "No such file", "Permission denied" ... as an ErrorCode.
ErrorCode ErrorCodeFromErrno(int error_number);

}  // namespace cmax::sys
