// ControlOutbox: how coordinator logic sends messages, injected so the logic is tested without
// sockets. The real one sends over the coordinator's ROUTER socket (control_server.h).
#pragma once

#include <string>

#include "common/protocol/control_messages.h"

namespace keyflow {

class ControlOutbox {
 public:
  virtual ~ControlOutbox() = default;
  // `identity` is the peer's ZeroMQ routing id. Sending never blocks; a message to a peer that
  // went away is dropped (the heartbeat timeout notices the peer).
  virtual void Send(const std::string& identity, const ControlMessage& msg) = 0;
};

}  // namespace keyflow
