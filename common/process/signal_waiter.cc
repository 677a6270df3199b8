#include "common/process/signal_waiter.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

namespace keyflow {
namespace {

// Blocks `signals` for the process and returns a non-blocking signalfd for them.
int BlockedSignalFd(std::initializer_list<int> signals) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : signals) sigaddset(&mask, s);
  KF_CHECK(pthread_sigmask(SIG_BLOCK, &mask, nullptr) == 0);
  int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  KF_CHECK(fd >= 0) << "signalfd failed, errno " << errno;
  return fd;
}

bool Drain(int fd) {
  signalfd_siginfo info;
  bool got = false;
  while (::read(fd, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) got = true;
  return got;
}

}  // namespace

SignalWaiter::SignalWaiter(Reload reload) {
  fd_ = BlockedSignalFd({SIGINT, SIGTERM});
  if (reload == kWithReload) reload_fd_ = BlockedSignalFd({SIGHUP});
}

SignalWaiter::~SignalWaiter() {
  if (fd_ >= 0) ::close(fd_);
  if (reload_fd_ >= 0) ::close(reload_fd_);
}

bool SignalWaiter::Received() {
  return Drain(fd_);
}

bool SignalWaiter::ReloadRequested() {
  return reload_fd_ >= 0 && Drain(reload_fd_);
}

}  // namespace keyflow
