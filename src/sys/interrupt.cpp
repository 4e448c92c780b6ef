#include "sys/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <sys/time.h>

namespace cmax::sys {
namespace {

// Process-wide because signals are: the handler can reach nothing else safely.
std::atomic<int> g_signal{0};

void Handle(int signal_number) {
  g_signal.store(signal_number);
  if (signal_number == SIGINT) ::signal(SIGINT, SIG_DFL);
}

// ExitAtDeadline's words, kept where the handler can reach them as plain bytes.
const char* g_last_words = nullptr;
size_t g_last_words_size = 0;
int g_deadline_exit = 1;

void AtDeadline(int /*signal_number*/) {
  const char* data = g_last_words;
  size_t left = g_last_words_size;
  while (left > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, data, left);
    if (n <= 0) break;
    data += n;
    left -= static_cast<size_t>(n);
  }
  ::_exit(g_deadline_exit);
}

}  // namespace

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
