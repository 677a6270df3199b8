#include "tests/integration/raw_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <utility>

#include "common/clock.h"
#include "common/transport/endpoint.h"

namespace keyflow::test {

Result<RawTcpConnection> RawTcpConnection::Connect(const std::string& endpoint) {
  KF_ASSIGN_OR_RETURN(TcpEndpoint e, ParseTcpEndpoint(endpoint));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(e.port);
  if (inet_pton(AF_INET, e.host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgument("not an IPv4 address: " + e.host);
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    ::close(fd);
    return Unavailable("connect " + endpoint + ": " + std::strerror(err));
  }
  return RawTcpConnection(fd);
}

RawTcpConnection::RawTcpConnection(RawTcpConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

RawTcpConnection& RawTcpConnection::operator=(RawTcpConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

RawTcpConnection::~RawTcpConnection() {
  Close();
}

void RawTcpConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status RawTcpConnection::Write(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Unavailable(std::string("send: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

bool RawTcpConnection::WaitForPeerClose(Duration timeout) {
  const int64_t deadline = MonotonicMillis() + timeout.millis();
  char buf[4096];
  for (;;) {
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return true;  // reset
  }
}

std::string ZmtpGreeting() {
  std::string g(64, '\0');
  g[0] = static_cast<char>(0xff);  // signature: 0xff, 8 bytes padding, 0x7f
  g[9] = 0x7f;
  g[10] = 3;  // version 3.0
  g[11] = 0;
  std::memcpy(g.data() + 12, "NULL", 4);  // mechanism, zero-padded to 20 bytes
  g[32] = 0;                              // as-server: no
  return g;
}

std::string ZmtpReady(std::string_view socket_type) {
  std::string body;
  body += static_cast<char>(5);
  body += "READY";
  constexpr std::string_view kName = "Socket-Type";
  body += static_cast<char>(kName.size());
  body += kName;
  uint32_t len = htonl(static_cast<uint32_t>(socket_type.size()));
  body.append(reinterpret_cast<const char*>(&len), 4);
  body += socket_type;
  std::string cmd;
  cmd += static_cast<char>(0x04);  // command, short size
  cmd += static_cast<char>(body.size());
  return cmd + body;
}

std::string ZmtpFrameHeader(uint64_t size) {
  std::string h;
  if (size < 256) {
    h += static_cast<char>(0x00);
    h += static_cast<char>(size);
    return h;
  }
  h += static_cast<char>(0x02);  // long size, last frame
  for (int shift = 56; shift >= 0; shift -= 8) h += static_cast<char>((size >> shift) & 0xff);
  return h;
}

std::string ZmtpHandshakeAndMessage(std::string_view socket_type, std::string_view body) {
  return ZmtpGreeting() + ZmtpReady(socket_type) + ZmtpFrameHeader(body.size()) + std::string(body);
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

Result<int64_t> ResidentBytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "NNN kB"
  }
  return NotFound("no VmRSS for pid " + std::to_string(pid));
}

}  // namespace keyflow::test
