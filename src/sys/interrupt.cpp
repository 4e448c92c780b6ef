#include "sys/interrupt.hpp"

#include <signal.h>

#include <atomic>

namespace cmax::sys {
namespace {

// Process-wide because signals are: the handler can reach nothing else safely.
std::atomic<int> g_signal{0};

void Handle(int signal_number) {
  g_signal.store(signal_number);
  if (signal_number == SIGINT) ::signal(SIGINT, SIG_DFL);
}

}  // namespace

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
