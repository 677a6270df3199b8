#include "worker/runtime/crash_handler.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>

#include "common/job_library/user_function_guard.h"

namespace keyflow {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

const char* SignalName(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
  }
  return "a signal";
}

// Appends to a fixed buffer, truncating; async-signal-safe.
struct Appender {
  char* buffer;
  size_t size;  // including room for the NUL
  size_t length = 0;
  void Add(const char* s) {
    while (*s != '\0' && length + 1 < size) buffer[length++] = *s++;
  }
  void Add(std::string_view s) {
    for (char c : s) {
      if (length + 1 >= size) break;
      buffer[length++] = c;
    }
  }
  void AddNumber(long v) {
    char digits[24];
    int n = 0;
    unsigned long u = v < 0 ? 0ul - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0 && n < 23);
    if (v < 0 && length + 1 < size) buffer[length++] = '-';
    while (n > 0 && length + 1 < size) buffer[length++] = digits[--n];
  }
  std::string_view Finish() {
    buffer[length] = '\0';
    return std::string_view(buffer, length);
  }
};

void WriteAll(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, data, n);
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void OnCrash(int signal) {
  // Restore the default action first: a crash inside this handler ends the process at once.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(signal, &dfl, nullptr);

  char cause[512];
  std::string_view text = FormatCrashCause(signal, CurrentUserCallNote(), cause, sizeof(cause));
  char line[640];
  Appender a{line, sizeof(line)};
  a.Add(kCrashLinePrefix);
  a.AddNumber(static_cast<long>(::getpid()));
  a.Add(" crashed: ");
  a.Add(text);
  a.Add("\n");
  std::string_view out = a.Finish();
  WriteAll(out.data(), out.size());
  // SIGSEGV/SIGBUS/SIGFPE/SIGILL: returning re-runs the faulting instruction, which now kills
  // the process; raise() covers SIGABRT and a signal sent with kill().
  ::raise(signal);
}

std::atomic<bool> g_installed{false};

constexpr size_t kAltStackBytes = 64 * 1024;

}  // namespace

ScopedAltSignalStack::ScopedAltSignalStack() : memory_(new char[kAltStackBytes]) {
  stack_t ss{};
  ss.ss_sp = memory_.get();
  ss.ss_size = kAltStackBytes;
  ss.ss_flags = 0;
  installed_ = ::sigaltstack(&ss, nullptr) == 0;
}

ScopedAltSignalStack::~ScopedAltSignalStack() {
  if (!installed_) return;
  stack_t ss{};
  ss.ss_flags = SS_DISABLE;
  ::sigaltstack(&ss, nullptr);
}

std::string_view FormatCrashCause(int signal, const char* note, char* buffer, size_t size) {
  Appender a{buffer, size};
  a.Add(SignalName(signal));
  if (note != nullptr) {
    a.Add(" while running ");
    a.Add(note);
  }
  return a.Finish();
}

void InstallCrashHandlers() {
  if (g_installed.exchange(true)) return;
  for (int signal : kSignals) {
    struct sigaction sa {};
    sa.sa_handler = OnCrash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
    ::sigaction(signal, &sa, nullptr);
  }
}

}  // namespace keyflow
