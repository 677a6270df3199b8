#include "tests/integration/memory_cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/types.h"
#include "tests/integration/child_process.h"

namespace keyflow::test {
namespace {

constexpr char kV1Root[] = "/sys/fs/cgroup/memory";
constexpr char kV2Root[] = "/sys/fs/cgroup";

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Writes `value` to the control file `path`; the errno text on failure.
Status WriteControl(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value << std::flush;
  if (!out) return FailedPrecondition("cannot write '" + value + "' to " + path);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<MemoryCgroup>> MemoryCgroup::Create(const std::string& name,
                                                           int64_t limit_bytes) {
  int version = 0;
  std::string root;
  if (Exists(std::string(kV1Root) + "/memory.limit_in_bytes")) {
    version = 1;
    root = kV1Root;
  } else if (ReadFileOrEmpty(std::string(kV2Root) + "/cgroup.subtree_control").find("memory") !=
             std::string::npos) {
    version = 2;
    root = kV2Root;
  } else {
    return FailedPrecondition(
        "no memory cgroup can be created here: neither cgroup v1's memory hierarchy (" +
        std::string(kV1Root) + ") nor cgroup v2 with the memory controller enabled (" + kV2Root +
        "/cgroup.subtree_control) is mounted");
  }
  const std::string dir = root + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0) {
    return FailedPrecondition("no memory cgroup can be created here: mkdir " + dir + ": " +
                              std::strerror(errno) + " (the test needs root)");
  }
  std::unique_ptr<MemoryCgroup> cgroup(new MemoryCgroup(version, dir, "/" + name));
  const std::string limit = std::to_string(limit_bytes);
  if (version == 1) {
    KF_RETURN_IF_ERROR(WriteControl(dir + "/memory.limit_in_bytes", limit));
    // No swap: the limit is what the process gets (ignored where there is no swap accounting).
    (void)WriteControl(dir + "/memory.swappiness", "0");
    if (Exists(dir + "/memory.memsw.limit_in_bytes")) {
      (void)WriteControl(dir + "/memory.memsw.limit_in_bytes", limit);
    }
  } else {
    KF_RETURN_IF_ERROR(WriteControl(dir + "/memory.max", limit));
    if (Exists(dir + "/memory.swap.max")) (void)WriteControl(dir + "/memory.swap.max", "0");
  }
  return cgroup;
}

MemoryCgroup::~MemoryCgroup() {
  // Everything in it was put there by the test (and started by what it put there).
  Status removed = WaitUntil(
      [&] {
        std::istringstream procs(ReadFileOrEmpty(procs_file()));
        bool empty = true;
        for (long pid = 0; procs >> pid;) {
          empty = false;
          ::kill(static_cast<pid_t>(pid), SIGKILL);
        }
        return empty && ::rmdir(dir_.c_str()) == 0;
      },
      Duration::Seconds(20), "the processes of cgroup " + name_ + " to end");
  if (!removed.ok()) {
    std::cerr << "[ keyflow ] could not remove the test's memory cgroup " << dir_ << ": "
              << removed.message() << " (" << std::strerror(errno) << ")\n";
  }
}

}  // namespace keyflow::test
