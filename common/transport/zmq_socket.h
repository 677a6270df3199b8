// ZmqSocket: a thin RAII wrapper over one cppzmq socket that turns ZeroMQ errors into Status.
//
// Who uses it: the data plane (worker/shuffle: PUSH/PULL channels) and the control plane
// (ROUTER/DEALER). It owns the socket, its settings and, optionally, a connection monitor.
//
// Settings every socket gets: linger 0 (closing never blocks on undelivered messages; a graceful
// close sets a bounded linger with SetLinger first), the high-water marks of SocketOptions (small
// bounded queues are how backpressure works), optional ZMQ_IMMEDIATE, TCP keepalive and ZMTP
// heartbeats.
//
// Errors: bind on a port in use -> AlreadyExists ("address tcp://0.0.0.0:6123 is already in use:
// stop the other process or choose another --port"); a malformed endpoint -> InvalidArgument;
// a send the peer does not accept in time -> DeadlineExceeded (peer connected but slow) or
// Unavailable (no connected peer: it went away or never came up); cancellation -> Aborted;
// a receive with nothing in time -> DeadlineExceeded; context shutting down -> Aborted.
//
// Threading: a socket is used by one thread at a time (ZeroMQ sockets are not thread-safe; moving
// one to another thread needs a happens-before edge such as thread start/join). Every socket must
// be closed before its ZmqContext is destroyed.
#pragma once

#include <atomic>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "common/security/curve_keys.h"
#include "common/status.h"
#include "common/transport/zmq_context.h"
#include "common/types.h"

namespace keyflow {

enum class SocketType : uint8_t { kPush, kPull, kDealer, kRouter, kPair, kRep };

// CURVE (RFC 26): an encrypted, authenticated connection. A server socket (the one that binds:
// the coordinator's ROUTER, a worker's data PULL) holds its own key pair and names a ZAP domain;
// the process's ZapAuthenticator (common/transport/zap_authenticator.h) decides which client keys
// it admits and tags each admitted connection with a User-Id (PeerUserId below). A client socket
// holds its own key pair and pins the server's public key: it talks to nobody else.
struct CurveOptions {
  enum class Mode : uint8_t { kOff, kServer, kClient };
  Mode mode = Mode::kOff;
  CurveKeyPair own;               // both modes: this socket's key pair (secret required)
  std::string server_public_key;  // kClient: the server's public key (Z85)
  std::string zap_domain;         // kServer: passed to the ZAP policy (non-empty)

  static CurveOptions Server(CurveKeyPair own, std::string zap_domain) {
    return CurveOptions{Mode::kServer, std::move(own), "", std::move(zap_domain)};
  }
  static CurveOptions Client(CurveKeyPair own, std::string server_public_key) {
    return CurveOptions{Mode::kClient, std::move(own), std::move(server_public_key), ""};
  }
};

struct SocketOptions {
  // Queue limits in messages (ZMQ_SNDHWM / ZMQ_RCVHWM), each > 0: bounded queues are the
  // backpressure mechanism, so "unlimited" (0) is not offered.
  int send_high_water_mark = 1000;
  int receive_high_water_mark = 1000;
  // Kernel socket buffers in bytes (ZMQ_SNDBUF / ZMQ_RCVBUF); 0 keeps the OS default. Smaller
  // buffers make backpressure reach the sender sooner and bound in-flight bytes.
  int kernel_send_buffer_bytes = 0;
  int kernel_receive_buffer_bytes = 0;
  // ZMQ_IMMEDIATE: queue outgoing messages only on completed connections, so sends block (rather
  // than pile up) while the peer is not connected.
  bool immediate = false;
  // ZMTP heartbeats: a peer that does not answer a PING within `heartbeat_timeout` is
  // disconnected. Zero disables them. Only for peers that always read (control plane): a
  // receiver that stops reading (backpressure, barrier alignment) stops answering PINGs too, and
  // the connection is dropped together with the frames queued on it.
  Duration heartbeat_interval;
  Duration heartbeat_timeout;
  // TCP keepalive: an idle connection whose host vanished is reset after ~4x this (probes every
  // `tcp_keepalive_idle`, 3 unanswered ones). Zero keeps the OS setting. Safe for data channels:
  // the kernel answers probes whether or not the application reads.
  Duration tcp_keepalive_idle;
  // Monitor connect/disconnect events so connected_peers() works and a timed-out Send can say
  // Unavailable (no peer) instead of DeadlineExceeded (slow peer). Costs one inproc socket.
  bool track_connections = false;
  // ZMQ_MAXMSGSIZE: an inbound message part larger than this drops the connection that sent it
  // (before it is buffered). 0 = no limit. The control plane sets kMaxControlMessageBytes
  // (control_plane.h), the data plane kMaxDataFrameBytes (worker/shuffle/input_gate.h).
  int64_t max_message_bytes = 0;
  // ZMQ_AFFINITY: which I/O threads serve this socket's connections (bit i = thread i; 0 = any).
  // See ZmqContext::kControlPlaneAffinity / data_plane_affinity().
  uint64_t io_thread_affinity = 0;
  // Off by default. A kServer socket can only be created while a ZapAuthenticator runs on the
  // context (without one, libzmq would admit every client key): FailedPrecondition otherwise.
  CurveOptions curve;
};

// The authenticated identity of the connection a received message came from: the User-Id its
// ZAP handler gave it ("worker:worker-0"), or "" on a connection without CURVE.
std::string PeerUserId(const zmq::message_t& msg);

// Connection handshakes that failed on a socket with track_connections (its monitor's
// ZMQ_EVENT_HANDSHAKE_FAILED_* events). On a CURVE client: `protocol` = the server speaks another
// security mechanism (e.g. this client has no key, the server requires one — or the reverse);
// `auth` = the server's ZAP handler refused this client's key. On a CURVE server: the same
// failures of its clients.
struct HandshakeFailures {
  uint64_t protocol = 0;  // ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
  uint64_t auth = 0;      // ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
  uint64_t other = 0;     // ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
  // Connections closed before their handshake completed, with or without one of the events
  // above: when the server detects a mechanism mismatch first and closes, the client only sees
  // the close. Exact for a socket with one connection (a client); not part of total().
  uint64_t closed_before_handshake = 0;
  uint64_t total() const { return protocol + auth + other; }
};

struct SendOptions {
  // Total time a send may wait for the peer to accept the message.
  Duration timeout = Duration::Seconds(10);
  // Checked every `poll_slice` while waiting; when it becomes true the send returns Aborted.
  const std::atomic<bool>* cancelled = nullptr;
  Duration poll_slice = Duration::Millis(50);
};

class ZmqSocket {
 public:
  static Result<ZmqSocket> Create(ZmqContext& context, SocketType type,
                                  const SocketOptions& options = {});

