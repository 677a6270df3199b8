// AwaitConnectedPeers(): waits (bounded, never a sleep) for a socket's connection count, for the
// transport tests.
#pragma once

#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/transport/zmq_socket.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::testing {

// Waits up to 5 s until `socket` (created with track_connections) reports `n` connected
// peers, waking on its monitor's events. False on timeout.
inline bool AwaitConnectedPeers(ZmqSocket& socket, int n) {
  const int64_t deadline = MonotonicMillis() + 5000;
  while (socket.connected_peers() != n) {
    if (MonotonicMillis() >= deadline) return false;
    zmq_pollitem_t item{socket.monitor_handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_OK(PollItems({&item, 1}, Duration::Millis(100)));
  }
  return true;
}

}  // namespace keyflow::testing
