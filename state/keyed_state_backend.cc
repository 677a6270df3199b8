// Default native-snapshot operations of a backend that has none (the heap). Out of line so the
// SDK's keyed_state_backend.h needs only forward declarations of the native-snapshot types.
#include "state/keyed_state_backend.h"

#include "state/snapshot/native_snapshot.h"

namespace keyflow {

Result<std::unique_ptr<NativeSnapshotPart>> KeyedStateBackend::SnapshotNative(
    const NativeSnapshotTarget& target) {
  (void)target;
  return Unimplemented(std::string(backend_name()) + " state has no native snapshots");
}

Status KeyedStateBackend::RestoreNative(const std::vector<NativeRestoreSource>& sources) {
  (void)sources;
  return Unimplemented(std::string(backend_name()) + " state cannot restore native snapshots");
}

}  // namespace keyflow
