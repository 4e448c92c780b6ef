#include "sys/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <sys/time.h>

namespace cmax::sys {
namespace {

// Process-wide because signals are: the handler can reach nothing else safely.
std::atomic<int> g_signal{0};

// What LeftBehind says, as bytes the handler can write: two buffers, the one to read named by
// g_said; a change is written into the other and then published, and g_said_changes counted,
// so that a handler (on any thread) that copied a buffer while two changes went by knows it
// and copies again. The writer's own thread, interrupted mid-change, reads the published one.
constexpr size_t kSaidMax = 4096;
char g_said_text[2][kSaidMax];
std::atomic<size_t> g_said_size[2] = {0, 0};
std::atomic<int> g_said{0};
std::atomic<unsigned> g_said_changes{0};
static_assert(std::atomic<size_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free &&
              std::atomic<unsigned>::is_always_lock_free);

// Only write(2): safe in a signal handler.
void WriteAll(int fd, const char* data, size_t left) {
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n <= 0) return;
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void Handle(int signal_number) {
  if (signal_number == SIGINT && g_signal.load() == SIGINT) {
    // The second: ends the process at once, as Ctrl-C does, after saying what is left.
    char copy[kSaidMax];
    size_t size = 0;
    for (int tries = 0; tries < 8; ++tries) {
      const unsigned changes = g_said_changes.load();
      const int said = g_said.load();
      size = g_said_size[said].load();
      std::memcpy(copy, g_said_text[said], size);
      if (g_said_changes.load() == changes) break;
    }
    WriteAll(STDERR_FILENO, copy, size);
    ::signal(SIGINT, SIG_DFL);
    ::raise(SIGINT);
    return;
  }
  g_signal.store(signal_number);
  if (signal_number == SIGINT && g_said_size[g_said.load()].load() > 0) {
    // The convention of tools that clean up on the way out (docker compose, terraform).
    constexpr std::string_view kStopping =
        "cmax: stopping: taking down what it set up (Ctrl-C again stops at once and leaves it)\n";
    WriteAll(STDERR_FILENO, kStopping.data(), kStopping.size());
  }
}

std::mutex g_left_mutex;
std::map<int, std::string>& LeftTexts() {
  static auto* texts = new std::map<int, std::string>();  // never destroyed: used at exit
  return *texts;
}

// Called with g_left_mutex held.
void PublishLeftBehind() {
  std::string text;
  for (const auto& [id, what] : LeftTexts()) text += "  " + what + "\n";
  if (!text.empty()) {
    text = "cmax: stopped at once by a second Ctrl-C; left behind:\n" + text;
  }
  if (text.size() > kSaidMax) {
    const std::string_view cut = "  ... (more)\n";
    text.resize(kSaidMax - cut.size());
    text += cut;
  }
  const int next = 1 - g_said.load();
  std::memcpy(g_said_text[next], text.data(), text.size());
  g_said_size[next].store(text.size());
  g_said.store(next);
  g_said_changes.fetch_add(1);
}

// ExitAtDeadline's words, kept where the handler can reach them as plain bytes.
const char* g_last_words = nullptr;
size_t g_last_words_size = 0;
int g_deadline_exit = 1;

void AtDeadline(int /*signal_number*/) {
  WriteAll(STDOUT_FILENO, g_last_words, g_last_words_size);
  ::_exit(g_deadline_exit);
}

}  // namespace

LeftBehind::LeftBehind(std::string what) {
  const std::lock_guard lock(g_left_mutex);
  static int last_id = 0;
  id_ = ++last_id;
  LeftTexts()[id_] = std::move(what);
  PublishLeftBehind();
}

LeftBehind::~LeftBehind() {
  const std::lock_guard lock(g_left_mutex);
  LeftTexts().erase(id_);
  PublishLeftBehind();
}

void ExitAtDeadline(double seconds, const std::string& last_words, int exit_code) {
  static std::string words;  // outlives every caller; set before the timer is armed
  ::signal(SIGALRM, SIG_IGN);
  words = last_words;
  g_last_words = words.data();
  g_last_words_size = words.size();
  g_deadline_exit = exit_code;
  struct sigaction action {};
  action.sa_handler = AtDeadline;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGALRM, &action, nullptr);
  const double whole = seconds < 0.001 ? 0.001 : seconds;
  itimerval timer{};
  timer.it_value.tv_sec = static_cast<time_t>(whole);
  timer.it_value.tv_usec =
      static_cast<suseconds_t>((whole - static_cast<double>(timer.it_value.tv_sec)) * 1e6);
  if (timer.it_value.tv_sec == 0 && timer.it_value.tv_usec == 0) timer.it_value.tv_usec = 1;
  ::setitimer(ITIMER_REAL, &timer, nullptr);
}

void CancelDeadline() {
  itimerval off{};
  ::setitimer(ITIMER_REAL, &off, nullptr);
}

void InstallInterruptHandlers() {
  struct sigaction action {};
  action.sa_handler = Handle;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR and notice
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  // A reader that went away (cmax ... | head) must not kill a run before it is closed.
  ::signal(SIGPIPE, SIG_IGN);
}

int InterruptSignal() {
  return g_signal.load();
}
void ClearInterrupt() {
  g_signal.store(0);
}
void RequestInterrupt(int signal_number) {
  g_signal.store(signal_number);
}

}  // namespace cmax::sys
