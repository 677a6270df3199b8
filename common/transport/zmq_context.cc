#include "common/transport/zmq_context.h"

#include <string>

namespace keyflow {

Result<std::unique_ptr<ZmqContext>> ZmqContext::Create(int io_threads) {
  if (io_threads < 1) {
    return InvalidArgument("ZeroMQ I/O threads must be >= 1, got " + std::to_string(io_threads));
  }
  try {
    zmq::context_t context(io_threads);
    return std::unique_ptr<ZmqContext>(new ZmqContext(std::move(context), io_threads));
  } catch (const zmq::error_t& e) {
    return IoError(std::string("cannot create the ZeroMQ context: ") + e.what());
  }
}

ZmqContext::~ZmqContext() {
  KF_CHECK_EQ(open_sockets(), 0)
      << "ZmqContext destroyed while sockets are still open: destroy "
         "every socket (RecordWriter, InputGate, ...) before the context";
}

}  // namespace keyflow

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer builds (KEYFLOW_SANITIZE=thread): libzmq is not instrumented, so TSan cannot
// see its lock-free queues and reports every message buffer handed between a ZeroMQ I/O thread
// and a socket's thread as a race — and the report machinery slows the data plane down ~1000x.
// Ignore accesses made from inside libzmq; our own code stays fully checked. Linked into every
// binary that creates a ZmqContext (this object file).
extern "C" const char* __tsan_default_suppressions() {
  // CURVE: libzmq's I/O thread decrypts with libsodium into the buffers it then hands over, so
  // libsodium's writes (seen through TSan's memmove interceptor) need the same treatment.
  return "called_from_lib:libzmq.so.5\n"
         "race:libzmq.so\n"
         "called_from_lib:libsodium.so.23\n"
         "race:libsodium.so\n";
}
#endif
