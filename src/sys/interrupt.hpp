// Ctrl-C and SIGTERM: the first one asks every long operation to stop and close its run as
// interrupted; a second SIGINT ends the process at once (the default action is restored).
#pragma once

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

}  // namespace cmax::sys
