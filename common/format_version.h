// The one sentence for a file whose format version this build does not read (checkpoint/README.md
// "Format versions: corruption or version skew"). Used by every versioned format of a checkpoint:
// `_metadata` (checkpoint/), canonical keyed-state snapshots (state/snapshot/) and native RocksDB
// snapshots (state/rocksdb/). Call it only after the bytes that hold the version passed their
// checksum: a version field that fails its checksum is Corruption, not a version skew.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace keyflow {

// FailedPrecondition (a restart cannot help; an earlier checkpoint is not used automatically):
// "<what> was written in format version 4, which this keyflow cannot read (it reads format
// versions 1 to 3); restore it with a keyflow that reads format version 4, or from an earlier
// checkpoint or savepoint". Precondition: oldest <= newest.
inline Status UnreadableFormatVersion(const std::string& what, uint64_t found, uint32_t oldest,
                                      uint32_t newest) {
  const std::string reads =
      oldest == newest ? "version " + std::to_string(newest)
      : oldest + 1 == newest
          ? "versions " + std::to_string(oldest) + " and " + std::to_string(newest)
          : "versions " + std::to_string(oldest) + " to " + std::to_string(newest);
  return FailedPrecondition(what + " was written in format version " + std::to_string(found) +
                            ", which this keyflow cannot read (it reads format " + reads +
                            "); restore it with a keyflow that reads format version " +
                            std::to_string(found) + ", or from an earlier checkpoint or savepoint");
}

}  // namespace keyflow
