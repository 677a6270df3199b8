// Per-channel counters of the data plane, for status and backpressure reporting
// (`keyflow status`). Plain values owned by the OutputChannel / InputChannel they describe and
// read on the task thread that owns that channel.
#pragma once

#include <cstdint>

namespace keyflow {

struct OutputChannelMetrics {
  uint64_t records = 0;  // records handed to the socket
  uint64_t frames = 0;   // frames handed to the socket (record batches and events)
  uint64_t bytes = 0;    // frame bytes handed to the socket, headers included
  // Time spent waiting for the receiver to accept a frame: the backpressure this channel felt.
  int64_t backpressured_millis = 0;
  uint64_t send_timeouts = 0;  // sends that gave up (DeadlineExceeded or Unavailable)
};

struct InputChannelMetrics {
  uint64_t records = 0;        // records delivered
  uint64_t frames = 0;         // valid frames delivered (record batches and events)
  uint64_t bytes = 0;          // bytes of those frames, headers included
  uint64_t decode_errors = 0;  // frames rejected (corrupt, wrong sender, lost or duplicate)
  uint64_t stale_frames = 0;   // frames of an older attempt, dropped
  // Frames that failed the frame format check (not from a keyflow sender, or damaged), dropped.
  uint64_t dropped_frames = 0;
  int64_t blocked_millis = 0;  // time the channel was blocked for barrier alignment
};

}  // namespace keyflow
