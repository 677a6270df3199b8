// ControlClient: the CLI's connection to the coordinator (a DEALER socket). One request, one
// Reply, with a timeout; an unreachable coordinator is a clear error, never a hang.
#pragma once

#include <memory>
#include <string>
#include <zmq.hpp>

#include "common/protocol/control_messages.h"
#include "common/status.h"

namespace keyflow::cli {

class ControlClient {
 public:
  // `endpoint` like tcp://127.0.0.1:6123. Does not block.
  static Result<std::unique_ptr<ControlClient>> Connect(zmq::context_t* ctx,
                                                        const std::string& endpoint,
                                                        int64_t timeout_ms);
  Result<Reply> Request(const ControlMessage& msg);

 private:
  ControlClient(zmq::socket_t s, std::string endpoint, int64_t timeout_ms)
      : socket_(std::move(s)), endpoint_(std::move(endpoint)), timeout_ms_(timeout_ms) {}
  zmq::socket_t socket_;
  std::string endpoint_;
  int64_t timeout_ms_;
};

}  // namespace keyflow::cli
