#include "common/transport/endpoint.h"

#include <arpa/inet.h>

#include <charconv>

namespace keyflow {

std::string TcpEndpoint::ToString() const {
  std::string s = "tcp://";
  if (host.find(':') != std::string::npos) {
    s += "[" + host + "]";
  } else {
    s += host;
  }
  s += ":";
  s += port == 0 ? std::string("*") : std::to_string(port);
  return s;
}

Result<TcpEndpoint> ParseTcpEndpoint(std::string_view endpoint) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("invalid endpoint '" + std::string(endpoint) + "': " + std::string(why) +
                           " (expected tcp://<host>:<port> or tcp://<host>:*)");
  };
  constexpr std::string_view kScheme = "tcp://";
  if (endpoint.substr(0, kScheme.size()) != kScheme) return bad("not a tcp:// endpoint");
  std::string_view rest = endpoint.substr(kScheme.size());
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = rest.substr(0, colon);
  std::string_view port = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return bad("no host");
  TcpEndpoint out;
  out.host = std::string(host);
  if (port == "*" || port == "0") return out;
  uint32_t value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535) {
    return bad("port must be 1..65535 or *");
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

Result<std::string> AdvertisedEndpoint(std::string_view bound_endpoint,
                                       std::string_view advertised_host) {
  KF_ASSIGN_OR_RETURN(TcpEndpoint bound, ParseTcpEndpoint(bound_endpoint));
  if (bound.port == 0) {
    return InvalidArgument("cannot advertise '" + std::string(bound_endpoint) +
                           "': it has no concrete port yet (bind it first)");
  }
  if (advertised_host.empty()) return InvalidArgument("the advertised host is empty");
  return TcpEndpoint{std::string(advertised_host), bound.port}.ToString();
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace keyflow
