#include "coordinator/control_server.h"

#include <algorithm>
#include <array>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "common/transport/control_plane.h"

namespace keyflow {

Result<std::unique_ptr<ControlServer>> ControlServer::Bind(ZmqContext& ctx,
                                                           const std::string& endpoint,
                                                           CoordinatorOptions options,
                                                           const Clock* wall_clock) {
  SocketOptions so = ControlPlaneSocketOptions();
  // Replies to a peer that went away are dropped (a ROUTER's default: no ZMQ_ROUTER_MANDATORY).
  so.send_high_water_mark = 10000;
  so.receive_high_water_mark = 10000;
  ASSIGN_OR_RETURN(ZmqSocket socket, ZmqSocket::Create(ctx, SocketType::kRouter, so));
  if (Status bound = socket.Bind(endpoint); !bound.ok()) {
    if (bound.code() == StatusCode::kAlreadyExists) {
      return AlreadyExists("address " + endpoint +
                           " is already in use: stop the other process (another coordinator?) "
                           "or choose another --port");
    }
    return bound;  // a malformed endpoint or an address not of this host, with the fix
  }
  std::string bound = socket.endpoint();
  std::unique_ptr<ControlServer> server(new ControlServer(std::move(socket), std::move(bound)));
  server->coordinator_ =
      std::make_unique<Coordinator>(std::move(options), server.get(), wall_clock);
  return server;
}

void ControlServer::Send(const std::string& identity, const ControlMessage& msg) {
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
    std::string identity(static_cast<const char*>(parts[0].data()), parts[0].size());
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
    coordinator_->OnMessage(identity, *msg, now_ms);
  }
}

Status ControlServer::Run(int stop_fd) {
  KF_LOG_INFO("coordinator listening endpoint={}", endpoint_);
  Coordinator& c = *coordinator_;
  int64_t tick_ms =
      std::max<int64_t>(10, std::min<int64_t>(100, c.workers().heartbeat_timeout_ms() / 4));
  int64_t next_tick = MonotonicMillis();
  while (true) {
    zmq_pollitem_t items[2] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, stop_fd, ZMQ_POLLIN, 0}};
    int64_t timeout = std::max<int64_t>(0, next_tick - MonotonicMillis());
    // An interrupted poll (EINTR) returns 0 ready items and the loop goes on.
    auto polled = PollItems(std::span(items, stop_fd >= 0 ? 2 : 1), Duration::Millis(timeout));
    if (!polled.ok()) {
      return Internal("the coordinator's control loop failed (" + polled.status().message() +
                      "): restart the coordinator; it resumes the job from its latest checkpoint");
    }
    if (stop_fd >= 0 && (items[1].revents & ZMQ_POLLIN)) {
      KF_LOG_INFO("coordinator stopping (signal)");
      if (c.job() != nullptr && !c.job()->terminal()) {
        // Leave the job's workers in a clean state; a restarted coordinator resumes from the
        // latest checkpoint.
        c.OnMessage("", CancelJob{}, MonotonicMillis());
      }
      return Status::Ok();
    }
    int64_t now = MonotonicMillis();
    if (items[0].revents & ZMQ_POLLIN) Drain(now);
    if (now >= next_tick) {
      c.OnTick(now);
      next_tick = now + tick_ms;
    }
  }
}

}  // namespace keyflow
