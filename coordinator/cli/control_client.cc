#include "coordinator/cli/control_client.h"

namespace keyflow::cli {

Result<std::unique_ptr<ControlClient>> ControlClient::Connect(zmq::context_t* ctx,
                                                              const std::string& endpoint,
                                                              int64_t timeout_ms) {
  try {
    zmq::socket_t s(*ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::immediate, 1);  // queue nothing until the connection exists
    s.set(zmq::sockopt::sndtimeo, static_cast<int>(timeout_ms));
    s.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout_ms));
    s.connect(endpoint);
    return std::unique_ptr<ControlClient>(new ControlClient(std::move(s), endpoint, timeout_ms));
  } catch (const zmq::error_t& e) {
    return InvalidArgument("cannot use coordinator address '" + endpoint + "': " + e.what() +
                           " (expected tcp://HOST:PORT)");
  }
}

Result<Reply> ControlClient::Request(const ControlMessage& msg) {
  std::string payload = EncodeControlMessage(msg);
  std::string unreachable = "cannot reach the coordinator at " + endpoint_ + " within " +
                            std::to_string(timeout_ms_) +
                            " ms: is it running? (start a cluster with scripts/start-cluster.sh, "
                            "or pass --coordinator tcp://HOST:PORT)";
  try {
    if (!socket_.send(zmq::buffer(payload), zmq::send_flags::none)) return Unavailable(unreachable);
    zmq::message_t reply;
    if (!socket_.recv(reply, zmq::recv_flags::none)) return Unavailable(unreachable);
    auto decoded = DecodeControlMessage(
        std::string_view(static_cast<const char*>(reply.data()), reply.size()), "the coordinator");
    if (!decoded.ok()) return decoded.status();
    if (!std::holds_alternative<Reply>(*decoded)) {
      return Internal("the coordinator answered with " + std::string(ControlMessageName(*decoded)) +
                      " instead of a reply");
    }
    return std::get<Reply>(*decoded);
  } catch (const zmq::error_t& e) {
    return Unavailable(unreachable + " (" + e.what() + ")");
  }
}

}  // namespace keyflow::cli
