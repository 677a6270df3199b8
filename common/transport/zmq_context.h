// ZmqContext: the one ZeroMQ context of a process (owns zmq::context_t and its I/O threads).
//
// Who uses it: main() of every process (worker, coordinator, tests, benchmarks) creates exactly
// one and passes it by reference to whatever opens sockets (ZmqSocket, RecordWriter, InputGate,
// the control plane). It is never a global.
//
// Lifetime: every socket opened from a context must be closed before the context is destroyed
// (zmq_ctx_term waits for open sockets, so a leaked socket would hang shutdown). The destructor
// CHECKs that no socket is still open, turning that hang into a loud failure.
//
// Threading: thread-safe, like the underlying zmq context. Sockets are not (see zmq_socket.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include <zmq.hpp>

#include "common/status.h"

namespace keyflow {

class ZmqContext {
 public:
  // `io_threads` >= 1: ZeroMQ background I/O threads (one handles ~1 GB/s).
  static Result<std::unique_ptr<ZmqContext>> Create(int io_threads = 1);

  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;
  ~ZmqContext();

  zmq::context_t& context() { return context_; }
  int io_threads() const { return io_threads_; }

  // I/O-thread affinities (ZMQ_AFFINITY masks). The control plane stays on I/O thread 0; with
  // two or more I/O threads the data plane uses the others, so that heavy data traffic (and its
  // CURVE encryption, done on the I/O threads) never delays heartbeats. With one thread both
  // share it (0 = any thread).
  static constexpr uint64_t kControlPlaneAffinity = 1;
  uint64_t data_plane_affinity() const {
    return io_threads_ < 2 ? 0 : ((uint64_t{1} << std::min(io_threads_, 63)) - 1) & ~uint64_t{1};
  }

  // A number unique within this context (names inproc endpoints such as socket monitors).
  uint64_t NextUniqueId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }
  // Number of ZmqSockets currently open on this context.
  int open_sockets() const { return open_sockets_.load(std::memory_order_acquire); }
  // True while a ZapAuthenticator serves this context (CURVE server sockets require one).
  bool zap_handler_running() const { return zap_handler_.load(std::memory_order_acquire); }

 private:
  friend class ZmqSocket;         // maintains open_sockets_
  friend class ZapAuthenticator;  // maintains zap_handler_
  ZmqContext(zmq::context_t context, int io_threads)
      : context_(std::move(context)), io_threads_(io_threads) {}

  zmq::context_t context_;
  int io_threads_;
  std::atomic<int> open_sockets_{0};
  std::atomic<bool> zap_handler_{false};
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace keyflow
