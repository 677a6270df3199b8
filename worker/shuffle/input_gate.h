// InputGate (Flink's name): the input of one keyed subtask from the shuffle. It owns one
// InputChannel per upstream source subtask (P channels; channel i receives only from source
// subtask i, on its own PULL socket bound to an ephemeral port), so that the subtask can tell
// channels apart (watermarks, barrier alignment) and stop reading one of them.
//
// Reading: PollNext() returns the next decoded frame of any unblocked, unfinished channel
// (round robin over channels, one frame at a time) without waiting. To wait, WaitForInput()
// blocks until some unblocked channel has input, OR an extra raw fd is readable (the task
// mailbox's eventfd), OR the timeout passes — so the task thread sleeps in exactly one place
// and still wakes for mail. Next() combines the two for simple loops and tests.
//
// Alignment: BlockChannel(i) stops delivery from channel i (its frames wait in ZeroMQ's bounded
// queue; the sender feels backpressure); UnblockAll() resumes every channel.
//
// Errors from PollNext (Corruption, Unavailable for lost frames, FailedPrecondition for a newer
// attempt) name the channel; they are counted per channel and the caller fails the task. Bytes
// that are not a keyflow frame (another program writing to the port, a damaged frame) are
// dropped and counted instead (InputChannelMetrics::dropped_frames, input_channel.h), and a
// frame above max_frame_bytes drops its connection inside ZeroMQ.
//
// Refused handshakes (secure gates): a client without CURVE never reaches the ZAP policy, so
// each channel socket's monitor is read on the task thread (in WaitForInput, which also wakes for
// it, and every kMonitorDrainInterval PollNext calls) and its failed handshakes are reported to
// InputGateOptions::authorizer (refused_data_connections, one log line per channel per minute).
//
// Threading: used only on the keyed task thread. The clock (for blocked time) is injectable.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/key_group_range.h"
#include "common/logging/log_rate_limiter.h"
#include "common/security/curve_keys.h"
#include "common/status.h"
#include "common/transport/zmq_context.h"
#include "common/types.h"
#include "worker/shuffle/channel_metrics.h"
#include "worker/shuffle/input_channel.h"
#include "worker/shuffle/record_batch_builder.h"

namespace keyflow {

class DataPlaneAuthorizer;

struct InputGateOptions {
  SubtaskIndex subtask;      // this keyed subtask
  int32_t num_channels = 1;  // P: number of upstream source subtasks
  AttemptNumber attempt;     // frames of older attempts are dropped
  // Each channel binds tcp://<bind_host>:* and advertises tcp://<advertised_host>:<port>.
  std::string bind_host = "0.0.0.0";
  std::string advertised_host = "127.0.0.1";
  // If set, every record must belong to this range (this subtask's key groups).
  std::optional<KeyGroupRange> key_groups;
  int receive_high_water_mark = 16;  // frames queued per channel inside ZeroMQ
  // ZMQ_MAXMSGSIZE of every channel: a peer announcing a larger frame is disconnected before
  // anything is buffered. Default: the largest frame a sender produces (record_batch_builder.h).
  int64_t max_frame_bytes = static_cast<int64_t>(kMaxDataFrameBytes);
  int kernel_receive_buffer_bytes = 0;  // 0: OS default
  // Secure data plane: with a secret key set, channel i is a CURVE server with this key pair and
  // the ZAP domain DataZapDomain(subtask, i) (data_plane_authorizer.h); the context must run a
  // ZapAuthenticator (Create fails with FailedPrecondition otherwise). Empty: plain TCP.
  CurveKeyPair curve_keys;
  // Secure gates only: where the channels' failed handshakes are counted and logged
  // (DataPlaneAuthorizer::CountRefusedHandshakes). Null: only refused_handshakes() counts them.
  // Not owned; must outlive the gate.
  DataPlaneAuthorizer* authorizer = nullptr;
  // Measures blocked time; null uses the system clock. Not owned; must outlive the gate.
  const Clock* clock = nullptr;
};

struct InputAvailability {
  bool input = false;     // some unblocked channel has a frame
  bool extra_fd = false;  // the extra fd is readable
};

class InputGate {
 public:
  // Binds the P channels. Errors: an unusable bind host (InvalidArgument), resources (IoError).
  static Result<std::unique_ptr<InputGate>> Create(ZmqContext& context,
                                                   const InputGateOptions& options);

  InputGate(const InputGate&) = delete;
  InputGate& operator=(const InputGate&) = delete;

  int32_t num_channels() const { return static_cast<int32_t>(channels_.size()); }
  // The endpoint source subtask `sender` must connect to.
  const std::string& endpoint(SubtaskIndex sender) const;
  std::vector<std::string> endpoints() const;

  // The next frame of an unblocked, unfinished channel, or nullopt if none is pending. The
  // returned records stay valid until the next PollNext/Next call.
  Result<std::optional<InputEvent>> PollNext();
  // Waits until input is pending on an unblocked, unfinished channel, `extra_fd` (if >= 0) is
  // readable, or `timeout` passes (both flags false). Consumes nothing.
  Result<InputAvailability> WaitForInput(Duration timeout, int extra_fd = -1);
  // PollNext, waiting up to `timeout` for input; nullopt when the timeout passes.
  Result<std::optional<InputEvent>> Next(Duration timeout);

  void BlockChannel(SubtaskIndex channel);
  void UnblockAll();
  bool IsBlocked(SubtaskIndex channel) const;
  // True once the channel delivered END_OF_INPUT (it is not read any more).
  bool IsFinished(SubtaskIndex channel) const;
  bool AllFinished() const;

  InputChannelMetrics metrics(SubtaskIndex channel) const;
  // dropped_frames over all channels.
  uint64_t dropped_frames() const;
  // Handshakes that failed on any channel before authentication (a plain-text client; always 0
  // on a gate without CURVE), as of the last monitor drain. Drains first.
  uint64_t refused_handshakes();

  // PollNext calls between two reads of the channels' monitors while input keeps coming.
  static constexpr uint32_t kMonitorDrainInterval = 256;

 private:
  explicit InputGate(const InputGateOptions& options);
  InputChannel& channel(SubtaskIndex c);
  const InputChannel& channel(SubtaskIndex c) const;
  Timestamp Now() const { return clock_->Now(); }
  // Reads every channel's monitor and reports new failed handshakes (secure gates only).
  void DrainRefusedHandshakes();

  SystemClock system_clock_;
  const Clock* clock_;
  LogRateLimiter frame_errors_;  // dropped-frame log lines of all channels
  std::vector<InputChannel> channels_;
  size_t next_channel_ = 0;  // round-robin cursor
  InputEvent event_;
  std::vector<zmq_pollitem_t> poll_items_;
  bool secure_ = false;
  DataPlaneAuthorizer* authorizer_ = nullptr;
  std::vector<std::string> zap_domains_;       // per channel (secure only)
  std::vector<uint64_t> reported_handshakes_;  // per channel: failures already reported
  uint64_t refused_handshakes_ = 0;
  uint32_t polls_since_drain_ = 0;
};

}  // namespace keyflow
