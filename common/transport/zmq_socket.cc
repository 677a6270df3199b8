#include "common/transport/zmq_socket.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/clock.h"

namespace keyflow {
namespace {

int ZmqType(SocketType type) {
  switch (type) {
    case SocketType::kPush:
      return ZMQ_PUSH;
    case SocketType::kPull:
      return ZMQ_PULL;
    case SocketType::kDealer:
      return ZMQ_DEALER;
    case SocketType::kRouter:
      return ZMQ_ROUTER;
    case SocketType::kPair:
      return ZMQ_PAIR;
    case SocketType::kRep:
      return ZMQ_REP;
  }
  return ZMQ_PAIR;
}

Status FromZmqError(std::string_view what, const zmq::error_t& e) {
  std::string m(what);
  m += ": ";
  m += e.what();
  switch (e.num()) {
    case ETERM:
      return Aborted(m + " (the ZeroMQ context is shutting down)");
    case EINVAL:
    case EPROTONOSUPPORT:
    case ENODEV:
      return InvalidArgument(std::move(m));
    case EHOSTUNREACH:
      return Unavailable(std::move(m));
    case EAGAIN:
      return DeadlineExceeded(std::move(m));
    default:
      return IoError(std::move(m));
  }
}

// ZeroMQ takes a Z85 key as 41 bytes with the terminating NUL.
void SetZ85Key(zmq::socket_t& s, int option, const std::string& z85) {
  if (zmq_setsockopt(s.handle(), option, z85.c_str(), z85.size() + 1) != 0) {
    throw zmq::error_t();
  }
}

Status ValidateCurve(const ZmqContext& context, const CurveOptions& curve) {
  using Mode = CurveOptions::Mode;
  if (curve.mode == Mode::kOff) return Status::Ok();
  if (!CurveAvailable()) {
    return FailedPrecondition(
        "this libzmq was built without CURVE support, so the socket cannot be secured: install "
        "Debian's libzmq5 (scripts/install-deps.sh) or run with --insecure");
  }
  KF_RETURN_IF_ERROR_CTX(ValidateZ85Key(curve.own.public_key), "CURVE public key");
  KF_RETURN_IF_ERROR_CTX(ValidateZ85Key(curve.own.secret_key), "CURVE secret key");
  if (curve.mode == Mode::kClient) {
    KF_RETURN_IF_ERROR_CTX(ValidateZ85Key(curve.server_public_key), "CURVE server key");
    return Status::Ok();
  }
  if (curve.zap_domain.empty()) {
    return InvalidArgument("a CURVE server socket needs a ZAP domain");
  }
  if (!context.zap_handler_running()) {
    return FailedPrecondition(
        "a CURVE server socket needs a ZapAuthenticator running on its context (without one, "
        "ZeroMQ would admit every key)");
  }
  return Status::Ok();
}

void ApplyCurve(zmq::socket_t& s, const CurveOptions& curve) {
  using Mode = CurveOptions::Mode;
  if (curve.mode == Mode::kServer) {
    s.set(zmq::sockopt::zap_domain, curve.zap_domain);
    s.set(zmq::sockopt::curve_server, true);
    SetZ85Key(s, ZMQ_CURVE_SECRETKEY, curve.own.secret_key);
  } else if (curve.mode == Mode::kClient) {
    SetZ85Key(s, ZMQ_CURVE_SERVERKEY, curve.server_public_key);
    SetZ85Key(s, ZMQ_CURVE_PUBLICKEY, curve.own.public_key);
    SetZ85Key(s, ZMQ_CURVE_SECRETKEY, curve.own.secret_key);
  }
}

std::string MillisText(int64_t ms) {
  return std::to_string(ms) + " ms";
}

}  // namespace

Result<ZmqSocket> ZmqSocket::Create(ZmqContext& context, SocketType type,
                                    const SocketOptions& options) {
  if (options.send_high_water_mark <= 0 || options.receive_high_water_mark <= 0) {
    return InvalidArgument("socket high-water marks must be > 0 (bounded queues), got send=" +
                           std::to_string(options.send_high_water_mark) +
                           " receive=" + std::to_string(options.receive_high_water_mark));
  }
  if (options.max_message_bytes < 0) {
    return InvalidArgument("socket max_message_bytes must be >= 0 (0 = no limit), got " +
                           std::to_string(options.max_message_bytes));
  }
  KF_RETURN_IF_ERROR(ValidateCurve(context, options.curve));
  try {
    zmq::socket_t s(context.context(), ZmqType(type));
    s.set(zmq::sockopt::linger, 0);
    ApplyCurve(s, options.curve);
    s.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
    s.set(zmq::sockopt::rcvhwm, options.receive_high_water_mark);
    if (options.kernel_send_buffer_bytes > 0) {
      s.set(zmq::sockopt::sndbuf, options.kernel_send_buffer_bytes);
    }
    if (options.kernel_receive_buffer_bytes > 0) {
      s.set(zmq::sockopt::rcvbuf, options.kernel_receive_buffer_bytes);
    }
    if (options.io_thread_affinity != 0) s.set(zmq::sockopt::affinity, options.io_thread_affinity);
    if (options.immediate) s.set(zmq::sockopt::immediate, true);
    if (options.max_message_bytes > 0) s.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
    if (options.heartbeat_interval.millis() > 0) {
      s.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(options.heartbeat_interval.millis()));
      s.set(zmq::sockopt::heartbeat_timeout,
            static_cast<int>(
                std::max(options.heartbeat_timeout, options.heartbeat_interval).millis()));
    }
    if (options.tcp_keepalive_idle.millis() > 0) {
      const int idle_seconds =
          static_cast<int>(std::max<int64_t>(1, options.tcp_keepalive_idle.millis() / 1000));
      s.set(zmq::sockopt::tcp_keepalive, 1);
      s.set(zmq::sockopt::tcp_keepalive_idle, idle_seconds);
      s.set(zmq::sockopt::tcp_keepalive_intvl, idle_seconds);
      s.set(zmq::sockopt::tcp_keepalive_cnt, 3);
    }
    context.open_sockets_.fetch_add(1, std::memory_order_acq_rel);
    ZmqSocket socket(&context, std::move(s));
    if (options.track_connections) KF_RETURN_IF_ERROR(socket.StartMonitor());
    return socket;
  } catch (const zmq::error_t& e) {
    return FromZmqError("cannot create a ZeroMQ socket", e);
  }
}

