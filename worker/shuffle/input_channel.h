// InputChannel: the receiving end of one data channel (source subtask i -> this keyed subtask):
// a bound PULL socket, frame validation and per-channel state (next sequence number, blocked
// for alignment, finished) and counters.
//
// Owned by InputGate; used only on the keyed task thread. Validation per frame, in order:
// frame format (data_frame.h): a frame that fails it (bad magic, version, reserved bytes, length
// or checksum: not a frame of a keyflow sender, or damaged) is dropped and counted
// (dropped_frames, a rate-limited log line) without touching the job — if it was a real
// sender's frame, the next good frame shows the gap in the sequence numbers and fails as
// below; frames of an older attempt are dropped and counted (stale deployment); a newer attempt
// means this subtask is behind (FailedPrecondition); the sender index must be this channel's; the
// sequence number must be the next one (a gap means frames were lost with a broken connection:
// Unavailable, restart from a checkpoint); nothing may follow END_OF_INPUT; record key groups must
// lie in this subtask's range.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/key_group_range.h"
#include "common/logging/log_rate_limiter.h"
#include "common/status.h"
#include "common/transport/zmq_socket.h"
#include "common/types.h"
#include "worker/shuffle/channel_metrics.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/record_batch_builder.h"

namespace keyflow {

// One decoded frame, tagged with the channel (= upstream source subtask index) it came on.
struct InputEvent {
  SubtaskIndex channel;
  FrameKind kind = FrameKind::kRecords;
  // kRecords: the batch, in the order the sender emitted it. The views stay valid until the
  // next PollNext/Next call on the gate.
  std::span<const RecordView> records;
  // The event of every other kind. event.kind == kind always; for kRecords nothing else is set.
  ChannelEvent event;
};

class InputChannel {
 public:
  // `socket`: a PULL socket already bound; `endpoint`: the address senders connect to.
  // `frame_errors` (not owned, outlives the channel) limits the log lines of dropped frames.
  InputChannel(ZmqSocket socket, std::string endpoint, SubtaskIndex receiver, SubtaskIndex sender,
               AttemptNumber attempt, std::optional<KeyGroupRange> key_groups,
               LogRateLimiter* frame_errors);

  // Receives frames until one is valid and current (dropping malformed and stale ones) and
  // decodes it into *event. false: nothing pending, or kMaxDropsPerReceive frames dropped in a
  // row (so a peer sending junk cannot hold the task thread; call again). Errors name this
  // channel and count as decode errors.
  Result<bool> ReceiveNext(InputEvent* event);
  static constexpr int kMaxDropsPerReceive = 64;

  void Block(Timestamp now);
  void Unblock(Timestamp now);
  bool blocked() const { return blocked_; }
  bool finished() const { return finished_; }

  // Counters; blocked_millis includes a block still in progress at `now`.
  InputChannelMetrics metrics(Timestamp now) const;
  uint64_t dropped_frames() const { return metrics_.dropped_frames; }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& description() const { return description_; }
  void* socket_handle() { return socket_.handle(); }
  ZmqSocket& socket() { return socket_; }

 private:
  Status Reject(Status s) {
    ++metrics_.decode_errors;
    return s;
  }
  Status CheckKeyGroups() const;

  ZmqSocket socket_;
  std::string endpoint_;
  SubtaskIndex receiver_;
  SubtaskIndex sender_;
  AttemptNumber attempt_;
  std::optional<KeyGroupRange> key_groups_;
  LogRateLimiter* frame_errors_;
  std::string description_;

  zmq::message_t message_;           // the frame the current event points into
  std::vector<RecordView> records_;  // decoded views of message_, reused
  uint64_t next_sequence_ = 0;
  bool blocked_ = false;
  bool finished_ = false;
  Timestamp blocked_since_;
  InputChannelMetrics metrics_;
};

}  // namespace keyflow
