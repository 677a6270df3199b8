// Native incremental snapshots of a keyed state backend (Flink's RocksIncrementalSnapshotStrategy
// and RocksDBIncrementalRestoreOperation), the seam between the worker's checkpointing and a
// backend that checkpoints its own files (RocksDB). The heap backend has none: its incremental
// checkpoints are key-group-incremental canonical snapshots (AsyncKeyedSnapshot).
//
//   task thread, barrier:    KF_ASSIGN_OR_RETURN(auto part, backend.SnapshotNative(target));
//   snapshot thread:         KF_ASSIGN_OR_RETURN(IncrementalKeyedStateHandle h, part->Write());
//   task thread, later:      backend.NotifyNativeCheckpointComplete(id) / ...Aborted(id)
//
// The synchronous part captures the state as it is at the barrier and is short (RocksDB: flush
// the memtables and create a checkpoint of hard links; no copy of data). Write() then copies the
// files the snapshot needs that the base does not hold into the shared directory (new, uniquely
// named files), the private files into the checkpoint directory, and returns the handle. The
// base is the subtask's last checkpoint that completed (NotifyNativeCheckpointComplete) and was
// written by this backend instance; without one, every file is new. A failed Write() leaves no
// file it wrote behind (best effort) and nothing of earlier checkpoints changed.
//
// Threading: SnapshotNative and the Notify calls on the task thread; Write on one snapshot
// thread, while the task thread goes on changing state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/protocol/control_messages.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

struct NativeSnapshotTarget {
  CheckpointId checkpoint{0};
  std::string checkpoint_dir;  // absolute: chk-<n>; private files go under it
  std::string shared_dir;      // absolute: <job dir>/shared (exists)
  // Prefix of private file paths, relative to checkpoint_dir: "subtask-<i>-db/".
  std::string private_prefix;
};
// A native snapshot is taken only for a checkpoint the trigger allows to be incremental;
// savepoints and `--incremental false` write the canonical full format (portable between
// backends) through SerializeKeyGroup instead.

class NativeSnapshotPart {
 public:
  virtual ~NativeSnapshotPart() = default;
  // Runs once, on the snapshot thread. Errors name the file and the sentence a user can act on
  // ("the disk of /x is full: ..."). `written_bytes` (out): bytes of new files it wrote.
  virtual Result<IncrementalKeyedStateHandle> Write(uint64_t* written_bytes) = 0;
  // The (state, key, namespace) entries of every state per key group of the snapshot's range,
  // at the barrier (exact: the backend's counters, no I/O); the checkpoint metadata's per-key-
  // group `keys` of the subtask. Their sum is the handle's total_keys.
  virtual const std::vector<uint64_t>& EntriesPerKeyGroup() const = 0;
};

// What a restore reads native state from: one old subtask's handle, with the directories its
// files are in.
struct NativeRestoreSource {
  IncrementalKeyedStateHandle handle;
  std::string checkpoint_dir;  // absolute: private files are relative to it
  std::string shared_dir;      // absolute: shared files are in it
};

}  // namespace keyflow
