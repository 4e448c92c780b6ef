#include "cli/common.hpp"

#include <charconv>
#include <ostream>

#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {

Result<store::Store> OpenExistingStore(const Context& ctx) {
  return store::Store::Open({.path = ctx.DbPath(), .create = false});
}

Result<int64_t> ResolveRunId(store::Store& store, const std::string& text,
                             const std::string& command) {
  if (text.empty() || text == "latest") return store.LatestRunId(command);
  int64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size() || id <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' is not a run id (a number, or 'latest')", text);
  }
  return id;
}

std::string DisplayState(const RunInfo& run) {
  if (run.state == RunState::kRunning && run.host == sys::Hostname() && run.pid > 0 &&
      !sys::ProcessAlive(static_cast<int>(run.pid))) {
    return "abandoned";
  }
  return std::string(RunStateName(run.state));
}

Result<void> WriteOutput(Context& ctx, const std::string& path, std::string_view text,
                         mode_t mode) {
  if (path == "-") {
    ctx.out << text;
    ctx.out.flush();
    if (!ctx.out) return Fail(ErrorCode::kIo, "cannot write to stdout");
    return {};
  }
  return sys::LocalFileSystem().WriteOutputFile(path, text, mode);
}

int ExitCodeOf(const Error& error) {
  return error.code == ErrorCode::kInvalidArgument || error.code == ErrorCode::kNotFound
             ? kExitUsage
             : kExitError;
}

}  // namespace cmax::cli
