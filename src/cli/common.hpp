// Helpers the commands share: the one way a command writes a file the user named, the filter
// for stderr, and the exit code of an error.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include "cli/cli.hpp"
#include "core/json_text.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "report/render.hpp"
#include "sys/append_file.hpp"

namespace cmax::cli {

// Every output file a command writes goes through here: "-" is stdout (ctx.out); any other
// path follows sys::FileSystem::WriteOutputFile (a new or regular file atomically; a link,
// FIFO or character device written through; a directory or block device refused).
Result<void> WriteOutput(Context& ctx, const std::string& path, std::string_view text,
                         mode_t mode = 0644);
// An output written as it grows (a run's requests, line by line): "-" and our own stdout are
// written through ctx.out; any other path is emptied and appended to (a link, FIFO or
// character device written through), then synced and closed by `finish`. The paths are the
// same as WriteOutput's; what is returned is used from any one thread.
Result<sys::GrowingOutput> OpenGrowingOutput(Context& ctx, const std::string& path,
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

// stdout as the commands write it, remembering the first write that failed and why (errno at
// that moment): a full disk or /dev/full loses what was asked for, and the exit code must say so.
class FailureRecordingBuffer : public std::streambuf {
 public:
  explicit FailureRecordingBuffer(std::streambuf* sink) : sink_(sink) {}
  std::streambuf* Sink() const { return sink_; }
  int FirstError() const { return error_; }  // 0: every write went through

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void Failed();
  std::streambuf* sink_;
  int error_ = 0;
};

// The exit code once stdout is flushed: `code` when every write went through, or when the
// reader closed the pipe (EPIPE: `cmax report --json | head` stops reading, as it means to);
// otherwise the cause on `err` and 3 in place of 0 or 1 (a command that failed keeps its code
// and its own message).
int ExitCodeAfterOutput(int code, const FailureRecordingBuffer& out, std::ostream& err);

// The exit code for an error a command cannot go on from: kExitUsage when what the user gave
// is at fault (kInvalidArgument, kNotFound), 128 + the signal when Ctrl-C or SIGTERM stopped it
// (kInterrupted, with the signal heard), kExitError otherwise.
int ExitCodeOf(const Error& error);

// The exit code of a command that Ctrl-C or SIGTERM stopped part-way (`interrupted`: what it had
// is kept): 128 + the signal; otherwise `code`.
int ExitCodeUnlessInterrupted(bool interrupted, int code);

// All of standard input when `files` names "-" (the one file read from there), else "".
std::string StdinIfNamed(const std::vector<std::string>& files);

// How a run's findings are said with -v, -vv, -vvv: 1 observed and expected for every one, and
// its links; 2 why it matters and how to reproduce it (the audit's checks); 3 every evidence.
report::TextOptions DetailedText(const Context& ctx);
// A run's record on stdout: JSON (--json), or text as `text` says.
void PrintRunRecord(Context& ctx, const RunRecord& record, bool json,
                    const report::TextOptions& text);

// How a command ends, the same in every command. `command` names it on stderr ("cmax db show").
// An error: its message on stderr after the command's name; the exit code ExitCodeOf gives.
int PrintError(Context& ctx, std::string_view command, const Error& error);
// A library's report (its `text` and `exit_code`) on stdout, or the error.
template <class Report>
int PrintReport(Context& ctx, std::string_view command, const Result<Report>& report) {
  if (!report) return PrintError(ctx, command, report.error());
  ctx.out << report->text;
  return report->exit_code;
}
// How a command that records a run ends: `shown` on stdout, then "COMMAND: [WHERE; ]recorded as
// run N" on stderr unless --quiet; returns `exit_code`.
int PrintRecorded(Context& ctx, std::string_view command, std::string_view shown, int64_t run_id,
                  int exit_code, std::string_view where = "");
// Text on stdout (exit 0), or the error.
int PrintText(Context& ctx, std::string_view command, const Result<std::string>& text);
// `text` into the file the user named (`-o`; stdout when none or "-"), then "wrote PATH" on
// stderr unless --quiet, so that stdout carries only what was asked for.
int WriteOrPrint(Context& ctx, std::string_view command, const std::string& output,
                 std::string_view text);

}  // namespace cmax::cli
