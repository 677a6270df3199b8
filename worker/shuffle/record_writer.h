// RecordWriter (Flink's name): the output of one source subtask into the shuffle. It owns one
// OutputChannel per keyed subtask (P channels), routes each record to the owner of its key
// group (ComputeOperatorIndexForKeyGroup(M, P, key group)) and broadcasts in-band events
// (watermarks, watermark status, barriers, cancel markers, end of input) to every channel,
// each after the channel's pending batch so per-channel order is preserved. Latency markers
// are broadcast too, but ride the pending batches instead of sealing them (AddLatencyMarker).
//
// Contract of every call: "accepted or not". OK means the record/event was accepted: it will go
// out in order (it may still sit in a bounded queue while the receiver is busy; the next call
// or Flush pushes it). An error means nothing was accepted:
//   DeadlineExceeded — a receiver accepted nothing for send_timeout (backpressure); retry later.
//   Unavailable      — no connected receiver at the deadline (it went away): fail the task.
//   Aborted          — the cancellation flag was raised.
// Every error other than DeadlineExceeded is sticky: the writer is failed and returns it again.
//
// Time: no threads and no clock inside. The caller passes `now` (any clock; tests use a fake
// one) to Emit and FlushIfDue; a batch is sealed when it reaches batch_size_bytes or when
// `now` passes its first record's time + batch_timeout. NextFlushDeadline says when to call
// FlushIfDue next.
//
// Threading: used only on the source task thread. Waiting on a slow receiver happens inside
// Emit / BroadcastEvent / FlushIfDue / Flush, for at most send_timeout per call.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/record.h"
#include "common/security/curve_keys.h"
#include "common/status.h"
#include "common/transport/zmq_context.h"
#include "common/types.h"
#include "worker/shuffle/channel_metrics.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/output_channel.h"

namespace keyflow {

struct RecordWriterOptions {
  SubtaskIndex subtask;   // this source subtask: the sender index in every frame
  AttemptNumber attempt;  // the job's current deployment attempt
  int32_t max_parallelism = 128;
  // receiver_endpoints[j]: the endpoint keyed subtask j advertised for this source subtask
  // (InputGate::endpoint). Its size is the parallelism P of the keyed operator.
  std::vector<std::string> receiver_endpoints;
  // Secure data plane: with a secret key set, every channel is a CURVE client with this key pair
  // pinning receiver_public_keys[j] (the public key of the worker running keyed subtask j; same
  // size as receiver_endpoints). Empty: plain TCP.
  CurveKeyPair curve_keys;
  std::vector<std::string> receiver_public_keys;

  size_t batch_size_bytes = 32 * 1024;
  Duration batch_timeout = Duration::Millis(5);
  Duration send_timeout = Duration::Seconds(10);
  // Raised by another thread to cancel the task; waits notice it within ~50 ms.
  const std::atomic<bool>* cancelled = nullptr;

  int send_high_water_mark = 16;     // frames queued per channel inside ZeroMQ
  int kernel_send_buffer_bytes = 0;  // 0: OS default
  // TCP keepalive on idle channels: a receiver whose host vanished is noticed (its connection
  // is reset, then sends fail Unavailable). Deliberately no ZMTP heartbeats and no TCP
  // retransmission timeout: both also cut a healthy channel whose receiver merely stopped
  // reading (backpressure, barrier alignment) for longer than their timeout, dropping the frames
  // queued on it. A dead host behind a stalled channel is found by the control plane's
  // heartbeats, which cancel the task; `cancelled` then ends the wait.
  Duration tcp_keepalive_idle = Duration::Seconds(10);
};

class RecordWriter {
 public:
  // Validates the options and connects one PUSH socket per receiver (connections complete in
  // the background; a receiver that is not up yet only delays the first send).
  static Result<std::unique_ptr<RecordWriter>> Create(ZmqContext& context,
                                                      RecordWriterOptions options);

  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Waits until every receiver is connected: Unavailable naming the missing ones after
  // `timeout`, Aborted if cancelled. Optional (sends wait for connections anyway); lets a task
  // fail fast at deployment instead of on its first full batch.
  Status AwaitConnections(Duration timeout);

  // Routes `record` by its key group. Precondition: 0 <= key_group < max_parallelism.
  Status Emit(const Record& record, Timestamp now);
  // Sends `event` on every channel, after each channel's pending records.
  Status BroadcastEvent(const ChannelEvent& event);
  // Lets a latency marker made at `marked_time_us` (epoch microseconds) ride every channel's
  // pending batch (OutputChannel::AddLatencyMarker): it goes out with that batch, at its size or
  // time bound, so it never waits for a receiver here. Channels with a marker still waiting skip
  // this one. Errors: only the writer's sticky failure.
  Status AddLatencyMarker(int64_t marked_time_us, Timestamp now);
  // Seals and sends the batches whose time bound has passed at `now`, and pushes frames still
  // queued from earlier calls (waiting up to send_timeout for them).
  Status FlushIfDue(Timestamp now);
  // Seals and sends everything pending; OK once every frame is handed to ZeroMQ.
  Status Flush();
  // Flush, then close the sockets, letting ZeroMQ deliver handed-over frames for up to
  // send_timeout (never longer). The writer is unusable afterwards. Destroying a writer
  // without Close drops undelivered frames immediately (cancellation path).
  Status Close();

  // The earliest `now` at which FlushIfDue has work: kMinWatermark if frames are waiting for a
  // busy receiver, kMaxWatermark if nothing is pending.
  Timestamp NextFlushDeadline() const;
  // True if some channel holds frames its receiver has not accepted yet.
  bool backpressured() const;

  int32_t num_channels() const { return static_cast<int32_t>(channels_.size()); }
  const OutputChannelMetrics& metrics(SubtaskIndex receiver) const;

 private:
  explicit RecordWriter(RecordWriterOptions options) : options_(std::move(options)) {}
  int64_t Deadline() const;
  Status Track(Status s);  // records sticky failures

  RecordWriterOptions options_;
  std::vector<OutputChannel> channels_;
  Status failure_;
  bool closed_ = false;
};

}  // namespace keyflow
