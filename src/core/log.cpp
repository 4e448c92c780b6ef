#include "core/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "core/strings.hpp"

namespace cmax::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kWarn)};
std::mutex g_sink_mutex;
Sink g_sink;

std::string_view Tag(Level level) {
  switch (level) {
    case Level::kError: return "error";
    case Level::kWarn: return "warning";
    case Level::kInfo: return "info";
    case Level::kDebug: return "debug";
    case Level::kTrace: return "trace";
  }
  return "log";
}

}  // namespace

void SetLevel(Level level) {
  g_level.store(static_cast<int>(level));
}
Level GetLevel() {
  return static_cast<Level>(g_level.load());
}
bool Enabled(Level level) {
  return static_cast<int>(level) <= g_level.load();
}

Level LevelFor(int verbosity, bool quiet, bool stderr_is_tty) {
  if (quiet) return Level::kError;
  int level = static_cast<int>(stderr_is_tty ? Level::kInfo : Level::kWarn) + verbosity;
  if (level > static_cast<int>(Level::kTrace)) level = static_cast<int>(Level::kTrace);
  return static_cast<Level>(level);
}

void SetSink(Sink sink) {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = std::move(sink);
}

void Write(Level level, std::string_view message) {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  if (g_sink) {
    g_sink(level, message);
    return;
  }
  std::string line = fmt::format("cmax: {}: {}\n", Tag(level), message);
  // Log lines quote what came from outside (server messages, node names): a terminal must not
  // obey control characters in them.
  ShowControlCharacters(line);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace cmax::log
