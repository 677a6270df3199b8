// ControlPlaneSocketOptions: the settings of every control-plane socket — the coordinator's
// ROUTER (coordinator/control_server), each worker's DEALER (worker/worker_process) and the
// CLI's DEALER (coordinator/cli/control_client). They all start from this one function, so a
// setting that must hold for the whole control plane (the message-size limit today; CURVE keys
// and the ZAP domain when the control plane gets authentication) is made in exactly one place.
// Callers then set what is specific to their role (queue limits, ZMQ_IMMEDIATE).
#pragma once

#include "common/protocol/control_messages.h"
#include "common/transport/zmq_socket.h"

namespace keyflow {

// Inbound control messages above kMaxControlMessageBytes drop the sender's connection in
// ZeroMQ, before they are buffered; the decoder refuses the same size (control_messages.h).
inline SocketOptions ControlPlaneSocketOptions() {
  SocketOptions options;
  options.max_message_bytes = static_cast<int64_t>(kMaxControlMessageBytes);
  options.io_thread_affinity = ZmqContext::kControlPlaneAffinity;
  return options;
}

}  // namespace keyflow
