// ZapAuthenticator: the ZAP handler (ZeroMQ RFC 27) of one process. Every CURVE server socket of
// the process's ZmqContext asks it, once per connection handshake, whether to admit the client
// key; the answer is the ZapPolicy's. An admitted connection carries the decision's user id
// ("worker:worker-0"), which the receiver reads from each message with PeerUserId
// (common/transport/zmq_socket.h) and PeerIdentity::FromUserId (identity.h).
//
// The policy decides per (ZAP domain, peer address, client key): the coordinator's policy looks
// the key up in its TrustedKeys (reloadable); a worker's data-plane policy admits only the keys of
// the peers of its current deployment. Policies also log refusals (rate-limited): the
// authenticator itself only counts them per domain.
//
// Lifetime: Start() binds the ZAP endpoint before it returns, so sockets created afterwards are
// covered; the authenticator must outlive every CURVE server socket of the context (declare it
// right after the ZmqContext). One per context: a second Start() is FailedPrecondition.
//
// Threading: the policy runs on the authenticator's own thread (one request at a time) and must
// be thread-safe with respect to whatever it reads; counts() may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"
#include "common/transport/zmq_context.h"
#include "common/transport/zmq_socket.h"

namespace keyflow {

struct ZapRequest {
  std::string domain;             // the server socket's ZAP domain, e.g. "control"
  std::string address;            // the peer's IP address
  std::string mechanism;          // "CURVE" (NULL/PLAIN requests are refused before the policy)
  std::string client_public_key;  // Z85
};

struct ZapDecision {
  bool admitted = false;
  std::string user_id;  // admitted: the connection's User-Id
  std::string reason;   // refused: why, for the log ("unknown key", "a worker key on ...")

  static ZapDecision Admit(std::string user_id) { return {true, std::move(user_id), ""}; }
  static ZapDecision Refuse(std::string reason) { return {false, "", std::move(reason)}; }
};

using ZapPolicy = std::function<ZapDecision(const ZapRequest&)>;

struct ZapCounts {
  uint64_t admitted = 0;
  uint64_t refused = 0;
};

class ZapAuthenticator {
 public:
  static Result<std::unique_ptr<ZapAuthenticator>> Start(ZmqContext& context, ZapPolicy policy);

  ZapAuthenticator(const ZapAuthenticator&) = delete;
  ZapAuthenticator& operator=(const ZapAuthenticator&) = delete;
  ~ZapAuthenticator();  // stops and joins the thread, unbinds the ZAP endpoint

  // Handshakes decided so far for `domain`.
  ZapCounts counts(std::string_view domain) const;

 private:
  ZapAuthenticator(ZmqContext& context, ZmqSocket socket, ZapPolicy policy, int stop_fd);
  void Run();
  // Answers one request (the frames of a ZAP request); false for a malformed one.
  void Answer(std::vector<zmq::message_t>& request);

  ZmqContext& context_;
  ZmqSocket socket_;  // REP on inproc://zeromq.zap.01; used only by thread_ after Start
  ZapPolicy policy_;
  int stop_fd_;  // eventfd: readable when the destructor asks the thread to stop
  mutable Mutex mu_;
  std::map<std::string, ZapCounts, std::less<>> counts_ ABSL_GUARDED_BY(mu_);  // by domain
  std::thread thread_;
};

}  // namespace keyflow
