// ControlClient: the CLI's connection to the coordinator (a DEALER socket). One request, one
// Reply, with a timeout; an unreachable coordinator is a clear error, never a hang.
// It owns its ZmqContext (the CLI makes one connection per command) and its socket is a
// ZmqSocket (common/transport) made from ControlPlaneSocketOptions, like every other
// control-plane socket.
//
// Security: with a secure ProcessSecurity (--keys) the socket is a CURVE client with the
// client's key, pinning the coordinator's public key. Before the first request it waits for the
// handshake and turns a failed one into one sentence instead of a timeout: a client without a
// key at a secure coordinator ("the coordinator requires a client key; run with --keys DIR"), a
// key the coordinator refuses ("... refused client key NAME: ask its operator to add it"), or a
// key at an --insecure coordinator.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/protocol/control_messages.h"
#include "common/status.h"
#include "common/transport/process_security.h"
#include "common/transport/zmq_context.h"
#include "common/transport/zmq_socket.h"

namespace keyflow::cli {

class ControlClient {
 public:
  // `endpoint` like tcp://127.0.0.1:6123. Does not block; a malformed endpoint is
  // InvalidArgument. `timeout_ms` bounds the connection (handshake and send) and, separately,
  // the wait for the reply: an unreachable coordinator is reported after `timeout_ms`.
  static Result<std::unique_ptr<ControlClient>> Connect(
      const std::string& endpoint, int64_t timeout_ms,
      const ProcessSecurity& security = ProcessSecurity::Insecure(Role::kOperator));
  // Unavailable (with what to do) if the coordinator does not take the request or does not
  // answer within the timeout.
  Result<Reply> Request(const ControlMessage& msg);
  // Like Request, but while the reply is outstanding calls `while_waiting` every `poll_ms`; a
  // non-OK status from it ends the wait with that status (e.g. the coordinator restarted).
  Result<Reply> Request(const ControlMessage& msg, int64_t poll_ms,
                        const std::function<Status()>& while_waiting);

 private:
  ControlClient(std::unique_ptr<ZmqContext> context, ZmqSocket socket, std::string endpoint,
                int64_t timeout_ms, ProcessSecurity security)
      : context_(std::move(context)),
        socket_(std::move(socket)),
        endpoint_(std::move(endpoint)),
        timeout_ms_(timeout_ms),
        security_(std::move(security)) {}
  // Waits (up to the timeout) for the connection's handshake; a failed one is FailedPrecondition
  // with the sentence above, no connection within the timeout DeadlineExceeded (the request then
  // reports the coordinator unreachable).
  Status AwaitHandshake();

  std::unique_ptr<ZmqContext> context_;  // declared first: outlives socket_
  ZmqSocket socket_;
  std::string endpoint_;
  int64_t timeout_ms_;
  ProcessSecurity security_;
  bool handshake_checked_ = false;
};

}  // namespace keyflow::cli
