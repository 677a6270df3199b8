// Helpers for hostile-peer tests: a raw TCP connection that writes whatever bytes the test wants
// to a keyflow port (the coordinator's control port, a worker's data port), and the few pieces
// of ZMTP 3.0 (rfc.zeromq.org/spec/23) needed to get past ZeroMQ's handshake and announce frames
// of any length — including lengths a real peer never sends.
//
// Threading: one test thread per object.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace keyflow::test {

class RawTcpConnection {
 public:
  // `endpoint`: tcp://HOST:PORT (HOST an IPv4 address).
  static Result<RawTcpConnection> Connect(const std::string& endpoint);
  RawTcpConnection(RawTcpConnection&& other) noexcept;
  RawTcpConnection& operator=(RawTcpConnection&& other) noexcept;
  RawTcpConnection(const RawTcpConnection&) = delete;
  RawTcpConnection& operator=(const RawTcpConnection&) = delete;
  ~RawTcpConnection();

  // Writes all of `bytes`; Unavailable once the peer has closed the connection.
  Status Write(std::string_view bytes);
  // Reads (and discards) until the peer closes the connection or `timeout` passes: true if it
  // closed.
  bool WaitForPeerClose(Duration timeout);
  void Close();

 private:
  explicit RawTcpConnection(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The 64-byte greeting of a ZMTP 3.0 client with the NULL mechanism.
std::string ZmtpGreeting();
// The READY command announcing `socket_type` ("PUSH", "DEALER").
std::string ZmtpReady(std::string_view socket_type);
// A message frame's header (flags and size: short form below 256 bytes, long form above).
std::string ZmtpFrameHeader(uint64_t size);
// Greeting, READY and one single-frame message carrying `body`.
std::string ZmtpHandshakeAndMessage(std::string_view socket_type, std::string_view body);
// `n` bytes from a seeded generator (deterministic per seed).
std::string RandomBytes(size_t n, uint64_t seed);

// VmRSS of process `pid` in bytes (from /proc/PID/status); an error if it cannot be read.
Result<int64_t> ResidentBytes(int pid);

}  // namespace keyflow::test
