// Ctrl-C and SIGTERM: the first one asks every long operation to stop and close its run as
// interrupted; a second SIGINT ends the process at once, saying first on stderr what it leaves
// behind (LeftBehind) and how to remove it.
#pragma once

#include <string>

namespace cmax::sys {

void InstallInterruptHandlers();
// The signal that asked us to stop, or 0.
int InterruptSignal();
inline bool Interrupted() {
  return InterruptSignal() != 0;
}
// For tests, and for a command that handled the interruption and wants to go on.
void ClearInterrupt();
void RequestInterrupt(int signal_number);

// While one lives, what a second Ctrl-C would leave behind, and how to remove it by hand: "a
// namespace lab (cmax-ab12-h1 ...): ip netns delete ...". Said on stderr as the process ends at
// once; the first Ctrl-C's orderly stop removes it itself. Several may live at once.
class LeftBehind {
 public:
  explicit LeftBehind(std::string what);
  ~LeftBehind();
  LeftBehind(const LeftBehind&) = delete;
  LeftBehind& operator=(const LeftBehind&) = delete;

 private:
  int id_;
};

// A deadline for a process whose caller must hear from it even when it hangs (a node's part of
// an audit, stuck on a file that never answers): when `seconds` have passed, `last_words` goes
// to stdout and the process ends with `exit_code`, from a SIGALRM handler that does only those
// two async-signal-safe things. One deadline per process; a later call replaces it.
void ExitAtDeadline(double seconds, const std::string& last_words, int exit_code);
// Disarms it: the work finished in time and is about to speak for itself.
void CancelDeadline();

}  // namespace cmax::sys
