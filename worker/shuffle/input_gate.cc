#include "worker/shuffle/input_gate.h"

#include <algorithm>
#include <utility>

#include "common/transport/endpoint.h"
#include "worker/shuffle/data_plane_authorizer.h"

namespace keyflow {

InputGate::InputGate(const InputGateOptions& options)
    : clock_(options.clock != nullptr ? options.clock : &system_clock_),
      frame_errors_(LogRateLimiterOptions{.clock = clock_}) {}

Result<std::unique_ptr<InputGate>> InputGate::Create(ZmqContext& context,
                                                     const InputGateOptions& options) {
  if (options.num_channels <= 0) {
    return InvalidArgument("an input gate needs at least one channel, got " +
                           std::to_string(options.num_channels));
  }
  std::unique_ptr<InputGate> gate(new InputGate(options));
  SocketOptions socket_options;
  socket_options.io_thread_affinity = context.data_plane_affinity();
  socket_options.receive_high_water_mark = options.receive_high_water_mark;
  socket_options.kernel_receive_buffer_bytes = options.kernel_receive_buffer_bytes;
  socket_options.max_message_bytes = options.max_frame_bytes;
  gate->secure_ = !options.curve_keys.secret_key.empty();
  gate->authorizer_ = options.authorizer;
  // A plain-text client fails its handshake before ZAP: only the monitor sees it.
  socket_options.track_connections = gate->secure_;
  gate->channels_.reserve(static_cast<size_t>(options.num_channels));
  for (int32_t i = 0; i < options.num_channels; ++i) {
    std::string what = "input channel " + std::to_string(i) + " of keyed subtask " +
                       std::to_string(options.subtask.value());
    if (gate->secure_) {
      gate->zap_domains_.push_back(DataZapDomain(options.subtask, SubtaskIndex(i)));
      socket_options.curve = CurveOptions::Server(options.curve_keys, gate->zap_domains_.back());
    }
    KF_ASSIGN_OR_RETURN(ZmqSocket socket,
                        ZmqSocket::Create(context, SocketType::kPull, socket_options));
    auto bound = socket.BindEphemeral(options.bind_host);
    if (!bound.ok()) return bound.status().WithContext(what);
    auto advertised = AdvertisedEndpoint(*bound, options.advertised_host);
    if (!advertised.ok()) return advertised.status().WithContext(what);
    gate->channels_.emplace_back(std::move(socket), *advertised, options.subtask, SubtaskIndex(i),
                                 options.attempt, options.key_groups, &gate->frame_errors_);
  }
  gate->reported_handshakes_.assign(gate->channels_.size(), 0);
  return gate;
}

InputChannel& InputGate::channel(SubtaskIndex c) {
  KF_CHECK(c.value() >= 0 && c.value() < num_channels()) << "no input channel " << c;
  return channels_[static_cast<size_t>(c.value())];
}

const InputChannel& InputGate::channel(SubtaskIndex c) const {
  KF_CHECK(c.value() >= 0 && c.value() < num_channels()) << "no input channel " << c;
  return channels_[static_cast<size_t>(c.value())];
}

const std::string& InputGate::endpoint(SubtaskIndex sender) const {
  return channel(sender).endpoint();
}

std::vector<std::string> InputGate::endpoints() const {
  std::vector<std::string> out;
  out.reserve(channels_.size());
  for (const InputChannel& c : channels_) out.push_back(c.endpoint());
  return out;
}

Result<std::optional<InputEvent>> InputGate::PollNext() {
  if (secure_ && ++polls_since_drain_ >= kMonitorDrainInterval) DrainRefusedHandshakes();
  const size_t n = channels_.size();
  for (size_t k = 0; k < n; ++k) {
    size_t i = (next_channel_ + k) % n;
    InputChannel& c = channels_[i];
    if (c.blocked() || c.finished()) continue;
    KF_ASSIGN_OR_RETURN(bool got, c.ReceiveNext(&event_));
    if (got) {
      next_channel_ = (i + 1) % n;
      return std::optional<InputEvent>(event_);
    }
  }
  return std::optional<InputEvent>();
}

Result<InputAvailability> InputGate::WaitForInput(Duration timeout, int extra_fd) {
  poll_items_.clear();
  for (InputChannel& c : channels_) {
    if (c.blocked() || c.finished()) continue;
    poll_items_.push_back(zmq_pollitem_t{c.socket_handle(), 0, ZMQ_POLLIN, 0});
  }
  if (extra_fd >= 0) poll_items_.push_back(zmq_pollitem_t{nullptr, extra_fd, ZMQ_POLLIN, 0});
  const size_t monitors_begin = poll_items_.size();
  if (secure_) {
    // Every channel's monitor, blocked and finished ones too: its events must not pile up.
    for (InputChannel& c : channels_) {
      poll_items_.push_back(zmq_pollitem_t{c.socket().monitor_handle(), 0, ZMQ_POLLIN, 0});
    }
  }
  KF_ASSIGN_OR_RETURN(int ready, PollItems(poll_items_, timeout));
  InputAvailability out;
  if (ready == 0) return out;
  for (size_t k = 0; k < poll_items_.size(); ++k) {
    const zmq_pollitem_t& item = poll_items_[k];
    if ((item.revents & ZMQ_POLLIN) == 0) continue;
    if (k >= monitors_begin) {
      DrainRefusedHandshakes();  // a connection event; not input
      break;
    }
    if (item.socket != nullptr) {
      out.input = true;
    } else {
      out.extra_fd = true;
    }
  }
  return out;
}

Result<std::optional<InputEvent>> InputGate::Next(Duration timeout) {
  const int64_t deadline = MonotonicMillis() + std::max<int64_t>(0, timeout.millis());
  for (;;) {
    KF_ASSIGN_OR_RETURN(std::optional<InputEvent> event, PollNext());
    if (event.has_value()) return event;
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return std::optional<InputEvent>();
    KF_ASSIGN_OR_RETURN(InputAvailability ready, WaitForInput(Duration::Millis(left)));
    (void)ready;
  }
}

void InputGate::BlockChannel(SubtaskIndex c) {
  channel(c).Block(Now());
}

void InputGate::UnblockAll() {
  Timestamp now = Now();
  for (InputChannel& c : channels_) c.Unblock(now);
}

bool InputGate::IsBlocked(SubtaskIndex c) const {
  return channel(c).blocked();
}

bool InputGate::IsFinished(SubtaskIndex c) const {
  return channel(c).finished();
}

bool InputGate::AllFinished() const {
  return std::all_of(channels_.begin(), channels_.end(),
                     [](const InputChannel& c) { return c.finished(); });
}

InputChannelMetrics InputGate::metrics(SubtaskIndex c) const {
  return channel(c).metrics(Now());
}

void InputGate::DrainRefusedHandshakes() {
  polls_since_drain_ = 0;
  if (!secure_) return;
  for (size_t i = 0; i < channels_.size(); ++i) {
    HandshakeFailures failed = channels_[i].socket().handshake_failures();
    // A key the policy refused is `auth`: DataPlaneAuthorizer::Decide counted it already.
    const uint64_t unauthenticated = failed.protocol + failed.other;
    const uint64_t fresh = unauthenticated - reported_handshakes_[i];
    if (fresh == 0) continue;
    reported_handshakes_[i] = unauthenticated;
    refused_handshakes_ += fresh;
    if (authorizer_ != nullptr) {
      authorizer_->CountRefusedHandshakes(fresh, zap_domains_[i], channels_[i].endpoint());
    }
  }
}

uint64_t InputGate::refused_handshakes() {
  DrainRefusedHandshakes();
  return refused_handshakes_;
}

uint64_t InputGate::dropped_frames() const {
  uint64_t total = 0;
  for (const InputChannel& c : channels_) total += c.dropped_frames();
  return total;
}

}  // namespace keyflow
