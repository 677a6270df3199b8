// CheckpointMetadata: the `_metadata` file of a completed checkpoint or savepoint:
// what a restore needs, written by the coordinator only after every subtask acknowledged.
// A checkpoint whose metadata was not written (or does not verify) does not exist.
//
// Byte format (versioned, checksummed; documented in checkpoint/README.md):
//   magic "KFCKPT01" | u32 format version | u64 length of body | body | u64 XXH3-64
// where the XXH3-64 covers every byte before it (header and body) and the body is
// BinaryWriter-encoded fields (see README), the JobSpec embedded as a cereal binary blob. Paths
// of state files are stored relative to the checkpoint directory, so a savepoint directory can
// be moved. Old versions stay readable: tests/checkpoint/testdata holds a golden file.
//
// Used by: CheckpointCoordinator (writes), CheckpointStorage (reads, lists), StateAssignment
// (restore planning), `keyflow checkpoint inspect`. Threading: plain value type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/protocol/control_messages.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

// A shared file name as SharedStateFile requires: non-empty, [A-Za-z0-9._-]+, not "." or "..".
bool IsValidSharedFileName(std::string_view name);
// InvalidArgument naming `what` when !IsValidSharedFileName(name).
Status CheckSharedFileName(std::string_view name, std::string_view what);

// 2: incremental checkpoints (issue 11): shared files / block_file of KeyGroupsStateHandle,
// native (RocksDB) handles and written bytes per subtask. Version 1 is still read.
inline constexpr uint32_t kCheckpointMetadataVersion = 2;
inline constexpr uint32_t kOldestCheckpointMetadataVersion = 1;
inline constexpr std::string_view kCheckpointMetadataMagic = "KFCKPT01";

struct SubtaskCheckpointState {
  SubtaskIndex subtask{0};
  // Path relative to the checkpoint directory; a key-group-incremental handle names shared
  // files instead (control_messages.h). With native_state it holds only the timers.
  KeyGroupsStateHandle keyed_state;
  std::optional<IncrementalKeyedStateHandle> native_state;  // version >= 2
  // Bytes this checkpoint wrote for the subtask (version >= 2; a version-1 file: the size of
  // its full state file).
  uint64_t written_bytes = 0;
  // Every file of the job's shared directory this subtask's state references (key-group-
  // incremental blocks and native SST files), each name once, in first-reference order.
  std::vector<SharedStateFile> SharedFiles() const;
  // Bytes of every file the subtask's state consists of (its full file, or the distinct shared
  // files plus the native private files): what a restore reads at most.
  uint64_t StateBytes() const;
};

// The per-subtask part of CheckpointMetadata::Validate (handle, native handle, names) for a
// subtask owning `range`; also what the coordinator checks an acknowledgement against.
Status ValidateSubtaskState(const SubtaskCheckpointState& s, const KeyGroupRange& range,
                            bool savepoint);

struct CheckpointMetadata {
  std::string job_id;
  CheckpointId id{0};
  int64_t timestamp_ms = 0;  // trigger time (wall clock)
  int64_t completed_ms = 0;  // completion time (wall clock)
  bool savepoint = false;
  bool final = false;        // taken after every subtask's input ended
  AttemptNumber attempt{0};  // deployment attempt that took it
  JobSpec spec;              // the job as running (parallelism and max parallelism resolved)
  std::vector<SubtaskCheckpointState> subtasks;        // one per subtask, by index
  std::map<std::string, std::string> split_positions;  // union over subtasks: split id -> state
  std::vector<std::string> sink_committables;          // union over subtasks (encoded)

  int32_t max_parallelism() const { return spec.max_parallelism; }
  int32_t parallelism() const { return spec.parallelism; }
  // Sum of the subtasks' StateBytes(): the full size of the state the checkpoint references.
  uint64_t TotalStateBytes() const;
  // Sum of the subtasks' written_bytes: what this checkpoint wrote (incremental size).
  uint64_t TotalWrittenBytes() const;
  // Every shared file the checkpoint references (each name once): SharedStateRegistry.
  std::vector<SharedStateFile> SharedFiles() const;
  // "checkpoint", "savepoint" or "final" (a final checkpoint).
  std::string_view TypeName() const;

  // Precondition: Validate().ok() (checked).
  std::string Encode() const;
  // Corruption naming `source` for bad magic, a checksum mismatch, truncation or malformed
  // fields (including fields that fail Validate); FailedPrecondition for an intact file of an
  // unsupported version. Never crashes and never allocates more than the input's size on
  // garbage.
  static Result<CheckpointMetadata> Decode(std::string_view bytes, std::string_view source);

  // The invariants every metadata file holds, so readers (restore planning, inspect) can rely
  // on them: id >= 1; 1 <= parallelism <= max parallelism <= 32768; exactly one subtask state
  // per subtask index, in order; subtask i's handle covers Flink's key-group range of i, with
  // one offset, length, key count and timer count per key group, every block inside its
  // file. A full handle: the path is relative, non-empty and has no ".." (CheckRelativePath).
  // A key-group-incremental handle: no path, shared files, one valid block_file index per key
  // group. Shared file names are plain names (IsValidSharedFileName), so they resolve inside
  // <job dir>/shared; the same name always has the same size and checksum. A native handle:
  // backend "rocksdb", the subtask's range, private paths pass CheckRelativePath; either every
  // subtask has one or none. A savepoint references no shared file (it is self-contained).
  // InvalidArgument saying which one is broken.
  Status Validate() const;
};

}  // namespace keyflow
