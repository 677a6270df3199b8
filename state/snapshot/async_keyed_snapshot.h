// AsyncKeyedSnapshot: a snapshot of all keyed state and timers of one subtask, written by a
// helper thread while the task thread keeps processing.
//
// The synchronous part is constructing it and installing it as the KeyGroupWriteGuard of the
// backend and the timer service: O(number of key groups), no copying. Then WriteTo() runs on
// another thread and writes the key groups in order into the snapshot file format
// (keyed_snapshot_format.h). Every key group is captured exactly once, by whichever thread
// claims it first: the writer in its ascending walk serialises it, or the task thread, just
// before it changes a key group the writer has not reached yet, copies it (each section's
// `copy`: a clone of the tables, no sorting or encoding; sections without `copy` are
// serialised there instead) and the writer serialises the copy when it gets there. So the file
// holds every key group exactly as it was at the synchronous part.
//
// A key-group-incremental snapshot writes only some key groups (`include`): the others are
// neither written nor captured (the checkpoint references their blocks in an earlier file).
//
// Threading: construct, BeforeWrite: task thread. WriteTo: one writer thread. The object must
// outlive both (uninstall it from the task thread after WriteTo returned).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/key.h"
#include "common/key_group_range.h"
#include "common/mutex.h"
#include "state/key_group_write_guard.h"
#include "state/snapshot/keyed_snapshot_format.h"

namespace keyflow {

class AsyncKeyedSnapshot final : public KeyGroupWriteGuard {
 public:
  // `sections` must stay valid and their data must only change through this guard until
  // WriteTo returned. `include` (empty: every key group) has one flag per key group of
  // `range`: only key groups with true are written.
  AsyncKeyedSnapshot(int32_t max_parallelism, KeyType key_type, KeyGroupRange range,
                     std::vector<const SnapshotSection*> sections, std::vector<bool> include = {});

  // Writes the snapshot through `sink` (e.g. a buffered file). Call once, on the writer thread.
  Result<KeyedSnapshotInfo> WriteTo(KeyedSnapshotWriter::Sink sink);
  // WriteTo into a new file `path` of `fs`, in writes of about `buffer_bytes`, then Sync and
  // Close: the file is durable when this returns OK. On failure (a full disk, EIO) the partial
  // file is removed and the error names the path. Call once, on the writer thread.
  Result<KeyedSnapshotInfo> WriteToFile(FileSystem& fs, const std::string& path,
                                        size_t buffer_bytes = size_t{1} << 20);

  // Key groups the task thread had to capture (copy or serialise) itself (for metrics).
  int64_t serialized_by_task_thread() const { return by_task_.load(std::memory_order_relaxed); }

 private:
  void SerializeBeforeWrite(int32_t index) override;
  // Claims `index` if still pending; serialises it into blocks_[index] (or, with `copy`, copies
  // it into copies_[index]). Returns false if another thread claimed it first.
  bool TryClaim(int32_t index, bool copy);
  void WaitSerialized(int32_t index);

  int32_t max_parallelism_;
  KeyType key_type_;
  KeyGroupRange range_;
  std::vector<const SnapshotSection*> sections_;
  std::vector<bool> include_;        // [index]; empty: all
  bool copyable_;                    // every section has `copy`
  std::vector<std::string> blocks_;  // [index], written by the claiming thread
  std::vector<std::vector<std::unique_ptr<KeyGroupCopy>>> copies_;  // [index][section]
  std::vector<std::vector<uint64_t>> counts_;                       // [index][section]
  // Guards no data (state_ is atomic): it only makes "set kSerialized, then signal" and
  // "check, then wait" atomic with respect to each other, so no wake-up is lost.
  Mutex mu_;
  CondVar serialized_;
  std::atomic<int64_t> by_task_{0};
};

}  // namespace keyflow
