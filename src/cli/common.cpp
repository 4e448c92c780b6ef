#include "cli/common.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>
#include <ostream>
#include <sys/stat.h>

#include "audit/catalogue_views.hpp"
#include "core/strings.hpp"
#include "sys/append_file.hpp"
#include "sys/file_system.hpp"
#include "sys/interrupt.hpp"

namespace cmax::cli {

namespace {

// Whether a path names the file our stdout already writes to (/dev/stdout, /proc/self/fd/1, the
// file stdout was redirected to): opened again it would start at offset 0 and truncate, so what
// goes there goes through the stream instead.
bool IsOurStdout(const std::string& path) {
  struct stat target {};
  struct stat out {};
  return ::stat(path.c_str(), &target) == 0 && ::fstat(STDOUT_FILENO, &out) == 0 &&
         S_ISREG(out.st_mode) && target.st_dev == out.st_dev && target.st_ino == out.st_ino;
}

}  // namespace

Result<void> WriteOutput(Context& ctx, const std::string& path, std::string_view text,
                         mode_t mode) {
  if (path == "-" || IsOurStdout(path)) {
    ctx.out << text;
    ctx.out.flush();
    if (!ctx.out) return Fail(ErrorCode::kIo, "cannot write to stdout");
    return {};
  }
  return sys::LocalFileSystem().WriteOutputFile(path, text, mode);
}

Result<sys::GrowingOutput> OpenGrowingOutput(Context& ctx, const std::string& path, mode_t mode) {
  if (path == "-" || IsOurStdout(path)) {
    return sys::GrowingOutput{.append = [&ctx](std::string_view text) -> Result<void> {
      ctx.out << text;
      ctx.out.flush();
      if (!ctx.out) return Fail(ErrorCode::kIo, "cannot write to stdout");
      return {};
    }};
  }
  if (auto ok = sys::CheckOutputPath(path); !ok) return tl::unexpected(ok.error());
  auto file = sys::AppendFile::Create(path, mode);
  if (!file) return tl::unexpected(file.error());
  auto shared = std::make_shared<sys::AppendFile>(std::move(*file));
  return sys::GrowingOutput{
      .append = [shared](std::string_view text) { return shared->Append(text); },
      .finish = [shared] { return shared->Close(); }};
}

ControlCharacterFilter::int_type ControlCharacterFilter::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char one = traits_type::to_char_type(c);
  return xsputn(&one, 1) == 1 ? c : traits_type::eof();
}

std::streamsize ControlCharacterFilter::xsputn(const char* s, std::streamsize n) {
  std::string shown(s, static_cast<size_t>(n));
  ShowControlCharacters(shown);  // may shorten it: a C1 control's two bytes become one '?'
  const auto size = static_cast<std::streamsize>(shown.size());
  return sink_->sputn(shown.data(), size) == size ? n : 0;
}

void FailureRecordingBuffer::Failed() {
  if (error_ == 0) error_ = errno != 0 ? errno : EIO;
}

FailureRecordingBuffer::int_type FailureRecordingBuffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  errno = 0;
  if (traits_type::eq_int_type(sink_->sputc(traits_type::to_char_type(c)), traits_type::eof())) {
    Failed();
    return traits_type::eof();
  }
  return c;
}

std::streamsize FailureRecordingBuffer::xsputn(const char* s, std::streamsize n) {
  errno = 0;
  const std::streamsize written = sink_->sputn(s, n);
  if (written != n) Failed();
  return written;
}

int FailureRecordingBuffer::sync() {
  errno = 0;
  const int result = sink_->pubsync();
  if (result != 0) Failed();
  return result;
}

int ExitCodeAfterOutput(int code, const FailureRecordingBuffer& out, std::ostream& err) {
  if (out.FirstError() == 0 || out.FirstError() == EPIPE) return code;
  if (code != kExitOk && code != kExitChecksFailed) return code;
  err << "cmax: cannot write to standard output: " << std::strerror(out.FirstError()) << "\n";
  err.flush();
  return kExitError;
}

int ExitCodeOf(const Error& error) {
  // Stopped by the user's Ctrl-C or SIGTERM; an EINTR no signal of the user's caused is an error.
  if (error.code == ErrorCode::kInterrupted && sys::InterruptSignal() != 0) {
    return 128 + sys::InterruptSignal();
  }
  return error.code == ErrorCode::kInvalidArgument || error.code == ErrorCode::kNotFound
             ? kExitUsage
             : kExitError;
}

int ExitCodeUnlessInterrupted(bool interrupted, int code) {
  return interrupted ? 128 + sys::InterruptSignal() : code;
}

std::string StdinIfNamed(const std::vector<std::string>& files) {
  if (std::ranges::find(files, "-") == files.end()) return {};
  return {std::istreambuf_iterator<char>(std::cin), {}};
}

report::TextOptions DetailedText(const Context& ctx) {
  return {.color = ctx.Color(),
          .show_evidence = ctx.global.verbosity >= 3,
          .detail = ctx.global.verbosity,
          .explain = audit::ExplainCheck};
}

void PrintRunRecord(Context& ctx, const RunRecord& record, bool json,
                    const report::TextOptions& text) {
  ctx.out << (json ? report::RenderJson(record) : report::RenderText(record, text));
}

int PrintError(Context& ctx, std::string_view command, const Error& error) {
  ctx.err << command << ": " << error.message << "\n";
  return ExitCodeOf(error);
}

int PrintRecorded(Context& ctx, std::string_view command, std::string_view shown, int64_t run_id,
                  int exit_code, std::string_view where) {
  ctx.out << shown;
  if (!ctx.global.quiet) {
    ctx.err << command << ": " << where << (where.empty() ? "" : "; ") << "recorded as run "
            << run_id << "\n";
  }
  return exit_code;
}

int PrintText(Context& ctx, std::string_view command, const Result<std::string>& text) {
  if (!text) return PrintError(ctx, command, text.error());
  ctx.out << *text;
  return kExitOk;
}

int WriteOrPrint(Context& ctx, std::string_view command, const std::string& output,
                 std::string_view text) {
  if (output.empty() || output == "-") {
    ctx.out << text;
    return kExitOk;
  }
  if (auto ok = WriteOutput(ctx, output, text); !ok) return PrintError(ctx, command, ok.error());
  if (!ctx.global.quiet) ctx.err << "wrote " << output << "\n";
  return kExitOk;
}

}  // namespace cmax::cli
