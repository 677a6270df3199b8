#include "common/transport/zap_authenticator.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/logging/logging.h"

namespace keyflow {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr std::string_view kZapVersion = "1.0";

std::string_view View(const zmq::message_t& m) {
  return {static_cast<const char*>(m.data()), m.size()};
}

}  // namespace

Result<std::unique_ptr<ZapAuthenticator>> ZapAuthenticator::Start(ZmqContext& context,
                                                                  ZapPolicy policy) {
  if (context.zap_handler_running()) {
    return FailedPrecondition("a ZAP handler already runs on this ZeroMQ context");
  }
  SocketOptions options;
  options.send_high_water_mark = 1000;
  options.receive_high_water_mark = 1000;
  KF_ASSIGN_OR_RETURN(ZmqSocket socket, ZmqSocket::Create(context, SocketType::kRep, options));
  KF_RETURN_IF_ERROR_CTX(socket.Bind(kZapEndpoint), "cannot start the ZAP handler");
  const int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    return IoError(std::string("cannot create the ZAP handler's eventfd: ") + std::strerror(errno));
  }
  std::unique_ptr<ZapAuthenticator> auth(
      new ZapAuthenticator(context, std::move(socket), std::move(policy), stop_fd));
  context.zap_handler_.store(true, std::memory_order_release);
  auth->thread_ = std::thread([a = auth.get()] { a->Run(); });
  return auth;
}

ZapAuthenticator::ZapAuthenticator(ZmqContext& context, ZmqSocket socket, ZapPolicy policy,
                                   int stop_fd)
    : context_(context),
      socket_(std::move(socket)),
      policy_(std::move(policy)),
      stop_fd_(stop_fd) {}

ZapAuthenticator::~ZapAuthenticator() {
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof(one)) != sizeof(one)) {
    KF_LOG_ERROR("cannot wake the ZAP handler thread: {}", std::strerror(errno));
  }
  if (thread_.joinable()) thread_.join();
  socket_.Close();
  ::close(stop_fd_);
  context_.zap_handler_.store(false, std::memory_order_release);
}

ZapCounts ZapAuthenticator::counts(std::string_view domain) const {
  MutexLock lock(&mu_);
  auto it = counts_.find(domain);
  return it == counts_.end() ? ZapCounts{} : it->second;
}

void ZapAuthenticator::Run() {
  std::vector<zmq::message_t> request;
  for (;;) {
    zmq_pollitem_t items[2] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, stop_fd_, ZMQ_POLLIN, 0}};
    Result<int> ready = PollItems(items, Duration::Millis(-1));
    if (!ready.ok()) {
      KF_LOG_ERROR("the ZAP handler stops: {}", ready.status().message());
      return;
    }
    if ((items[1].revents & ZMQ_POLLIN) != 0) return;
    if ((items[0].revents & ZMQ_POLLIN) == 0) continue;
    Result<bool> got = socket_.TryReceiveMultipart(&request);
    if (!got.ok()) {
      KF_LOG_ERROR("the ZAP handler stops: {}", got.status().message());
      return;
    }
    if (*got) Answer(request);
  }
}

void ZapAuthenticator::Answer(std::vector<zmq::message_t>& request) {
  // Request: version, request id, domain, address, routing id, mechanism, credentials...
  // Reply:   version, request id, status code, status text, user id, metadata.
  const std::string request_id = request.size() > 1 ? std::string(View(request[1])) : "";
  ZapDecision decision;
  ZapRequest r;
  if (request.size() < 6 || View(request[0]) != kZapVersion) {
    decision = ZapDecision::Refuse("malformed ZAP request");
  } else {
    r.domain = std::string(View(request[2]));
    r.address = std::string(View(request[3]));
    r.mechanism = std::string(View(request[5]));
    if (r.mechanism != "CURVE" || request.size() != 7 || request[6].size() != 32) {
      decision = ZapDecision::Refuse("a " + r.mechanism + " connection where CURVE is required");
    } else {
      char z85[kZ85KeySize + 1];
      zmq_z85_encode(z85, static_cast<const uint8_t*>(request[6].data()), 32);
      r.client_public_key.assign(z85, kZ85KeySize);
      decision = policy_(r);
    }
  }
  {
    MutexLock lock(&mu_);
    ZapCounts& c = counts_[r.domain];
    ++(decision.admitted ? c.admitted : c.refused);
  }
  const std::string code = decision.admitted ? "200" : "400";
  const std::string text = decision.admitted ? "OK" : decision.reason;
  const std::string_view parts[] = {kZapVersion, request_id, code, text, decision.user_id, ""};
  if (Status s = socket_.SendMultipart(parts, SendOptions{.timeout = Duration::Seconds(1)});
      !s.ok()) {
    KF_LOG_ERROR("the ZAP handler could not answer a handshake: {}", s.message());
  }
}

}  // namespace keyflow