std::string PeerUserId(const zmq::message_t& msg) {
  // zmq_msg_gets takes a non-const message but does not modify it.
  const char* id = zmq_msg_gets(const_cast<zmq_msg_t*>(msg.handle()), "User-Id");
  return id == nullptr ? std::string() : std::string(id);
}

ZmqSocket::ZmqSocket(ZmqSocket&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      socket_(std::move(other.socket_)),
      monitor_(std::move(other.monitor_)),
      connected_(other.connected_),
      handshake_failures_(other.handshake_failures_),
      endpoint_(std::move(other.endpoint_)) {}

ZmqSocket& ZmqSocket::operator=(ZmqSocket&& other) noexcept {
  if (this != &other) {
    Close();
    context_ = std::exchange(other.context_, nullptr);
    socket_ = std::move(other.socket_);
    monitor_ = std::move(other.monitor_);
    connected_ = other.connected_;
    handshake_failures_ = other.handshake_failures_;
    endpoint_ = std::move(other.endpoint_);
  }
  return *this;
}

void ZmqSocket::Close() {
  if (context_ == nullptr) return;
  // Stop the monitor before closing: a closed socket lingers in the I/O thread, whose
  // DISCONNECTED event would otherwise block it forever on a monitor PAIR nobody reads.
  if (monitor_.handle() != nullptr) zmq_socket_monitor(socket_.handle(), nullptr, 0);
  socket_.close();
  monitor_.close();
  context_->open_sockets_.fetch_sub(1, std::memory_order_acq_rel);
  context_ = nullptr;
}

Status ZmqSocket::StartMonitor() {
  std::string address = "inproc://keyflow-monitor-" + std::to_string(context_->NextUniqueId());
  try {
    if (zmq_socket_monitor(socket_.handle(), address.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0) {
      throw zmq::error_t();
    }
    monitor_ = zmq::socket_t(context_->context(), ZMQ_PAIR);
    monitor_.set(zmq::sockopt::linger, 0);
    monitor_.connect(address);
  } catch (const zmq::error_t& e) {
    return FromZmqError("cannot monitor a ZeroMQ socket", e);
  }
  return Status::Ok();
}

void ZmqSocket::DrainMonitor() {
  if (monitor_.handle() == nullptr) return;
  try {
    for (;;) {
      zmq::message_t event;
      if (!monitor_.recv(event, zmq::recv_flags::dontwait)) return;
      // Frame 1: uint16 event id + uint32 value; frame 2: the endpoint.
      uint16_t id = 0;
      if (event.size() >= sizeof(id)) std::memcpy(&id, event.data(), sizeof(id));
      while (event.more()) {
        zmq::message_t rest;
        if (!monitor_.recv(rest, zmq::recv_flags::dontwait)) break;
        event = std::move(rest);
      }
      // A connection counts once its ZMTP handshake is done: only then does ZeroMQ attach the
      // pipe that sends (with ZMQ_IMMEDIATE) can use.
      if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) ++connected_;
      if (id == ZMQ_EVENT_DISCONNECTED) {
        if (connected_ > 0) {
          --connected_;
        } else {
          ++handshake_failures_.closed_before_handshake;
        }
      }
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) ++handshake_failures_.protocol;
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) ++handshake_failures_.auth;
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) ++handshake_failures_.other;
    }
  } catch (const zmq::error_t&) {
    // The context is shutting down; the connection count no longer matters.
  }
}

