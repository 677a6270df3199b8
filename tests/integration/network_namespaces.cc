#include "tests/integration/network_namespaces.h"

#include <unistd.h>

#include <atomic>

#include "tests/integration/child_process.h"

namespace keyflow::test {
namespace {

constexpr Duration kIpTimeout = Duration::Seconds(20);

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

Status NetworkNamespaces::Run(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv, kIpTimeout);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Internal("`" + Join(argv) + "` failed (exit " + std::to_string(r->exit_code) +
                    "): " + r->err);
  }
  return Status::Ok();
}

Result<std::unique_ptr<NetworkNamespaces>> NetworkNamespaces::Create(int count) {
  if (::geteuid() != 0) {
    return FailedPrecondition("network namespaces need root (running as uid " +
                              std::to_string(::geteuid()) + ")");
  }
  static std::atomic<int> sequence{0};
  std::string base = "kfit" + std::to_string(::getpid()) + "x" + std::to_string(sequence++);
  std::unique_ptr<NetworkNamespaces> ns(new NetworkNamespaces());
  for (int i = 0; i < count; ++i) {
    std::string name = base + "n" + std::to_string(i);
    Status added = ns->Run({"ip", "netns", "add", name});
    if (!added.ok()) {
      // The first one decides whether this machine can do it at all (no iproute2, no
      // CAP_SYS_ADMIN in a container, ...): that is a precondition, not a failure.
      if (i == 0) return FailedPrecondition(added.message());
      return added;
    }
    ns->names_.push_back(name);
    KF_RETURN_IF_ERROR(ns->Run({"ip", "-n", name, "link", "set", "lo", "up"}));
  }
  const std::string& hub = ns->name(0);
  KF_RETURN_IF_ERROR(ns->Run({"ip", "-n", hub, "link", "add", "kfbr0", "type", "bridge"}));
  KF_RETURN_IF_ERROR(
      ns->Run({"ip", "-n", hub, "addr", "add", ns->address(0) + "/24", "dev", "kfbr0"}));
  KF_RETURN_IF_ERROR(ns->Run({"ip", "-n", hub, "link", "set", "kfbr0", "up"}));
  for (int i = 1; i < count; ++i) {
    std::string port = "kfp" + std::to_string(i);
    KF_RETURN_IF_ERROR(ns->Run({"ip", "-n", hub, "link", "add", port, "type", "veth", "peer",
                                "name", "eth0", "netns", ns->name(i)}));
    KF_RETURN_IF_ERROR(ns->Run({"ip", "-n", hub, "link", "set", port, "master", "kfbr0"}));
    KF_RETURN_IF_ERROR(ns->Run({"ip", "-n", hub, "link", "set", port, "up"}));
    KF_RETURN_IF_ERROR(
        ns->Run({"ip", "-n", ns->name(i), "addr", "add", ns->address(i) + "/24", "dev", "eth0"}));
    KF_RETURN_IF_ERROR(ns->Run({"ip", "-n", ns->name(i), "link", "set", "eth0", "up"}));
  }
  return ns;
}

NetworkNamespaces::~NetworkNamespaces() {
  for (const std::string& name : names_) {
    Run({"ip", "netns", "del", name}).IgnoreError();  // best effort: veths go with them
  }
}

}  // namespace keyflow::test
