// KmsgReader: reads /dev/kmsg one record at a time without blocking, waits with poll (no busy
// loop), and survives the ring overwriting records it had not read yet (EPIPE): it counts them
// from the gap in sequence numbers and carries on with the oldest record still there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

class KmsgReader {
 public:
  enum class Start { kBeginning, kNow };
  static Result<KmsgReader> Open(const std::string& path, Start start);
  KmsgReader(KmsgReader&& other) noexcept;
  KmsgReader& operator=(KmsgReader&& other) noexcept;
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;
  ~KmsgReader();

  // The next raw record ("prio,seq,usec,flags;message\n..."), or nullopt when none is
  // waiting. An overrun is counted and skipped, never returned as an error.
  Result<std::optional<std::string>> Next();
  // Blocks until a record can be read or the timeout passes; false on timeout.
  Result<bool> Wait(Duration timeout);

  uint64_t Lost() const { return lost_; }          // records overwritten before we read them
  uint64_t Overruns() const { return overruns_; }  // times the kernel said EPIPE
  uint64_t Records() const { return records_; }
  int Fd() const { return fd_; }

 private:
  KmsgReader(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  std::optional<uint64_t> last_sequence_;
  uint64_t lost_ = 0;
  uint64_t overruns_ = 0;
  uint64_t records_ = 0;
};

// The sequence number of a raw record (its second field); nullopt when malformed.
std::optional<uint64_t> KmsgSequence(std::string_view raw);

}  // namespace cmax::sys
