#include "sys/gzip_file.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

// ISA-L's header gives the layout of its inflate state; the library itself is loaded at run
// time. Built without the header (no libisal-dev), every gzip file goes through zlib.
#if __has_include(<isa-l/igzip_lib.h>)
#include <isa-l/igzip_lib.h>
#define CMAX_ISAL_HEADER 1
#else
#define CMAX_ISAL_HEADER 0
#endif

namespace cmax::sys {
namespace {

// Input read from the file at a time: fewer reads on a trace of a gigabyte than zlib's 8 KiB.
constexpr size_t kInputBytes = size_t{1} << 18;

bool IsGzipMagic(const unsigned char* p, size_t n) {
  return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

Error IoError(std::string_view what) {
  return Error{ErrorCode::kIo, std::string(what) + ": " + std::strerror(errno)};
}

// read(2) until it answers something other than EINTR.
ssize_t ReadSome(int fd, void* into, size_t size) {
  for (;;) {
    const ssize_t n = ::read(fd, into, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

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

Result<std::unique_ptr<ByteSource>> OpenWithZlib(int fd, const std::string& path) {
  gzFile file = gzdopen(fd, "rb");
  if (file == nullptr) {
    ::close(fd);
    return Fail(ErrorCode::kIo, "{}: cannot read", path);
  }
  gzbuffer(file, static_cast<unsigned>(kInputBytes));
  return std::unique_ptr<ByteSource>(std::make_unique<GzipFile>(file));
}

// A file whose first bytes were read to tell gzip from plain: those first, then the rest.
class PlainFile final : public ByteSource {
 public:
  PlainFile(int fd, std::vector<unsigned char> head) : fd_(fd), head_(std::move(head)) {}
  PlainFile(const PlainFile&) = delete;
  PlainFile& operator=(const PlainFile&) = delete;
  ~PlainFile() override { ::close(fd_); }

  Result<size_t> Read(char* into, size_t size) override {
    if (at_ < head_.size()) {
      const size_t n = std::min(size, head_.size() - at_);
      std::memcpy(into, head_.data() + at_, n);
      at_ += n;
      return n;
    }
    const ssize_t n = ReadSome(fd_, into, size);
    if (n < 0) return tl::unexpected(IoError("read"));
    return static_cast<size_t>(n);
  }

 private:
  int fd_;
  std::vector<unsigned char> head_;
  size_t at_ = 0;
};

#if CMAX_ISAL_HEADER

// The soname of Debian's libisal2 (ISA-L 2.x).
constexpr const char* kIsalSoname = "libisal.so.2";

struct IsalApi {
  decltype(&isal_inflate_init) init = nullptr;
  decltype(&isal_inflate_reset) reset = nullptr;
  decltype(&isal_inflate) inflate = nullptr;
};

std::once_flag isal_once;
IsalApi isal_api;
Error isal_error;

void LoadIsal() {
  // RTLD_LOCAL: its symbols stay its own; never closed, as a loaded library may be in use.
  void* handle = ::dlopen(kIsalSoname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    isal_error = Error{ErrorCode::kUnavailable, std::string("cannot load ") + kIsalSoname +
                                                    " (Debian: apt install libisal2): " +
                                                    (why != nullptr ? why : "unknown error")};
    return;
  }
  IsalApi api;
  api.init = reinterpret_cast<decltype(api.init)>(::dlsym(handle, "isal_inflate_init"));
  api.reset = reinterpret_cast<decltype(api.reset)>(::dlsym(handle, "isal_inflate_reset"));
  api.inflate = reinterpret_cast<decltype(api.inflate)>(::dlsym(handle, "isal_inflate"));
  if (api.init == nullptr || api.reset == nullptr || api.inflate == nullptr) {
    isal_error = Error{ErrorCode::kUnavailable,
                       std::string(kIsalSoname) + " lacks isal_inflate (ISA-L 2.19 or later)"};
    ::dlclose(handle);
    return;
  }
  isal_api = api;
}

const IsalApi* Isal() {
  std::call_once(isal_once, LoadIsal);
  return isal_api.inflate != nullptr ? &isal_api : nullptr;
}

// zlib's words for the same kind of fault, so that both inflaters read alike to a user (ISA-L
// tells fewer faults apart: a bad header CRC is "incorrect data check" here, zlib's "header crc
// mismatch"; any bad block, code or distance is "invalid compressed data").
std::string_view IsalWords(int code) {
  switch (code) {
    case ISAL_INVALID_WRAPPER: return "incorrect header check";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect data check";
    case ISAL_NEED_DICT: return "need dictionary";
    default: return "invalid compressed data";  // a bad block, symbol or distance
  }
}

// gzip members inflated by ISA-L straight into the reader's buffer, one after another.
class IsalGzipFile final : public ByteSource {
 public:
  IsalGzipFile(int fd, std::vector<unsigned char> head, const IsalApi& api)
      : fd_(fd), api_(api), input_(std::move(head)), state_(std::make_unique<inflate_state>()) {
    const size_t held = input_.size();
    input_.resize(std::max(held, kInputBytes));
    api_.init(state_.get());
    state_->crc_flag = ISAL_GZIP;  // parse the header, check the CRC and length at the end
    state_->next_in = input_.data();
    state_->avail_in = static_cast<uint32_t>(held);
  }
  IsalGzipFile(const IsalGzipFile&) = delete;
  IsalGzipFile& operator=(const IsalGzipFile&) = delete;
  ~IsalGzipFile() override { ::close(fd_); }

  Result<size_t> Read(char* into, size_t size) override {
    if (failed_) return tl::unexpected(failure_);
    if (ended_ || size == 0) return size_t{0};
    inflate_state& s = *state_;
    const auto asked = static_cast<uint32_t>(std::min<size_t>(size, UINT32_MAX));
    s.next_out = reinterpret_cast<uint8_t*>(into);
    s.avail_out = asked;
    for (;;) {
      if (s.block_state == ISAL_BLOCK_FINISH) {
        // A member ended whole. Another follows only where the next bytes are gzip's magic.
        if (s.avail_in < 2 && !at_eof_) {
          if (auto more = Refill(); !more) return Stop(asked, more.error());
          continue;
        }
        if (!IsGzipMagic(s.next_in, s.avail_in)) {
          ended_ = true;
          return size_t{asked - s.avail_out};
        }
        uint8_t* next = s.next_in;
        const uint32_t left = s.avail_in;
        uint8_t* out = s.next_out;
        const uint32_t room = s.avail_out;
        api_.reset(&s);
        s.crc_flag = ISAL_GZIP;
        s.next_in = next;
        s.avail_in = left;
        s.next_out = out;
        s.avail_out = room;
      }
      if (s.avail_in == 0 && !at_eof_) {
        if (auto more = Refill(); !more) return Stop(asked, more.error());
        continue;
      }
      // Called at the end of the file too, with no input left: ISA-L may still hold output it
      // decoded into its own buffer and has not handed over (a small read before the cut).
      const uint32_t in_before = s.avail_in;
      const uint32_t out_before = s.avail_out;
      const int code = api_.inflate(&s);
      if (code < 0) {
        return Stop(asked, Error{ErrorCode::kCorrupt, "gzip: " + std::string(IsalWords(code))});
      }
      if (s.avail_out == 0) return size_t{asked};
      if (s.block_state == ISAL_BLOCK_FINISH) continue;  // the next member, or the end
      // Input used up: hand over what there is, then go round for more.
      if (s.avail_out < asked) return size_t{asked - s.avail_out};
      if (s.avail_in == 0 && at_eof_) {
        return Stop(asked, Error{ErrorCode::kCorrupt, "gzip: unexpected end of file"});
      }
      if (s.avail_in == in_before && s.avail_out == out_before) {
        // Never seen; a guard against going round forever on a state ISA-L does not document.
        return Stop(asked, Error{ErrorCode::kCorrupt, "gzip: inflate made no progress"});
      }
    }
  }

 private:
  // The bytes not yet inflated moved to the front, the rest of the buffer read after them.
  Result<void> Refill() {
    inflate_state& s = *state_;
    const size_t keep = s.avail_in;
    if (keep > 0 && s.next_in != input_.data()) std::memmove(input_.data(), s.next_in, keep);
    const ssize_t n = ReadSome(fd_, input_.data() + keep, input_.size() - keep);
    if (n < 0) return tl::unexpected(IoError("read"));
    if (n == 0) at_eof_ = true;
    s.next_in = input_.data();
    s.avail_in = static_cast<uint32_t>(keep + static_cast<size_t>(n));
    return {};
  }

  // What was inflated before a fault is handed over first; the fault on the next call, and on
  // every call after it.
  Result<size_t> Stop(uint32_t asked, Error why) {
    failed_ = true;
    failure_ = std::move(why);
    const uint32_t produced = asked - state_->avail_out;
    if (produced > 0) return size_t{produced};
    return tl::unexpected(failure_);
  }

  int fd_;
  const IsalApi& api_;
  std::vector<unsigned char> input_;
  std::unique_ptr<inflate_state> state_;
  bool at_eof_ = false;
  bool ended_ = false;
  bool failed_ = false;
  Error failure_;
};

#endif  // CMAX_ISAL_HEADER

}  // namespace

Result<void> IsalInflateAvailable() {
#if CMAX_ISAL_HEADER
  if (Isal() != nullptr) return {};
  return tl::unexpected(isal_error);
#else
  return Fail(ErrorCode::kUnavailable, "built without ISA-L's header (Debian: libisal-dev)");
#endif
}

std::string_view FastestInflaterName() {
  return IsalInflateAvailable() ? "isa-l" : "zlib";
}

Result<std::unique_ptr<ByteSource>> OpenMaybeGzipFile(const std::string& path, Inflater inflater) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return Fail(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "{}: {}", path,
                std::strerror(error));
  }
  if (inflater == Inflater::kZlib) return OpenWithZlib(fd, path);
  if (auto available = IsalInflateAvailable(); !available) {
    if (inflater == Inflater::kFastest) return OpenWithZlib(fd, path);
    ::close(fd);
    return tl::unexpected(available.error());
  }
  // The first piece tells gzip from plain (a pipe cannot be read twice): read once, kept.
  std::vector<unsigned char> head(kInputBytes);
  size_t held = 0;
  while (held < 2) {
    const ssize_t n = ReadSome(fd, head.data() + held, head.size() - held);
    if (n < 0) {
      Error why = IoError(path);
      ::close(fd);
      return tl::unexpected(why);
    }
    if (n == 0) break;
    held += static_cast<size_t>(n);
  }
  head.resize(held);
#if CMAX_ISAL_HEADER
  if (IsGzipMagic(head.data(), head.size())) {
    return std::unique_ptr<ByteSource>(
        std::make_unique<IsalGzipFile>(fd, std::move(head), *Isal()));
  }
#endif
  return std::unique_ptr<ByteSource>(std::make_unique<PlainFile>(fd, std::move(head)));
}

}  // namespace cmax::sys
