#include "worker/shuffle/record_writer.h"

#include <algorithm>
#include <utility>

#include "common/clock.h"
#include "common/key_group_assignment.h"

namespace keyflow {

Result<std::unique_ptr<RecordWriter>> RecordWriter::Create(ZmqContext& context,
                                                           RecordWriterOptions options) {
  const auto parallelism = static_cast<int64_t>(options.receiver_endpoints.size());
  KF_RETURN_IF_ERROR_CTX(
      ValidateParallelism(parallelism, options.max_parallelism),
      "record writer of source subtask " + std::to_string(options.subtask.value()));
  if (options.batch_size_bytes < kFrameHeaderSize + kMinEncodedRecordBytes) {
    return InvalidArgument("batch size " + std::to_string(options.batch_size_bytes) +
                           " bytes is too small for even one record");
  }
  if (options.batch_size_bytes > kMaxBatchSizeBytes) {
    return InvalidArgument("batch size " + std::to_string(options.batch_size_bytes) +
                           " bytes is above the data plane's limit of " +
                           std::to_string(kMaxBatchSizeBytes) + " bytes: choose a smaller one");
  }
  if (options.batch_timeout.millis() < 0 || options.send_timeout.millis() <= 0) {
    return InvalidArgument("batch timeout must be >= 0 and send timeout > 0");
  }
  const bool secure = !options.curve_keys.secret_key.empty();
  if (secure && options.receiver_public_keys.size() != options.receiver_endpoints.size()) {
    return InvalidArgument("record writer of source subtask " +
                           std::to_string(options.subtask.value()) + " has " +
                           std::to_string(options.receiver_endpoints.size()) + " receivers but " +
                           std::to_string(options.receiver_public_keys.size()) +
                           " receiver public keys: the deployment must name every peer's key");
  }
  std::unique_ptr<RecordWriter> writer(new RecordWriter(options));
  SocketOptions socket_options;
  socket_options.io_thread_affinity = context.data_plane_affinity();
  socket_options.send_high_water_mark = options.send_high_water_mark;
  socket_options.kernel_send_buffer_bytes = options.kernel_send_buffer_bytes;
  socket_options.immediate = true;
  socket_options.tcp_keepalive_idle = options.tcp_keepalive_idle;
  socket_options.track_connections = true;
  OutputChannelOptions channel_options;
  channel_options.batch_size_bytes = options.batch_size_bytes;
  channel_options.batch_timeout = options.batch_timeout;
  channel_options.send.cancelled = options.cancelled;
  writer->channels_.reserve(options.receiver_endpoints.size());
  for (size_t j = 0; j < options.receiver_endpoints.size(); ++j) {
    if (secure) {
      socket_options.curve =
          CurveOptions::Client(options.curve_keys, options.receiver_public_keys[j]);
    }
    KF_ASSIGN_OR_RETURN(ZmqSocket socket,
                        ZmqSocket::Create(context, SocketType::kPush, socket_options));
    KF_RETURN_IF_ERROR_CTX(socket.Connect(options.receiver_endpoints[j]),
                           "keyed subtask " + std::to_string(j));
    writer->channels_.emplace_back(std::move(socket), options.subtask,
                                   SubtaskIndex(static_cast<int32_t>(j)), options.attempt,
                                   channel_options);
  }
  return writer;
}

Status RecordWriter::AwaitConnections(Duration timeout) {
  KF_RETURN_IF_ERROR(failure_);
  const int64_t deadline = MonotonicMillis() + std::max<int64_t>(0, timeout.millis());
  std::vector<zmq_pollitem_t> items;
  for (;;) {
    std::string missing;
    items.clear();
    for (OutputChannel& channel : channels_) {
      if (channel.connected()) continue;
      missing += (missing.empty() ? "" : ", ") + channel.description();
      items.push_back(zmq_pollitem_t{channel.connection_events_handle(), 0, ZMQ_POLLIN, 0});
    }
    if (missing.empty()) return Status::Ok();
    if (options_.cancelled != nullptr && options_.cancelled->load(std::memory_order_acquire)) {
      return Aborted("waiting for receivers cancelled");
    }
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) {
      return Unavailable("not connected after " + std::to_string(timeout.millis()) + " ms: " +
                         missing + " (is the keyed subtask up and its address reachable?)");
    }
    // Wake on a connection event, or every 50 ms to look at the cancellation flag.
    KF_ASSIGN_OR_RETURN(int ready, PollItems(items, Duration::Millis(std::min<int64_t>(left, 50))));
    (void)ready;
  }
}

int64_t RecordWriter::Deadline() const {
  return MonotonicMillis() + options_.send_timeout.millis();
}

