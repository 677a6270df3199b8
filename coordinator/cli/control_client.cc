#include "coordinator/cli/control_client.h"

#include <algorithm>

#include "common/clock.h"
#include "common/transport/control_plane.h"

namespace keyflow::cli {

Result<std::unique_ptr<ControlClient>> ControlClient::Connect(const std::string& endpoint,
                                                              int64_t timeout_ms,
                                                              const ProcessSecurity& security) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<ZmqContext> context, ZmqContext::Create(1));
  SocketOptions so = ControlPlaneSocketOptions();
  so.immediate = true;  // queue nothing until the connection exists
  so.curve = security.ControlClientCurve();
  so.track_connections = true;  // a failed handshake is a sentence, not a timeout
  KF_ASSIGN_OR_RETURN(ZmqSocket socket, ZmqSocket::Create(*context, SocketType::kDealer, so));
  if (Status connected = socket.Connect(endpoint); !connected.ok()) {
    return InvalidArgument("cannot use coordinator address '" + endpoint +
                           "': " + connected.message() + " (expected tcp://HOST:PORT)");
  }
  return std::unique_ptr<ControlClient>(
      new ControlClient(std::move(context), std::move(socket), endpoint, timeout_ms, security));
}

Status ControlClient::AwaitHandshake() {
  if (handshake_checked_) return Status::Ok();
  const int64_t deadline = MonotonicMillis() + timeout_ms_;
  while (true) {
    if (socket_.connected_peers() > 0) break;
    HandshakeFailures failed = socket_.handshake_failures();
    // A mechanism mismatch shows as a PROTOCOL failure, or — when the server noticed it first
    // and closed — only as connections closed during the handshake. A server that is up closes
    // a connection that way only when it refuses the handshake.
    if (failed.protocol > 0 || (!security_.enabled && failed.closed_before_handshake >= 2)) {
      return security_.enabled
                 ? FailedPrecondition("the coordinator at " + endpoint_ +
                                      " does not accept client keys (it runs --insecure): run "
                                      "without --keys (and unset KEYFLOW_KEYS)")
                 : FailedPrecondition("the coordinator at " + endpoint_ +
                                      " requires a client key; run with --keys DIR");
    }
    if (failed.auth == 0 && failed.closed_before_handshake >= 5) {
      return FailedPrecondition("the coordinator at " + endpoint_ +
                                " closed every connection during the handshake: it does not "
                                "accept client key " +
                                security_.self.name +
                                ", or it runs --insecure (then run without --keys)");
    }
    if (failed.auth > 0) {
      return FailedPrecondition(
          "the coordinator at " + endpoint_ + " refused client key " + security_.self.name +
          ": ask its operator to add it (`keyflow keys add-client " + security_.self.name + "`)");
    }
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return DeadlineExceeded("no connection");  // the request says "unreachable"
    zmq_pollitem_t item = {socket_.monitor_handle(), 0, ZMQ_POLLIN, 0};
    KF_RETURN_IF_ERROR(PollItems(std::span(&item, 1), Duration::Millis(left)).status());
  }
  handshake_checked_ = true;
  return Status::Ok();
}

Result<Reply> ControlClient::Request(const ControlMessage& msg) {
  return Request(msg, timeout_ms_, nullptr);
}

Result<Reply> ControlClient::Request(const ControlMessage& msg, int64_t poll_ms,
                                     const std::function<Status()>& while_waiting) {
  std::string payload = EncodeControlMessage(msg);
  std::string unreachable = "cannot reach the coordinator at " + endpoint_ + " within " +
                            std::to_string(timeout_ms_) +
                            " ms: is it running? (start a cluster with scripts/start-cluster.sh, "
                            "or pass --coordinator tcp://HOST:PORT)";
  const Duration timeout = Duration::Millis(timeout_ms_);
  // No connection within the timeout: unreachable now, not after a send that waits as long
  // again (the message says how long the command waited).
  if (Status s = AwaitHandshake(); !s.ok()) {
    return s.code() == StatusCode::kDeadlineExceeded ? Unavailable(unreachable) : s;
  }
  // Timeouts (no connection, no answer) are "unreachable"; other errors keep their reason.
  auto failed = [&](const Status& s) {
    return Unavailable(s.code() == StatusCode::kDeadlineExceeded ||
                               s.code() == StatusCode::kUnavailable
                           ? unreachable
                           : unreachable + " (" + s.message() + ")");
  };
  if (Status sent = socket_.Send(payload, SendOptions{.timeout = timeout}); !sent.ok()) {
    return failed(sent);
  }
  zmq::message_t reply;
  for (int64_t waited = 0;; waited += poll_ms) {
    if (waited >= timeout_ms_) return Unavailable(unreachable);
    Status got = socket_.Receive(&reply, Duration::Millis(std::min(poll_ms, timeout_ms_ - waited)));
    if (got.ok()) break;
    if (got.code() != StatusCode::kDeadlineExceeded) return failed(got);
    if (while_waiting) KF_RETURN_IF_ERROR(while_waiting());
  }
  auto decoded = DecodeControlMessage(
      std::string_view(static_cast<const char*>(reply.data()), reply.size()), "the coordinator");
  if (!decoded.ok()) return decoded.status();
  if (!std::holds_alternative<Reply>(*decoded)) {
    return Internal("the coordinator answered with " + std::string(ControlMessageName(*decoded)) +
                    " instead of a reply");
  }
  return std::get<Reply>(*decoded);
}

}  // namespace keyflow::cli
