// MemoryCgroup: a memory cgroup of one integration test, with a memory limit and no swap, so
// that a process in it which needs more memory is ended by the kernel's OOM killer. cgroup v1's
// memory hierarchy (/sys/fs/cgroup/memory) where it is mounted, else cgroup v2 with the memory
// controller (/sys/fs/cgroup). Created directly under the hierarchy's root, which needs root.
// RAII: the destructor SIGKILLs the processes still in it (the test's own: it moved them in),
// waits until it is empty and removes it.
//
// Used by tests/integration/liveness_reports_test.cc (a worker ended by the OOM killer).
// Threading: one test thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace keyflow::test {

class MemoryCgroup {
 public:
  // A new cgroup `name` (a plain directory name) limited to `limit_bytes`. FailedPrecondition
  // saying why when none can be created here (not root, no memory controller, a read-only
  // /sys/fs/cgroup): the caller skips its test with that sentence.
  static Result<std::unique_ptr<MemoryCgroup>> Create(const std::string& name, int64_t limit_bytes);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  int version() const { return version_; }           // 1 or 2
  const std::string& name() const { return name_; }  // its path in the hierarchy: "/NAME"
  // Writing a pid here moves that process (and the children it starts later) into the cgroup.
  std::string procs_file() const { return dir_ + "/cgroup.procs"; }

 private:
  MemoryCgroup(int version, std::string dir, std::string name)
      : version_(version), dir_(std::move(dir)), name_(std::move(name)) {}

  int version_;
  std::string dir_;
  std::string name_;
};

}  // namespace keyflow::test
