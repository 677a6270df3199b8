// ControlServer: the coordinator's ZeroMQ event loop. Owns the ROUTER socket the workers and
// the CLI talk to, decodes frames into ControlMessages for the Coordinator, sends its replies,
// and ticks it at least every heartbeat interval. Stops on SIGINT/SIGTERM (via an fd).
// The socket is a ZmqSocket (common/transport) made from ControlPlaneSocketOptions, like every
// other control-plane socket.
//
// Threading: Run() on the thread that created the server.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "common/transport/zmq_context.h"
#include "common/transport/zmq_socket.h"
#include "coordinator/control_outbox.h"
#include "coordinator/coordinator.h"

namespace keyflow {

class ControlServer final : public ControlOutbox {
 public:
  // Binds `endpoint` (e.g. tcp://0.0.0.0:6123). A port in use is AlreadyExists with a hint.
  static Result<std::unique_ptr<ControlServer>> Bind(ZmqContext& ctx, const std::string& endpoint,
                                                     CoordinatorOptions options,
                                                     const Clock* wall_clock);

  // Runs until `stop_fd` becomes readable (a SignalWaiter's fd; -1 = never).
  Status Run(int stop_fd);

  void Send(const std::string& identity, const ControlMessage& msg) override;
  // The bound endpoint with the real port (useful with port 0).
  const std::string& endpoint() const { return endpoint_; }
  Coordinator& coordinator() { return *coordinator_; }

 private:
  ControlServer(ZmqSocket socket, std::string endpoint)
      : socket_(std::move(socket)), endpoint_(std::move(endpoint)) {}
  // Handles up to kMaxMessagesPerDrain pending messages.
  void Drain(int64_t now_ms);
  static constexpr int kMaxMessagesPerDrain = 512;

  ZmqSocket socket_;
  std::string endpoint_;
  std::unique_ptr<Coordinator> coordinator_;
};

}  // namespace keyflow