int ZmqSocket::connected_peers() {
  KF_CHECK(monitor_.handle() != nullptr)
      << "connected_peers() needs SocketOptions::track_connections";
  DrainMonitor();
  return connected_;
}

HandshakeFailures ZmqSocket::handshake_failures() {
  KF_CHECK(monitor_.handle() != nullptr)
      << "handshake_failures() needs SocketOptions::track_connections";
  DrainMonitor();
  return handshake_failures_;
}

Status ZmqSocket::Bind(const std::string& endpoint) {
  KF_CHECK(is_open());
  try {
    socket_.bind(endpoint);
  } catch (const zmq::error_t& e) {
    switch (e.num()) {
      case EADDRINUSE:
        return AlreadyExists("address " + endpoint +
                             " is already in use: stop the other process or choose another "
                             "--port");
      case EADDRNOTAVAIL:
        return InvalidArgument("cannot bind " + endpoint +
                               ": the address is not one of this host's; bind to 0.0.0.0 or to "
                               "an address of this host");
      case EINVAL:
      case EPROTONOSUPPORT:
      case ENODEV:
        return InvalidArgument("cannot bind '" + endpoint + "' (" + e.what() +
                               "): expected tcp://<host>:<port>, tcp://<host>:* or "
                               "inproc://<name>");
      default:
        return FromZmqError("cannot bind " + endpoint, e);
    }
  }
  auto last = LastEndpoint();
  endpoint_ = last.ok() ? *last : endpoint;
  return Status::Ok();
}

Result<std::string> ZmqSocket::BindEphemeral(std::string_view host) {
  KF_RETURN_IF_ERROR(Bind("tcp://" + std::string(host) + ":*"));
  return LastEndpoint();
}

Result<std::string> ZmqSocket::LastEndpoint() const {
  KF_CHECK(is_open());
  try {
    return socket_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return FromZmqError("cannot read the bound endpoint", e);
  }
}

Status ZmqSocket::Connect(const std::string& endpoint) {
  KF_CHECK(is_open());
  try {
    socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    if (e.num() == EINVAL || e.num() == EPROTONOSUPPORT || e.num() == ENODEV) {
      return InvalidArgument("cannot connect to '" + endpoint + "' (" + e.what() +
                             "): expected tcp://<host>:<port> or inproc://<name>");
    }
    return FromZmqError("cannot connect to " + endpoint, e);
  }
  endpoint_ = endpoint;
  return Status::Ok();
}

Status ZmqSocket::SetLinger(Duration linger) {
  KF_CHECK(is_open());
  try {
    socket_.set(zmq::sockopt::linger, static_cast<int>(std::max<int64_t>(0, linger.millis())));
  } catch (const zmq::error_t& e) {
    return FromZmqError("cannot set linger", e);
  }
  return Status::Ok();
}

Result<bool> ZmqSocket::TrySend(std::string_view bytes) {
  KF_CHECK(is_open());
  try {
    return socket_.send(zmq::const_buffer(bytes.data(), bytes.size()), zmq::send_flags::dontwait)
        .has_value();
  } catch (const zmq::error_t& e) {
    return FromZmqError("send to " + endpoint_, e);
  }
}

Status ZmqSocket::WaitWritable(int64_t deadline_ms, const SendOptions& options, int64_t start_ms) {
  for (;;) {
    if (options.cancelled != nullptr && options.cancelled->load(std::memory_order_acquire)) {
      return Aborted("send to " + endpoint_ + " cancelled");
    }
    int64_t now = MonotonicMillis();
    if (now >= deadline_ms) {
      DrainMonitor();
      std::string waited = MillisText(now - start_ms);
      if (monitor_.handle() != nullptr && connected_ == 0) {
        return Unavailable("send to " + endpoint_ + ": no connected receiver after " + waited +
                           " (it went away or never came up)");
      }
      return DeadlineExceeded("send to " + endpoint_ + ": the receiver accepted nothing for " +
                              waited + " (backpressure)");
    }
    zmq_pollitem_t item{socket_.handle(), 0, ZMQ_POLLOUT, 0};
    int64_t slice = std::min(options.poll_slice.millis(), deadline_ms - now);
    KF_ASSIGN_OR_RETURN(int ready,
                        PollItems({&item, 1}, Duration::Millis(std::max<int64_t>(slice, 0))));
    DrainMonitor();
    if (ready > 0 && (item.revents & ZMQ_POLLOUT) != 0) return Status::Ok();
  }
}

