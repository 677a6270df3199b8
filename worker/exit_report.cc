#include "worker/exit_report.h"

#include <unistd.h>

#include "common/transport/control_plane.h"

namespace keyflow {

Result<std::string> ReportWorkerExit(const WorkerOptions& options, const std::string& how,
                                     int64_t pid, ZmqContext* zmq, Duration timeout) {
  WorkerExitReport report;
  report.hostname = options.hostname;
  if (report.hostname.empty()) {
    char buf[256] = {};
    ::gethostname(buf, sizeof(buf) - 1);
    report.hostname = buf;
  }
  report.pid = pid;
  report.slot = options.slot;
  report.how = how;
  SocketOptions so = ControlPlaneSocketOptions();
  so.immediate = true;  // queue nothing before the connection (and its handshake) exists
  so.curve = options.security.ControlClientCurve();
  KF_ASSIGN_OR_RETURN(ZmqSocket socket, ZmqSocket::Create(*zmq, SocketType::kDealer, so));
  KF_RETURN_IF_ERROR(socket.Connect(options.coordinator));
  const std::string unreachable = "the coordinator at " + options.coordinator +
                                  " did not take the exit report within " +
                                  std::to_string(timeout.millis()) +
                                  " ms (the restarted worker reports the exit when it registers)";
  if (Status sent = socket.Send(EncodeControlMessage(report), SendOptions{.timeout = timeout});
      !sent.ok()) {
    return Unavailable(unreachable + ": " + sent.message());
  }
  zmq::message_t reply;
  if (Status got = socket.Receive(&reply, timeout); !got.ok()) {
    return Unavailable(unreachable + ": " + got.message());
  }
  KF_ASSIGN_OR_RETURN(
      ControlMessage decoded,
      DecodeControlMessage(std::string_view(static_cast<const char*>(reply.data()), reply.size()),
                           "the coordinator"));
  if (!std::holds_alternative<Reply>(decoded)) {
    return Internal("the coordinator answered the exit report with " +
                    std::string(ControlMessageName(decoded)) + " instead of a reply");
  }
  const Reply& r = std::get<Reply>(decoded);
  if (!r.ok) return FailedPrecondition("the coordinator refused the exit report: " + r.message);
  return r.message;
}

}  // namespace keyflow
