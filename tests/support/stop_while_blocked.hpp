// Runs `work` (which blocks in a system call: open() of a FIFO with no writer) with a stop
// asked, as Ctrl-C or SIGTERM asks it (sys::RequestInterrupt), and with SIGUSR1 sent to this
// thread until `work` returns: its handler does nothing and has no SA_RESTART, so the blocked
// call returns EINTR and the code sees the stop. No sleep: the signal is repeated until the
// state (work returned) is reached. The stop is cleared afterwards.
#pragma once

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "sys/interrupt.hpp"

namespace cmax::testing {

inline void DoNothingOnSignal(int /*signal*/) {}

template <typename Work>
auto WithAStopWhileBlocked(Work&& work) {
  struct sigaction quiet {};
  quiet.sa_handler = DoNothingOnSignal;
  struct sigaction before {};
  ::sigaction(SIGUSR1, &quiet, &before);
  sys::RequestInterrupt(SIGTERM);
  std::atomic<bool> returned{false};
  const pthread_t worker = ::pthread_self();
  std::thread nudger([&] {
    while (!returned) {
      ::pthread_kill(worker, SIGUSR1);
      std::this_thread::yield();
    }
  });
  auto result = work();
  returned = true;
  nudger.join();
  sys::ClearInterrupt();
  ::sigaction(SIGUSR1, &before, nullptr);
  return result;
}

}  // namespace cmax::testing
