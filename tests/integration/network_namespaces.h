// NetworkNamespaces: N Linux network namespaces on one private LAN, standing in for N hosts in
// multi-host tests (root and iproute2's `ip netns`; no netem). Namespace 0 holds a bridge with
// address 10.77.0.1/24; namespace i (i > 0) is connected to it by a veth pair and has
// 10.77.0.(i+1)/24. Every link is created inside the namespaces, so the host's own network is
// never touched and concurrent runs do not collide (names are unique per process and call).
//
// RAII: the destructor deletes the namespaces (kill the processes inside first: a namespace
// with live processes lingers until they exit). Requires root and iproute2; Create() returns
// FailedPrecondition when namespaces cannot be made at all (tests turn that into GTEST_SKIP),
// Internal when a later step fails.
//
// Threading: one test thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace keyflow::test {

class NetworkNamespaces {
 public:
  static Result<std::unique_ptr<NetworkNamespaces>> Create(int count);
  ~NetworkNamespaces();
  NetworkNamespaces(const NetworkNamespaces&) = delete;
  NetworkNamespaces& operator=(const NetworkNamespaces&) = delete;

  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int i) const { return names_[static_cast<size_t>(i)]; }
  // The IPv4 address of namespace i on the shared LAN.
  std::string address(int i) const { return "10.77.0." + std::to_string(i + 1); }
  // Command prefix that runs a program inside namespace i.
  std::vector<std::string> Exec(int i) const { return {"ip", "netns", "exec", name(i)}; }

 private:
  NetworkNamespaces() = default;
  Status Run(const std::vector<std::string>& argv);

  std::vector<std::string> names_;  // created so far (deleted by the destructor)
};

}  // namespace keyflow::test
