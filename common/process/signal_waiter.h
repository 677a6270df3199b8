// SignalWaiter: SIGINT/SIGTERM as a file descriptor (signalfd), so an event loop polls for
// shutdown requests like for any other input — no global flag, no async-signal handler.
// Construct it in main() before any thread starts (the signals are blocked for the process).
#pragma once

#include "common/status.h"

namespace keyflow {

class SignalWaiter {
 public:
  SignalWaiter();
  ~SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;

  int fd() const { return fd_; }
  // True (and consumes it) if SIGINT or SIGTERM arrived.
  bool Received();

 private:
  int fd_ = -1;
};

}  // namespace keyflow
