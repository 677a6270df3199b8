#include "coordinator/control_server.h"

#include <algorithm>

#include "common/clock.h"
#include "common/logging.h"

namespace keyflow {

Result<std::unique_ptr<ControlServer>> ControlServer::Bind(zmq::context_t* ctx,
                                                           const std::string& endpoint,
                                                           CoordinatorOptions options,
                                                           const Clock* wall_clock) {
  try {
    zmq::socket_t socket(*ctx, zmq::socket_type::router);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::router_mandatory, 0);  // drop messages to peers that went away
    socket.set(zmq::sockopt::maxmsgsize, int64_t{64} << 20);
    socket.set(zmq::sockopt::sndhwm, 10000);
    socket.set(zmq::sockopt::rcvhwm, 10000);
    try {
      socket.bind(endpoint);
    } catch (const zmq::error_t& e) {
      if (e.num() == EADDRINUSE) {
        return AlreadyExists("address " + endpoint +
                             " is already in use: stop the other process (another coordinator?) "
                             "or choose another --port");
      }
      return InvalidArgument("cannot bind the control endpoint " + endpoint + ": " + e.what());
    }
    std::string bound = socket.get(zmq::sockopt::last_endpoint);
    std::unique_ptr<ControlServer> server(new ControlServer(std::move(socket), bound));
    server->coordinator_ =
        std::make_unique<Coordinator>(std::move(options), server.get(), wall_clock);
    return server;
  } catch (const zmq::error_t& e) {
    return Internal(std::string("ZeroMQ error setting up the control socket: ") + e.what());
  }
}

void ControlServer::Send(const std::string& identity, const ControlMessage& msg) {
  std::string payload = EncodeControlMessage(msg);
  try {
    zmq::message_t id(identity.data(), identity.size());
    zmq::message_t body(payload.data(), payload.size());
    if (!socket_.send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return;
    (void)socket_.send(body, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    KF_LOG_WARN("control send failed type={} error={}", ControlMessageName(msg), e.what());
  }
}

void ControlServer::Drain(int64_t now_ms) {
  while (true) {
    zmq::message_t id, body;
    try {
      if (!socket_.recv(id, zmq::recv_flags::dontwait)) return;
      if (!id.more()) continue;  // malformed envelope
      (void)socket_.recv(body, zmq::recv_flags::none);
      while (body.more()) {  // extra frames are not part of the protocol: skip them
        zmq::message_t extra;
        (void)socket_.recv(extra, zmq::recv_flags::none);
        body.rebuild(0);
      }
    } catch (const zmq::error_t& e) {
      KF_LOG_WARN("control receive failed: {}", e.what());
      return;
    }
    std::string identity(static_cast<const char*>(id.data()), id.size());
    auto msg = DecodeControlMessage(
        std::string_view(static_cast<const char*>(body.data()), body.size()), "a control peer");
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
    zmq::pollitem_t items[2] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                                {nullptr, stop_fd, ZMQ_POLLIN, 0}};
    int64_t timeout = std::max<int64_t>(0, next_tick - MonotonicMillis());
    try {
      zmq::poll(items, stop_fd >= 0 ? 2 : 1, std::chrono::milliseconds(timeout));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      return Internal(std::string("poll failed: ") + e.what());
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
