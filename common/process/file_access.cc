#include "common/process/file_access.h"

#include <sys/stat.h>

#include <atomic>

#include "common/process/command_line.h"

namespace keyflow {
namespace {
std::atomic<FileAccess> g_access{FileAccess::kPrivate};
}  // namespace

void ApplyFileAccess(FileAccess access) {
  const mode_t inherited = ::umask(0777);  // read it; set below
  ::umask(UmaskFor(access, inherited));
  g_access.store(access);
}

FileAccess ProcessFileAccess() {
  return g_access.load();
}

namespace cli {
void AddFileAccessFlag(po::options_description& opts, bool* group_readable) {
  opts.add_options()(
      "group-readable", po::bool_switch(group_readable),
      "let the group read what this process writes (files 0640, directories 0750: logs, "
      "output, RocksDB state; the group is the directory's when it is setgid, as "
      "scripts/start-cluster.sh --group makes it); default: only this user (0600, 0700). "
      "Others never read anything");
}
}  // namespace cli

}  // namespace keyflow
