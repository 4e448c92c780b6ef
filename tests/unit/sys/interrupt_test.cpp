// Ctrl-C twice: the first asks for an orderly stop; the second ends the process at once, as
// SIGINT's default does, after saying on stderr what it leaves behind and how to remove it.
// Each case runs in a child process (a gtest death test): the signals are real.
#include "sys/interrupt.hpp"

#include <signal.h>

#include <gtest/gtest.h>

namespace cmax::sys {
namespace {

TEST(InterruptDeathTest, ASecondCtrlCSaysWhatItLeavesAndEndsByTheSignal) {
  EXPECT_EXIT(
      {
        InstallInterruptHandlers();
        const LeftBehind lab("the namespace lab t1: ip link delete cxt1br");
        { const LeftBehind gone("a thing already taken down"); }
        ::raise(SIGINT);
        if (InterruptSignal() != SIGINT) ::_exit(3);  // the first only asks
        ::raise(SIGINT);
        ::_exit(4);  // not reached: the second ends the process
      },
      ::testing::KilledBySignal(SIGINT),
      "^cmax: stopping: taking down what it set up \\(Ctrl-C again stops at once and leaves "
      "it\\)\n"
      "cmax: stopped at once by a second Ctrl-C; left behind:\n"
      "  the namespace lab t1: ip link delete cxt1br\n$");
}

TEST(InterruptDeathTest, NothingLeftSaysNothing) {
  EXPECT_EXIT(
      {
        InstallInterruptHandlers();
        ::raise(SIGINT);
        ::raise(SIGINT);
        ::_exit(4);
      },
      ::testing::KilledBySignal(SIGINT), "^$");
}

TEST(InterruptDeathTest, AfterClearTheNextCtrlCIsAFirstOneAgain) {
  EXPECT_EXIT(
      {
        InstallInterruptHandlers();
        ::raise(SIGINT);
        ClearInterrupt();  // a command that handled it and goes on
        ::raise(SIGINT);
        ::_exit(InterruptSignal() == SIGINT ? 0 : 5);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace cmax::sys
