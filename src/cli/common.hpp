// Helpers the commands share: the one way a command writes a file the user named, the filter
// for stderr, and the exit code of an error.
#pragma once

#include <streambuf>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "cli/cli.hpp"
#include "core/result.hpp"

namespace cmax::cli {

// Every output file a command writes goes through here: "-" is stdout (ctx.out); any other
// path follows sys::FileSystem::WriteOutputFile (a new or regular file atomically; a link,
// FIFO or character device written through; a directory or block device refused).
Result<void> WriteOutput(Context& ctx, const std::string& path, std::string_view text,
                         mode_t mode = 0644);
// What a command writes to stderr passes through this: errors often quote what came from
// outside (a server's message, a scheduler's reason, a file's text), and a terminal obeys
// control characters. C0 controls other than tab and newline, and DEL, become '?'.
class ControlCharacterFilter : public std::streambuf {
 public:
  explicit ControlCharacterFilter(std::streambuf* sink) : sink_(sink) {}

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override { return sink_->pubsync(); }

 private:
  std::streambuf* sink_;
};

// The exit code for an error a command cannot go on from: kExitUsage when what the user gave
// is at fault (kInvalidArgument, kNotFound), kExitError otherwise.
int ExitCodeOf(const Error& error);

}  // namespace cmax::cli
