// Crash handlers of the worker process: when user code (or anything else) crashes the worker
// with SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT, the handler writes one line to stderr (the
// worker's log under scripts/start-cluster.sh), naming the signal and the user call that was
// running on the crashing thread (common/job_library/user_function_guard.h):
//
//   keyflow-worker pid 123 crashed: SIGSEGV while running ProcessElement of job 'crashy'
//   (libcrashy.so)
//
// then re-raises the signal with its default action, so the process still dies of it (core
// dump, exit status 128 + signal). The supervisor (scripts/lib/worker-supervisor.sh) finds the
// line of the pid that died in the log and passes "died of SIGSEGV while running ..." as
// --previous-exit to the restarted worker; the coordinator shows it as the failure cause.
//
// The handler is async-signal-safe: it formats into a stack buffer and calls only write(2),
// getpid(2), sigaction(2) and raise(3). It runs on an alternate signal stack on threads that
// have one (ScopedAltSignalStack: the keyed task thread), so a stack overflow in user code
// (infinite recursion) is named too.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace keyflow {

// Installs the handlers (idempotent). Call early in main, before threads start.
void InstallCrashHandlers();

// The text the handler writes after "crashed: " for `signal` and `note` (nullptr: no user
// call running), e.g. "SIGSEGV while running ProcessElement of job 'j'". For tests; writes at
// most `size` - 1 chars and a NUL into `buffer`. Async-signal-safe.
std::string_view FormatCrashCause(int signal, const char* note, char* buffer, size_t size);

// Gives the calling thread an alternate signal stack for its lifetime in scope (restores the
// previous one). Without one, a crash by stack overflow cannot run the handler.
class ScopedAltSignalStack {
 public:
  ScopedAltSignalStack();
  ~ScopedAltSignalStack();
  ScopedAltSignalStack(const ScopedAltSignalStack&) = delete;
  ScopedAltSignalStack& operator=(const ScopedAltSignalStack&) = delete;

 private:
  std::unique_ptr<char[]> memory_;
  bool installed_ = false;
};

// The marker before the pid in the crash line: "keyflow-worker pid ".
inline constexpr std::string_view kCrashLinePrefix = "keyflow-worker pid ";

}  // namespace keyflow
