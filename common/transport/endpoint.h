// TCP endpoints: parsing "tcp://host:port" and the bind-vs-advertise split.
//
// A process binds one address (often tcp://0.0.0.0:* — every interface, an ephemeral port) and
// advertises another (tcp://10.0.0.2:<the real port>) that its peers can reach. Nothing here
// assumes localhost. Used by the data plane (InputGate) and the control plane.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace keyflow {

struct TcpEndpoint {
  std::string host;   // name, IPv4 address, or IPv6 address without brackets
  uint16_t port = 0;  // 0 = ephemeral ("*")

  // "tcp://host:port" (IPv6 hosts in brackets; port 0 renders as "*").
  std::string ToString() const;
  friend bool operator==(const TcpEndpoint&, const TcpEndpoint&) = default;
};

// Parses "tcp://<host>:<port>" or "tcp://<host>:*"; "[::1]" style IPv6 hosts are accepted.
Result<TcpEndpoint> ParseTcpEndpoint(std::string_view endpoint);

// The endpoint peers connect to: the port of `bound_endpoint` (as returned by
// ZmqSocket::BindEphemeral / LastEndpoint) on `advertised_host`.
// AdvertisedEndpoint("tcp://0.0.0.0:41873", "10.0.0.2") == "tcp://10.0.0.2:41873".
// InvalidArgument if `bound_endpoint` is not a tcp endpoint with a concrete port.
Result<std::string> AdvertisedEndpoint(std::string_view bound_endpoint,
                                       std::string_view advertised_host);

// True for "localhost", an IPv4 address in 127.0.0.0/8 and "::1": only this machine can reach
// a port bound there. False for everything else, 0.0.0.0 and "::" included.
bool IsLoopbackHost(std::string_view host);

}  // namespace keyflow