Status ZmqSocket::Send(std::string_view bytes, const SendOptions& options) {
  int64_t start = MonotonicMillis();
  int64_t deadline = start + std::max<int64_t>(0, options.timeout.millis());
  for (;;) {
    KF_ASSIGN_OR_RETURN(bool sent, TrySend(bytes));
    if (sent) return Status::Ok();
    KF_RETURN_IF_ERROR(WaitWritable(deadline, options, start));
  }
}

Status ZmqSocket::SendMultipart(std::span<const std::string_view> parts,
                                const SendOptions& options) {
  KF_CHECK(is_open());
  KF_CHECK(!parts.empty());
  int64_t start = MonotonicMillis();
  int64_t deadline = start + std::max<int64_t>(0, options.timeout.millis());
  try {
    for (;;) {
      auto flags = parts.size() > 1 ? zmq::send_flags::dontwait | zmq::send_flags::sndmore
                                    : zmq::send_flags::dontwait;
      if (socket_.send(zmq::const_buffer(parts[0].data(), parts[0].size()), flags)) break;
      KF_RETURN_IF_ERROR(WaitWritable(deadline, options, start));
    }
    // Once the first part is queued ZeroMQ accepts the rest of the message (HWM counts whole
    // messages), so these never block.
    for (size_t i = 1; i < parts.size(); ++i) {
      auto flags = i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      if (!socket_.send(zmq::const_buffer(parts[i].data(), parts[i].size()), flags)) {
        return Internal("send to " + endpoint_ + ": ZeroMQ refused part " + std::to_string(i) +
                        " of a multipart message");
      }
    }
  } catch (const zmq::error_t& e) {
    return FromZmqError("send to " + endpoint_, e);
  }
  return Status::Ok();
}

Result<bool> ZmqSocket::TryReceive(zmq::message_t* msg) {
  KF_CHECK(is_open());
  try {
    return socket_.recv(*msg, zmq::recv_flags::dontwait).has_value();
  } catch (const zmq::error_t& e) {
    return FromZmqError("receive on " + endpoint_, e);
  }
}

template <class TryReceiveFn>
Status ZmqSocket::ReceiveWithin(Duration timeout, TryReceiveFn try_receive) {
  int64_t start = MonotonicMillis();
  int64_t deadline = start + std::max<int64_t>(0, timeout.millis());
  for (;;) {
    KF_ASSIGN_OR_RETURN(bool got, try_receive());
    if (got) return Status::Ok();
    int64_t now = MonotonicMillis();
    if (now >= deadline) {
      return DeadlineExceeded("no message on " + endpoint_ + " within " + MillisText(now - start));
    }
    zmq_pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    KF_ASSIGN_OR_RETURN(int ready, PollItems({&item, 1}, Duration::Millis(deadline - now)));
    (void)ready;
  }
}

Status ZmqSocket::Receive(zmq::message_t* msg, Duration timeout) {
  return ReceiveWithin(timeout, [&] { return TryReceive(msg); });
}

Result<bool> ZmqSocket::TryReceiveMultipart(std::vector<zmq::message_t>* parts) {
  parts->clear();
  zmq::message_t first;
  KF_ASSIGN_OR_RETURN(bool got, TryReceive(&first));
  if (!got) return false;
  bool more = first.more();
  parts->push_back(std::move(first));
  try {
    // The remaining parts of a message are already here (ZeroMQ delivers messages atomically).
    while (more) {
      zmq::message_t part;
      if (!socket_.recv(part, zmq::recv_flags::none)) {
        return Internal("receive on " + endpoint_ + ": multipart message ended early");
      }
      more = part.more();
      parts->push_back(std::move(part));
    }
  } catch (const zmq::error_t& e) {
    return FromZmqError("receive on " + endpoint_, e);
  }
  return true;
}

Status ZmqSocket::ReceiveMultipart(std::vector<zmq::message_t>* parts, Duration timeout) {
  return ReceiveWithin(timeout, [&] { return TryReceiveMultipart(parts); });
}

Result<int> PollItems(std::span<zmq_pollitem_t> items, Duration timeout) {
  int rc = zmq_poll(items.data(), static_cast<int>(items.size()),
                    static_cast<long>(timeout.millis() < 0 ? -1 : timeout.millis()));
  if (rc >= 0) return rc;
  int err = zmq_errno();
  if (err == EINTR) return 0;
  if (err == ETERM) return Aborted("poll: the ZeroMQ context is shutting down");
  return IoError(std::string("poll: ") + zmq_strerror(err));
}

}  // namespace keyflow
