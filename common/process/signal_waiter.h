// SignalWaiter: SIGINT/SIGTERM as a file descriptor (signalfd), so an event loop polls for
// shutdown requests like for any other input — no global flag, no async-signal handler.
// With kWithReload, SIGHUP too, on a second descriptor (reload_fd): the coordinator re-reads its
// trusted keys on it. Without it SIGHUP keeps its default action.
// Construct it in main() before any thread starts (the signals are blocked for the process).
#pragma once

#include "common/status.h"

namespace keyflow {

class SignalWaiter {
 public:
  enum Reload : bool { kNoReload = false, kWithReload = true };
  explicit SignalWaiter(Reload reload = kNoReload);
  ~SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;

  // Readable when SIGINT or SIGTERM arrived.
  int fd() const { return fd_; }
  // Readable when SIGHUP arrived; -1 without kWithReload.
  int reload_fd() const { return reload_fd_; }
  // True (and consumes it) if SIGINT or SIGTERM arrived.
  bool Received();
  // True (and consumes them) if SIGHUP arrived since the last call.
  bool ReloadRequested();

 private:
  int fd_ = -1;
  int reload_fd_ = -1;
};

}  // namespace keyflow
