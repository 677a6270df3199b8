// OutputChannel: the sending end of one data channel (source subtask i -> keyed subtask j):
// a PUSH socket, the record batch being built and a tiny queue of sealed frames.
//
// Owned by RecordWriter; used only on the source task thread. Order is preserved: records are
// batched, a batch is sealed (at the size bound, the time bound, or before an event) into the
// queue, event frames queue behind it, and the queue drains front to back. At most three frames
// are queued (a sealed batch, the latency marker that rode it, and an event) because the writer
// pushes the queue empty before it accepts new work for the channel; with the socket's
// high-water marks that bounds memory.
//
// Latency markers travel like a record of the batch (worker/README.md, "Latency"): a marker
// joins the pending batch (or starts its time bound when there is none) and leaves as its own
// frame right behind it when the batch is sealed, so it waits exactly as long as a record
// appended at the same moment. Records appended after it in the same batch go before it (the
// marker then also covers their processing: a small overestimate, never an underestimate).
//
// Backpressure: the socket queue holds `send_high_water_mark` frames; when it is full the
// receiver is slow (or gone) and Push waits, up to a deadline, in a poll loop that also watches
// the cancellation flag.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/record.h"
#include "common/status.h"
#include "common/transport/zmq_socket.h"
#include "common/types.h"
#include "worker/shuffle/channel_metrics.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/record_batch_builder.h"

namespace keyflow {

struct OutputChannelOptions {
  size_t batch_size_bytes = 32 * 1024;           // seal when the frame reaches this size
  Duration batch_timeout = Duration::Millis(5);  // seal when the first record is this old
  SendOptions send;                              // cancellation and poll slice for Push
};

class OutputChannel {
 public:
  // `socket` is a PUSH socket already connected to the receiver.
  OutputChannel(ZmqSocket socket, SubtaskIndex sender, SubtaskIndex receiver, AttemptNumber attempt,
                const OutputChannelOptions& options);

  // Appends a record stamped with the caller's `now` (starts the time bound of a new batch).
  // When the batch reaches its size bound it is sealed and pushed without blocking (it stays
  // queued if the receiver is busy). Precondition: queued_frames() == 0.
  // Errors: only hard socket errors (the record was appended regardless).
  Status Append(const Record& record, Timestamp now);

  // Lets a latency marker made at `marked_time_us` ride the pending batch (see above); `now`
  // starts the time bound if nothing is pending. At most one marker waits per channel: false
  // (nothing changed) if one is waiting already. Never blocks, never fails.
  bool AddLatencyMarker(int64_t marked_time_us, Timestamp now);

  // Seals the pending batch, if any, into the queue, and the waiting latency marker behind it.
  // Precondition: queued_frames() <= 1.
  void SealBatch();
  // Seals the pending batch, then queues `event` behind it. Precondition: queued_frames() == 0.
  void QueueEvent(const ChannelEvent& event);

  // Hands queued frames to the socket without waiting; OK even if some stay queued.
  Status TryPush();
  // Hands queued frames to the socket, waiting until `deadline_ms` (MonotonicMillis) for the
  // receiver: DeadlineExceeded (receiver slow), Unavailable (receiver gone), Aborted (cancelled).
  // Frames not handed over stay queued, in order, for the next push.
  Status Push(int64_t deadline_ms);

  // True while the socket has a connection to the receiver.
  bool connected() { return socket_.connected_peers() > 0; }
  // Readable when the connection state may have changed (for zmq_poll).
  void* connection_events_handle() { return socket_.monitor_handle(); }

  bool BatchDue(Timestamp now) const;
  // When the pending batch is due (its first record's or marker's time + batch_timeout);
  // kMaxWatermark if there is no pending batch and no waiting marker.
  Timestamp batch_deadline() const;
  size_t queued_frames() const { return queued_; }
  bool has_pending_batch() const { return !builder_.empty(); }
  bool has_pending_marker() const { return pending_marker_; }

  const OutputChannelMetrics& metrics() const { return metrics_; }
  // "channel from source subtask 0 to keyed subtask 1 (tcp://10.0.0.2:41873)".
  const std::string& description() const { return description_; }
  SubtaskIndex receiver() const { return receiver_; }

  // Closes the socket; `linger` is how long ZeroMQ may still deliver handed-over frames.
  void Close(Duration linger);

 private:
  struct QueuedFrame {
    std::string bytes;
    uint32_t records = 0;
  };
  QueuedFrame& EnqueueSlot();
  Status SendFront(bool wait, int64_t deadline_ms, bool* sent);

  ZmqSocket socket_;
  SubtaskIndex sender_;
  SubtaskIndex receiver_;
  AttemptNumber attempt_;
  OutputChannelOptions options_;
  std::string description_;

  RecordBatchBuilder builder_;
  Timestamp batch_started_;  // of the pending batch or marker
  bool pending_marker_ = false;
  int64_t pending_marker_us_ = 0;
  uint64_t next_sequence_ = 0;
  std::array<QueuedFrame, 3> queue_;  // ring: front at head_
  size_t head_ = 0;
  size_t queued_ = 0;
  OutputChannelMetrics metrics_;
};

}  // namespace keyflow
