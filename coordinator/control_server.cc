#include "coordinator/control_server.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/logging/logging.h"
#include "common/transport/control_plane.h"

namespace keyflow {
namespace {

// Requests the CLI sends (an insecure connection has no role to tell).
bool IsOperatorRequest(const ControlMessage& msg) {
  return std::holds_alternative<StatusRequest>(msg) || std::holds_alternative<CancelJob>(msg) ||
         std::holds_alternative<StopJob>(msg) || std::holds_alternative<CheckpointRequest>(msg) ||
         std::holds_alternative<RescaleRequest>(msg) || std::holds_alternative<SubmitJob>(msg);
}

// The IP address of the connection a message came from ("" if ZeroMQ does not know it).
std::string PeerAddress(const zmq::message_t& msg) {
  const char* address = zmq_msg_gets(const_cast<zmq_msg_t*>(msg.handle()), "Peer-Address");
  return address == nullptr ? std::string() : std::string(address);
}

}  // namespace

Result<std::unique_ptr<ControlServer>> ControlServer::Bind(ZmqContext& ctx,
                                                           const std::string& endpoint,
                                                           CoordinatorOptions options,
                                                           const Clock* wall_clock) {
  SocketOptions so = ControlPlaneSocketOptions();
  // Replies to a peer that went away are dropped (a ROUTER's default: no ZMQ_ROUTER_MANDATORY).
  so.send_high_water_mark = 10000;
  so.receive_high_water_mark = 10000;
  std::unique_ptr<ZapAuthenticator> zap;
  if (options.security.enabled) {
    if (options.trusted_keys == nullptr) {
      KF_ASSIGN_OR_RETURN(options.trusted_keys, TrustedKeyStore::Load(options.security.keys));
    }
    KF_ASSIGN_OR_RETURN(zap, ZapAuthenticator::Start(ctx, options.trusted_keys->Policy()));
    so.curve = options.security.ControlServerCurve();
    so.track_connections = true;  // counts failed handshakes (a client without a key)
  }
  KF_ASSIGN_OR_RETURN(ZmqSocket socket, ZmqSocket::Create(ctx, SocketType::kRouter, so));
  if (Status bound = socket.Bind(endpoint); !bound.ok()) {
    if (bound.code() == StatusCode::kAlreadyExists) {
      return AlreadyExists("address " + endpoint +
                           " is already in use: stop the other process (another coordinator?) "
                           "or choose another --port");
    }
    return bound;  // a malformed endpoint or an address not of this host, with the fix
  }
  std::string bound = socket.endpoint();
  std::unique_ptr<ControlServer> server(
      new ControlServer(std::move(zap), std::move(socket), std::move(bound)));
  server->coordinator_ =
      std::make_unique<Coordinator>(std::move(options), server.get(), wall_clock);
  return server;
}

void ControlServer::AttachRest(StatusSnapshotPublisher* snapshots, ControlCommandBridge* bridge,
                               std::function<void(nlohmann::json&)> decorate) {
  snapshots_ = snapshots;
  bridge_ = bridge;
  decorate_ = std::move(decorate);
}

void ControlServer::Send(const std::string& identity, const ControlMessage& msg) {
  if (ControlCommandBridge::IsBridgePeer(identity)) {
    // Only a Reply answers a REST command; anything else for "rest:" has no reader.
    if (bridge_ != nullptr && std::holds_alternative<Reply>(msg)) {
      bridge_->Complete(identity, std::get<Reply>(msg));
    }
    return;
  }
  std::string payload = EncodeControlMessage(msg);
  // Never waits: a ROUTER queues or drops (full queue, unknown peer) at once.
  const std::array<std::string_view, 2> parts = {identity, payload};
  Status sent = socket_.SendMultipart(parts, SendOptions{.timeout = Duration::Millis(0)});
  if (!sent.ok()) {
    KF_LOG_WARN("control send failed type={} error={}", ControlMessageName(msg), sent.message());
  }
}

void ControlServer::Drain(int64_t now_ms) {
  std::vector<zmq::message_t> parts;
  // Bounded, so that a peer flooding messages cannot keep the loop from ticking (heartbeat
  // deadlines are judged against a fresh now); the ROUTER fair-queues its peers, so the
  // registered workers' messages are among the next few read whatever one peer sends.
  for (int n = 0; n < kMaxMessagesPerDrain; ++n) {
    auto got = socket_.TryReceiveMultipart(&parts);
    if (!got.ok()) {
      KF_LOG_WARN("control receive failed: {}", got.status().message());
      return;
    }
    if (!*got) return;
    if (parts.size() < 2) continue;  // malformed envelope (a ROUTER always adds the identity)
    ControlPeer from;
    from.connection.assign(static_cast<const char*>(parts[0].data()), parts[0].size());
    // The ZAP handler's User-Id of this connection ("worker:worker-0"; "" when insecure).
    from.identity = PeerIdentity::FromUserId(PeerUserId(parts.back()));
    from.address = PeerAddress(parts.back());
    const std::string& identity = from.connection;
    if (ControlCommandBridge::IsBridgePeer(identity)) {
      // A socket that chose a REST command's routing id: its replies would reach the REST
      // caller's answer, so it is not heard (ZeroMQ's own routing ids start with a 0 byte).
      // Not answered either: the answer would go to the REST caller.
      KF_LOG_WARN_RATE_LIMITED(reserved_ids_, "reserved",
                               "dropped a control message from {} "
                               "whose routing id is reserved for REST commands",
                               from.address.empty() ? "?" : from.address);
      continue;
    }
    // Extra frames are not part of the protocol: such a message decodes as empty (an error).
    std::string_view body;
    if (parts.size() == 2) {
      body = std::string_view(static_cast<const char*>(parts[1].data()), parts[1].size());
    }
    auto msg = DecodeControlMessage(body, "a control peer");
    if (!msg.ok()) {
      coordinator_->OnUndecodable(identity, msg.status());
      continue;
    }
    coordinator_->OnMessage(from, *msg, now_ms);
    // An operator's request (status included): publish at once, so that what `keyflow status`
    // or a command's reply showed is never newer than what the REST API shows.
    if (from.identity ? from.identity->role == Role::kOperator : IsOperatorRequest(*msg)) {
      operator_request_ = true;
    }
  }
}

void ControlServer::RunRestCommands(int64_t now_ms) {
  for (ControlCommandBridge::Pending& p : bridge_->TakePending()) {
    ControlPeer from{p.connection, p.caller.identity, p.caller.address};
    coordinator_->OnMessage(from, p.message, now_ms);
  }
}

void ControlServer::PublishStatus(int64_t now_ms) {
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json status = coordinator_->StatusJson(now_ms);
  // The REST API's checkpoint history (with each subtask's acknowledgement): more than the
  // status's five recent checkpoints, and read from memory only.
  if (const JobMaster* job = coordinator_->job(); job != nullptr && status["job"].is_object()) {
    status["job"]["checkpoints"]["history"] = job->CheckpointHistoryJson();
  }
  if (decorate_) decorate_(status);
  // What building this document cost the loop (the previous one's, measured the same way).
  if (auto it = status.find("rest"); it != status.end() && it->is_object()) {
    (*it)["snapshot_build_us"] = last_publish_us_;
  }
  last_publish_us_ = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  snapshots_->Publish(std::move(status), publish_clock_.Now().millis());
}

void ControlServer::CountRefusedConnections() {
  if (zap_ == nullptr) return;
  HandshakeFailures failed = socket_.handshake_failures();
  // Every refused connection fails its handshake once: a ZAP refusal (auth), a client without a
  // key or of another mechanism (protocol), anything else (no detail).
  coordinator_->set_refused_connections(failed.total());
}

Status ControlServer::Run(int stop_fd, int reload_fd, const std::function<void()>& drain_reload) {
  KF_LOG_INFO("coordinator listening endpoint={}", endpoint_);
  Coordinator& c = *coordinator_;
  int64_t tick_ms =
      std::max<int64_t>(10, std::min<int64_t>(100, c.workers().heartbeat_timeout_ms() / 4));
  int64_t next_tick = MonotonicMillis();
  int64_t next_publish = next_tick;
  while (true) {
    // The ROUTER's monitor (secure only) is read each round: its events must not pile up.
    zmq_pollitem_t items[5] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
    size_t n = 1;
    if (stop_fd >= 0) items[n++] = {nullptr, stop_fd, ZMQ_POLLIN, 0};
    size_t reload_item = n;
    if (reload_fd >= 0) items[n++] = {nullptr, reload_fd, ZMQ_POLLIN, 0};
    size_t bridge_item = n;
    if (bridge_ != nullptr) items[n++] = {nullptr, bridge_->fd(), ZMQ_POLLIN, 0};
    if (socket_.monitor_handle() != nullptr)
      items[n++] = {socket_.monitor_handle(), 0, ZMQ_POLLIN, 0};
    int64_t wake = snapshots_ != nullptr ? std::min(next_tick, next_publish) : next_tick;
    int64_t timeout = std::max<int64_t>(0, wake - MonotonicMillis());
    // An interrupted poll (EINTR) returns 0 ready items and the loop goes on.
    auto polled = PollItems(std::span(items, n), Duration::Millis(timeout));
    if (!polled.ok()) {
      return Internal("the coordinator's control loop failed (" + polled.status().message() +
                      "): restart the coordinator; it resumes the job from its latest checkpoint");
    }
    if (stop_fd >= 0 && (items[1].revents & ZMQ_POLLIN)) {
      KF_LOG_INFO("coordinator stopping (signal)");
      c.Shutdown(MonotonicMillis());
      return Status::Ok();
    }
    int64_t now = MonotonicMillis();
    if (reload_fd >= 0 && (items[reload_item].revents & ZMQ_POLLIN)) {
      if (drain_reload) drain_reload();
      auto reloaded = c.ReloadKeys(now);
      if (!reloaded.ok()) KF_LOG_ERROR("SIGHUP: {}", reloaded.status().message());
    }
    CountRefusedConnections();
    if (items[0].revents & ZMQ_POLLIN) Drain(now);
    bool publish_now = std::exchange(operator_request_, false);
    if (bridge_ != nullptr && (items[bridge_item].revents & ZMQ_POLLIN)) {
      RunRestCommands(now);
      publish_now = true;  // the REST caller reads the command's effect at once
    }
    if (now >= next_tick) {
      c.OnTick(now);
      next_tick = now + tick_ms;
    }
    if (snapshots_ != nullptr && (publish_now || now >= next_publish)) {
      PublishStatus(now);
      next_publish = now + kPublishIntervalMs;
    }
  }
}

}  // namespace keyflow
