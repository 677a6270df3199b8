// ChildProcess: one real process started by an integration test (fork + exec), with its stdout
// and stderr appended to a log file. RAII: a process still running when its ChildProcess dies
// is SIGKILLed and reaped, so a failing test never leaks processes; the child also gets
// PR_SET_PDEATHSIG(SIGKILL), so it dies with the test binary even if that crashes.
// Waiting uses a pidfd (poll with a timeout), never a sleep.
//
// RunCommand: runs a command to completion with a deadline and captures its output.
//
// Used by cluster.h, network_namespaces.h and the tests in tests/integration/.
// Threading: a ChildProcess is used from one thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow::test {

class ChildProcess {
 public:
  // Starts argv[0] (a path, or a name looked up in PATH) with argv. stdout and stderr are
  // appended to `log_path` (created if missing), stderr to `stderr_path` instead if given; stdin
  // is /dev/null. Errors: a log cannot be opened, fork fails, or exec fails (reported by the
  // child through a pipe, so a missing binary is an error here, not an exit code later).
  static Result<ChildProcess> Start(const std::vector<std::string>& argv,
                                    const std::string& log_path,
                                    const std::string& stderr_path = "");

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // Kill() if still running

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // The command line, for messages ("keyflow-worker --slot 1 ...").
  std::string Describe() const;

  // True while the process has not exited (reaps it when it has).
  bool Running();
  // Sends `signal`; OK if the process already exited.
  Status Signal(int signal);
  // Waits up to `timeout` for the exit. Returns the exit code, or 128 + signal number for a
  // killed process (as a shell reports it); DeadlineExceeded if it is still running.
  Result<int> Wait(Duration timeout);
  // SIGKILL and reap (no-op once exited). Returns the exit status as Wait does.
  int Kill();

 private:
  ChildProcess() = default;
  void Reset();
  bool Reap(bool block);  // true once exited (exit_code_ set)

  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> exit_code_;
  std::vector<std::string> argv_;
  std::string log_path_;
};

struct CommandResult {
  int exit_code = -1;  // 128 + signal if killed
  std::string out;     // stdout
  std::string err;     // stderr
};

// Runs `argv` to completion. DeadlineExceeded (after SIGKILL) if it does not end in `timeout`.
Result<CommandResult> RunCommand(const std::vector<std::string>& argv, Duration timeout);

// Polls `condition` every `period` until it is true (OK) or `timeout` passes
// (DeadlineExceeded naming `what`). For conditions only another process can make true (a log
// line, a status field); the period is a polling interval, not a synchronisation sleep.
template <typename Condition>
Status WaitUntil(Condition condition, Duration timeout, const std::string& what,
                 Duration period = Duration::Millis(50));

// The whole content of a file ("" if it cannot be read).
std::string ReadFileOrEmpty(const std::string& path);
// The last `lines` lines of a file, for failure messages.
std::string Tail(const std::string& path, int lines = 20);
// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
Result<int> PickUnusedPort();

// ---- implementation ------------------------------------------------------------------------

void SleepForPolling(Duration period);  // the polling interval of WaitUntil

template <typename Condition>
Status WaitUntil(Condition condition, Duration timeout, const std::string& what, Duration period) {
  int64_t deadline = MonotonicMillis() + timeout.millis();
  while (true) {
    if (condition()) return Status::Ok();
    if (MonotonicMillis() >= deadline) {
      return DeadlineExceeded("timed out after " + std::to_string(timeout.millis()) +
                              " ms waiting for " + what);
    }
    SleepForPolling(period);
  }
}

}  // namespace keyflow::test
