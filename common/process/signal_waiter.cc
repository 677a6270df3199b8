#include "common/process/signal_waiter.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

namespace keyflow {

SignalWaiter::SignalWaiter() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  CHECK(pthread_sigmask(SIG_BLOCK, &mask, nullptr) == 0);
  fd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  CHECK(fd_ >= 0) << "signalfd failed, errno " << errno;
}

SignalWaiter::~SignalWaiter() {
  if (fd_ >= 0) ::close(fd_);
}

bool SignalWaiter::Received() {
  signalfd_siginfo info;
  bool got = false;
  while (::read(fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) got = true;
  return got;
}

}  // namespace keyflow
