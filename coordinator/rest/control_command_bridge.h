// ControlCommandBridge: how a REST handler (an HTTP thread) asks the control loop to do what an
// operator's CLI request does (cancel, savepoint, stop, rescale, log level). The handler submits
// a ControlMessage with the caller's identity and waits (bounded) for the Coordinator's Reply;
// the control loop polls fd(), takes the pending commands and feeds each into
// Coordinator::OnMessage as a message from the peer "rest:<n>" with an operator identity, so
// the role checks, job-record bookkeeping and replies are exactly the CLI's. ControlServer::Send
// hands a message addressed to "rest:<n>" back to the waiting handler instead of the socket.
//
// Threading: Submit from HTTP threads; TakePending / Complete on the control loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/protocol/control_messages.h"
#include "common/security/identity.h"
#include "common/status.h"

namespace keyflow {

class ControlCommandBridge {
 public:
  // Who asked: the operator identity the REST layer authenticated (by its token) and the
  // HTTP client's address, handed to the Coordinator as the ControlPeer.
  struct Caller {
    std::optional<PeerIdentity> identity;
    std::string address;
  };
  struct Pending {
    std::string connection;  // "rest:<n>": the peer the Coordinator replies to
    ControlMessage message;
    Caller caller;
  };

  // An eventfd; throws nothing — InternalError as a Status if it cannot be made.
  static Result<std::unique_ptr<ControlCommandBridge>> Create();
  ~ControlCommandBridge();

  // Queues `msg` and waits up to `timeout` for the Coordinator's Reply. DeadlineExceeded with a
  // sentence if the control loop does not answer in time (the command may still run: say so).
  // After Close(): Unavailable at once.
  Result<Reply> Submit(ControlMessage msg, Caller caller, std::chrono::milliseconds timeout);
  // The coordinator is stopping: every waiting Submit returns Unavailable now, later ones too.
  void Close();

  // Readable while commands are pending (for zmq_poll).
  int fd() const { return fd_; }
  // Control loop: the pending commands (drains fd()).
  std::vector<Pending> TakePending();
  // Control loop: true if `connection` is a bridge peer ("rest:" prefix); then the reply is
  // handed to its waiting Submit (a late reply after a timeout is dropped).
  static bool IsBridgePeer(const std::string& connection);
  void Complete(const std::string& connection, Reply reply);

 private:
  explicit ControlCommandBridge(int fd) : fd_(fd) {}
  int fd_;
  // Implementation detail of the waiting side (rest_server helper decides).
  struct Waiter;
  Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Waiter>> waiting_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace keyflow
