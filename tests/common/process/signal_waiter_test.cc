// SignalWaiter: SIGINT/SIGTERM on fd(), SIGHUP on reload_fd() only when asked for.
#include "common/process/signal_waiter.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

namespace keyflow {
namespace {

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 1000) == 1;
}

TEST(SignalWaiterTest, SighupIsAReloadRequestAndDoesNotStop) {
  SignalWaiter signals(SignalWaiter::kWithReload);
  ASSERT_GE(signals.reload_fd(), 0);
  EXPECT_FALSE(signals.ReloadRequested());
  ASSERT_EQ(::raise(SIGHUP), 0);
  EXPECT_TRUE(Readable(signals.reload_fd()));
  EXPECT_TRUE(signals.ReloadRequested());
  EXPECT_FALSE(signals.ReloadRequested());  // consumed
  EXPECT_FALSE(signals.Received());
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_TRUE(Readable(signals.fd()));
  EXPECT_TRUE(signals.Received());
  EXPECT_FALSE(signals.ReloadRequested());
}

TEST(SignalWaiterTest, WithoutReloadThereIsNoReloadFd) {
  SignalWaiter signals;
  EXPECT_EQ(signals.reload_fd(), -1);
  EXPECT_FALSE(signals.ReloadRequested());
}

}  // namespace
}  // namespace keyflow
