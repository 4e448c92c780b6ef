#include "sys/gzip_file.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string_view>

namespace cmax::sys {
namespace {

class GzipFile final : public ByteSource {
 public:
  explicit GzipFile(gzFile file) : file_(file) {}
  GzipFile(const GzipFile&) = delete;
  GzipFile& operator=(const GzipFile&) = delete;
  ~GzipFile() override { gzclose_r(file_); }

  Result<size_t> Read(char* into, size_t size) override {
    const int n = gzread(file_, into, static_cast<unsigned>(std::min<size_t>(size, INT_MAX)));
    if (n > 0) return static_cast<size_t>(n);
    int code = Z_OK;
    const char* why = gzerror(file_, &code);
    // A member cut short ends with 0 bytes and Z_BUF_ERROR kept aside: only gzerror says so.
    if (n == 0 && code == Z_OK) return size_t{0};
    if (code == Z_ERRNO) return Fail(ErrorCode::kIo, "read: {}", std::strerror(errno));
    // Z_BUF_ERROR: "unexpected end of file" (cut short); Z_DATA_ERROR: corrupt deflate data.
    // zlib's words come after the file's name ("<fd:3>: unexpected end of file").
    std::string_view words = why != nullptr ? why : "unreadable";
    if (const size_t colon = words.rfind(": "); colon != std::string_view::npos) {
      words.remove_prefix(colon + 2);
    }
    return Fail(ErrorCode::kCorrupt, "gzip: {}", words);
  }

 private:
  gzFile file_;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenMaybeGzipFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return Fail(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "{}: {}", path,
                std::strerror(error));
  }
  gzFile file = gzdopen(fd, "rb");
  if (file == nullptr) {
    ::close(fd);
    return Fail(ErrorCode::kIo, "{}: cannot read", path);
  }
  // A larger window than zlib's 8 KiB default: fewer reads on a trace of a gigabyte.
  gzbuffer(file, 1U << 18);
  return std::unique_ptr<ByteSource>(std::make_unique<GzipFile>(file));
}

}  // namespace cmax::sys
