// Logging to stderr for people watching a command: results never go here (they go to stdout
// or the store). Quiet when stderr is not a terminal unless -v asks for more.
#pragma once

#include <fmt/format.h>
#include <functional>
#include <string_view>
#include <utility>

namespace cmax::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

// The level and sink are process-wide on purpose: every library logs, and threading a logger
// through each call would buy nothing a test cannot get from SetSink.
void SetLevel(Level level);
Level GetLevel();
bool Enabled(Level level);

// Level for a command line: warnings only when stderr is piped, info on a terminal;
// each -v adds one level, --quiet keeps errors only.
Level LevelFor(int verbosity, bool quiet, bool stderr_is_tty);

using Sink = std::function<void(Level, std::string_view)>;
// Replaces the stderr writer (tests); an empty sink restores it.
void SetSink(Sink sink);

void Write(Level level, std::string_view message);

template <class... Args>
void Error(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kError))
    Write(Level::kError, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void Warn(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kWarn)) Write(Level::kWarn, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void Info(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kInfo)) Write(Level::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void Debug(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kDebug))
    Write(Level::kDebug, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void Trace(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kTrace))
    Write(Level::kTrace, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace cmax::log