Status RecordWriter::Track(Status s) {
  if (!s.ok() && s.code() != StatusCode::kDeadlineExceeded) failure_ = s;
  return s;
}

Status RecordWriter::Emit(const Record& record, Timestamp now) {
  KF_RETURN_IF_ERROR(failure_);
  KF_CHECK(!closed_) << "Emit after Close";
  KF_CHECK(record.key_group.value() >= 0 && record.key_group.value() < options_.max_parallelism)
      << "key group " << record.key_group << " outside [0, " << options_.max_parallelism << ")";
  SubtaskIndex target =
      ComputeOperatorIndexForKeyGroup(options_.max_parallelism, num_channels(), record.key_group);
  OutputChannel& channel = channels_[static_cast<size_t>(target.value())];
  if (size_t bytes = record.key.size() + record.payload.size() + record.fields.size();
      bytes > kMaxRecordBytes) {
    // Receivers drop the connection of a larger frame (ZMQ_MAXMSGSIZE): refuse it here, clearly.
    return InvalidArgument("a record of key group " + std::to_string(record.key_group.value()) +
                           " has " + std::to_string(bytes) +
                           " bytes of key, payload and fields, above the data plane's limit of " +
                           std::to_string(kMaxRecordBytes) +
                           " bytes per record: split such input records");
  }
  if (channel.queued_frames() > 0) KF_RETURN_IF_ERROR(Track(channel.Push(Deadline())));
  return Track(channel.Append(record, now));
}

Status RecordWriter::BroadcastEvent(const ChannelEvent& event) {
  KF_RETURN_IF_ERROR(failure_);
  KF_CHECK(!closed_) << "BroadcastEvent after Close";
  int64_t deadline = Deadline();
  for (OutputChannel& channel : channels_) {
    if (channel.queued_frames() > 0) KF_RETURN_IF_ERROR(Track(channel.Push(deadline)));
  }
  // Every queue is empty now: the event is accepted on all channels or on none.
  for (OutputChannel& channel : channels_) channel.QueueEvent(event);
  for (OutputChannel& channel : channels_) KF_RETURN_IF_ERROR(Track(channel.TryPush()));
  return Status::Ok();
}

Status RecordWriter::AddLatencyMarker(int64_t marked_time_us, Timestamp now) {
  KF_RETURN_IF_ERROR(failure_);
  KF_CHECK(!closed_) << "AddLatencyMarker after Close";
  for (OutputChannel& channel : channels_) channel.AddLatencyMarker(marked_time_us, now);
  return Status::Ok();
}

Status RecordWriter::FlushIfDue(Timestamp now) {
  KF_RETURN_IF_ERROR(failure_);
  KF_CHECK(!closed_) << "FlushIfDue after Close";
  int64_t deadline = Deadline();
  for (OutputChannel& channel : channels_) {
    if (channel.queued_frames() > 0) KF_RETURN_IF_ERROR(Track(channel.Push(deadline)));
  }
  for (OutputChannel& channel : channels_) {
    if (channel.BatchDue(now)) {
      channel.SealBatch();
      KF_RETURN_IF_ERROR(Track(channel.TryPush()));
    }
  }
  return Status::Ok();
}

Status RecordWriter::Flush() {
  KF_RETURN_IF_ERROR(failure_);
  KF_CHECK(!closed_) << "Flush after Close";
  int64_t deadline = Deadline();
  for (OutputChannel& channel : channels_) {
    KF_RETURN_IF_ERROR(Track(channel.Push(deadline)));
    channel.SealBatch();
    KF_RETURN_IF_ERROR(Track(channel.Push(deadline)));
  }
  return Status::Ok();
}

Status RecordWriter::Close() {
  if (closed_) return failure_;
  Status flushed = Flush();
  Duration linger = flushed.ok() ? options_.send_timeout : Duration::Millis(0);
  for (OutputChannel& channel : channels_) channel.Close(linger);
  closed_ = true;
  return flushed;
}

Timestamp RecordWriter::NextFlushDeadline() const {
  Timestamp next = kMaxWatermark;
  for (const OutputChannel& channel : channels_) {
    if (channel.queued_frames() > 0) return kMinWatermark;
    next = std::min(next, channel.batch_deadline());
  }
  return next;
}

bool RecordWriter::backpressured() const {
  return std::any_of(channels_.begin(), channels_.end(),
                     [](const OutputChannel& c) { return c.queued_frames() > 0; });
}

const OutputChannelMetrics& RecordWriter::metrics(SubtaskIndex receiver) const {
  KF_CHECK(receiver.value() >= 0 && receiver.value() < num_channels());
  return channels_[static_cast<size_t>(receiver.value())].metrics();
}

}  // namespace keyflow