  ZmqSocket(ZmqSocket&& other) noexcept;
  ZmqSocket& operator=(ZmqSocket&& other) noexcept;
  ZmqSocket(const ZmqSocket&) = delete;
  ZmqSocket& operator=(const ZmqSocket&) = delete;
  ~ZmqSocket() { Close(); }

  // Binds `endpoint` ("tcp://0.0.0.0:6123", "tcp://127.0.0.1:*", "inproc://name").
  Status Bind(const std::string& endpoint);
  // Binds tcp://<host>:* (an ephemeral port) and returns the endpoint actually bound, e.g.
  // "tcp://0.0.0.0:41873". Advertise it to peers with AdvertisedEndpoint (endpoint.h).
  Result<std::string> BindEphemeral(std::string_view host);
  // The last endpoint bound (ZMQ_LAST_ENDPOINT), with the real port for "*" binds.
  Result<std::string> LastEndpoint() const;
  // Connects to `endpoint`. ZeroMQ connects in the background (and reconnects), so this only
  // fails for a malformed endpoint.
  Status Connect(const std::string& endpoint);

  // Time Close() may spend delivering queued messages (ZMQ_LINGER). Default 0: closing drops
  // them. Set a bounded value before a graceful close; never "forever".
  Status SetLinger(Duration linger);

  // Non-blocking send: true if queued, false if the queue is full / no peer (would block).
  Result<bool> TrySend(std::string_view bytes);
  // Sends, waiting up to options.timeout for the peer to accept (see the error list above).
  Status Send(std::string_view bytes, const SendOptions& options);
  // Sends a multipart message atomically (ROUTER/DEALER envelopes). Precondition: !parts.empty().
  Status SendMultipart(std::span<const std::string_view> parts, const SendOptions& options);

  // Non-blocking receive of one message part: true if `*msg` was filled.
  Result<bool> TryReceive(zmq::message_t* msg);
  // Waits up to `timeout` for one message part; DeadlineExceeded if none came.
  Status Receive(zmq::message_t* msg, Duration timeout);
  // Non-blocking receive of a whole multipart message into `*parts` (cleared first).
  Result<bool> TryReceiveMultipart(std::vector<zmq::message_t>* parts);
  // Waits up to `timeout` for a whole multipart message.
  Status ReceiveMultipart(std::vector<zmq::message_t>* parts, Duration timeout);

  // Connections currently established, handshake complete (drains pending monitor events
  // first). Exact for a socket with one connection (a PUSH connected to one receiver).
  // Precondition: created with track_connections.
  int connected_peers();
  // Handshake failures seen so far (drains pending monitor events first).
  // Precondition: created with track_connections.
  HandshakeFailures handshake_failures();

  // For zmq_poll (see PollItems).
  void* handle() { return socket_.handle(); }
  // Readable (ZMQ_POLLIN) when a connection event is pending: lets a caller wait for
  // connected_peers() to change. Null without track_connections.
  void* monitor_handle() { return monitor_.handle(); }
  bool is_open() const { return socket_.handle() != nullptr; }
  // The endpoint last bound or connected, for messages ("" before any).
  const std::string& endpoint() const { return endpoint_; }

  // Closes now (linger as set). Idempotent; the destructor calls it.
  void Close();

 private:
  ZmqSocket(ZmqContext* context, zmq::socket_t socket)
      : context_(context), socket_(std::move(socket)) {}
  Status StartMonitor();
  void DrainMonitor();
  // Waits until the socket may accept a message; at the deadline returns Unavailable (no
  // connected peer) or DeadlineExceeded, on cancellation Aborted.
  Status WaitWritable(int64_t deadline_ms, const SendOptions& options, int64_t start_ms);
  // Calls `try_receive` (TryReceive or TryReceiveMultipart, returning Result<bool>) until it
  // received, waiting for the socket to become readable in between; DeadlineExceeded after
  // `timeout`.
  template <class TryReceiveFn>
  Status ReceiveWithin(Duration timeout, TryReceiveFn try_receive);

  ZmqContext* context_ = nullptr;  // null once closed or moved from
  zmq::socket_t socket_;
  zmq::socket_t monitor_;  // PAIR connected to the socket's monitor endpoint, if tracked
  int connected_ = 0;
  HandshakeFailures handshake_failures_;
  std::string endpoint_;
};

// zmq_poll over ZeroMQ sockets and raw file descriptors (e.g. a mailbox eventfd). Returns the
// number of ready items; an interrupted poll (EINTR) returns 0. `timeout` < 0 waits forever.
Result<int> PollItems(std::span<zmq_pollitem_t> items, Duration timeout);

}  // namespace keyflow
