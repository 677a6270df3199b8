// Which paths a client may make the cluster use (issue 13: a client's --input, --output,
// --checkpoint-dir, --from-savepoint and savepoint --dir are read and written by the workers and
// the coordinator, which may run as another user than the client).
//
// The rule (coordinator/README.md "Paths a client may use"):
//   1. The CLI resolves every path to an absolute one and checks with access(2) that the user
//      who runs it may read --input and --from-savepoint and may create or write --output,
//      --checkpoint-dir and savepoint --dir (CheckClientMayUsePaths). It is a courtesy check of
//      an honest client: a hostile one skips it.
//   2. The coordinator, started with --allowed-path ROOT (repeatable), accepts only paths under
//      one of its roots, after the symbolic links of their existing part are resolved (so a link
//      under a root that leads out is refused); it also checks the output directory a restored
//      savepoint names (its pending results are committed there). Without --allowed-path every
//      absolute path is accepted: a single-user cluster, as the scripts start one.
//   3. Paths inside checkpoints (state files, committables) never leave their directory
//      (checkpoint/README.md); workers never need root.
//
// Used by: the CLI (`keyflow run`, `savepoint`, `stop`), the Coordinator (submit) and JobMaster
// (savepoint directories, restored savepoints). Threading: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow {

// The coordinator's --allowed-path flags made canonical (absolute, symlinks resolved).
// InvalidArgument naming the flag for an empty or relative root, or one that does not exist.
Result<std::vector<std::string>> CanonicalAllowedRoots(const std::vector<std::string>& flags);

// OK when `roots` is empty or `path` lies under one of them. `flag` names where the path came
// from ("--output"). InvalidArgument, one sentence naming the flag, the path and the roots.
Status CheckAllowedPath(std::string_view flag, const std::string& path,
                        const std::vector<std::string>& roots);

// CheckAllowedPath for every path of a submitted job: --input (unless gen:; a generator's
// hold= file), --output, --checkpoint-dir, --from-savepoint.
Status CheckAllowedJobPaths(const JobSpec& spec, const std::vector<std::string>& roots);

// CLI side (rule 1), for absolute paths: InvalidArgument naming the flag
// when the invoking user may not read `path` (and, for a directory, list it).
Status CheckUserMayRead(std::string_view flag, const std::string& path);
// ... may not create `path` as a directory or write into it (the nearest existing ancestor
// must be a writable, searchable directory).
Status CheckUserMayWriteDirectory(std::string_view flag, const std::string& path);
// Both, for the paths of `keyflow run` (input unless gen:, from-savepoint, output,
// checkpoint-dir).
Status CheckClientMayUsePaths(const JobSpec& spec);

}  // namespace keyflow
