// ControlServer: the coordinator's ZeroMQ event loop. Owns the ROUTER socket the workers and
// the CLI talk to, decodes frames into ControlMessages for the Coordinator, sends its replies,
// and ticks it at least every heartbeat interval. Stops on SIGINT/SIGTERM (via an fd), reloads
// the trusted keys on SIGHUP (another fd). The socket is a ZmqSocket (common/transport) made from
// ControlPlaneSocketOptions, like every other control-plane socket.
//
// Secure (options.security.enabled): the ROUTER is a CURVE server (ZAP domain "control") and the
// server runs the context's ZapAuthenticator, whose policy admits exactly the TrustedKeyStore's
// keys (loaded here from --keys unless options.trusted_keys is set). Each message reaches the
// Coordinator with its connection's identity (PeerUserId) and IP; refused connections (ZAP
// refusals, failed handshakes such as a client without a key) are counted for status.
//
// REST (AttachRest): the loop publishes Coordinator::StatusJson into a StatusSnapshotPublisher
// every kPublishIntervalMs and right after each REST command or operator request (so what the
// CLI saw is never newer than the REST API's snapshot), polls the ControlCommandBridge's
// fd and feeds its commands into the Coordinator as messages of the peers "rest:<n>"; Send hands
// a Reply addressed to such a peer back to the bridge instead of the socket.
//
// Threading: Run() on the thread that created the server.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/logging/log_rate_limiter.h"
#include "common/status.h"
#include "common/transport/zap_authenticator.h"
#include "common/transport/zmq_context.h"
#include "common/transport/zmq_socket.h"
#include "coordinator/control_outbox.h"
#include "coordinator/coordinator.h"
#include "coordinator/rest/control_command_bridge.h"
#include "coordinator/rest/status_snapshot.h"

namespace keyflow {

class ControlServer final : public ControlOutbox {
 public:
  // Binds `endpoint` (e.g. tcp://0.0.0.0:6123). A port in use is AlreadyExists with a hint.
  static Result<std::unique_ptr<ControlServer>> Bind(ZmqContext& ctx, const std::string& endpoint,
                                                     CoordinatorOptions options,
                                                     const Clock* wall_clock);

  // Runs until `stop_fd` becomes readable (a SignalWaiter's fd; -1 = never). Each time
  // `reload_fd` becomes readable (SignalWaiter::reload_fd; -1 = none) it is drained with
  // `drain_reload` and the trusted keys are reloaded.
  Status Run(int stop_fd, int reload_fd = -1, const std::function<void()>& drain_reload = {});

  // REST: publish status into `snapshots` and run the commands of `bridge` (either may be null).
  // `decorate` (may be empty) adds to each published document (e.g. the REST server's counters).
  // Call before Run; both must outlive the server's loop.
  static constexpr int64_t kPublishIntervalMs = 250;
  void AttachRest(StatusSnapshotPublisher* snapshots, ControlCommandBridge* bridge,
                  std::function<void(nlohmann::json&)> decorate = {});

  void Send(const std::string& identity, const ControlMessage& msg) override;
  // The bound endpoint with the real port (useful with port 0).
  const std::string& endpoint() const { return endpoint_; }
  Coordinator& coordinator() { return *coordinator_; }

 private:
  ControlServer(std::unique_ptr<ZapAuthenticator> zap, ZmqSocket socket, std::string endpoint)
      : zap_(std::move(zap)), socket_(std::move(socket)), endpoint_(std::move(endpoint)) {}
  // Handles up to kMaxMessagesPerDrain pending messages.
  void Drain(int64_t now_ms);
  static constexpr int kMaxMessagesPerDrain = 512;
  // ZAP refusals + failed handshakes so far, into the coordinator's status.
  void CountRefusedConnections();
  // Feeds the bridge's pending commands into the Coordinator.
  void RunRestCommands(int64_t now_ms);
  void PublishStatus(int64_t now_ms);

  std::unique_ptr<ZapAuthenticator> zap_;  // declared before socket_: outlives it (null: insecure)
  ZmqSocket socket_;
  std::string endpoint_;
  std::unique_ptr<Coordinator> coordinator_;
  StatusSnapshotPublisher* snapshots_ = nullptr;
  ControlCommandBridge* bridge_ = nullptr;
  std::function<void(nlohmann::json&)> decorate_;
  SystemClock publish_clock_;
  LogRateLimiter reserved_ids_;
  int64_t last_publish_us_ = 0;    // how long the last PublishStatus took
  bool operator_request_ = false;  // Drain handled one: publish now  // messages from a socket
                                   // posing as a REST command
};

}  // namespace keyflow
