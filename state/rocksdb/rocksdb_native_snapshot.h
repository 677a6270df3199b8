// The RocksDB backend's native incremental snapshots (state/snapshot/native_snapshot.h; format:
// state/rocksdb/README.md): what the synchronous part hands the snapshot thread, the record of
// which SST files this backend instance uploaded, and the file helpers restore shares.
//
//   task thread:      the barrier's states, counters and dirty cached rows    -> LocalSnapshot,
//                                                                                DeferredSync
//   snapshot thread:  MakeSnapshotPart(local, fs, uploaded, deferred)->Write(&bytes):
//                     deferred->Run() (rows, flush, RocksDB Checkpoint of hard links into
//                     <backend dir>/chk-<n>), then the uploads                  -> handle
//   task thread:      uploaded->Complete(n) / Abort(n)
//
// Threading: UploadedFiles and DeferredSync are thread-safe; a NativeSnapshotPart runs on one
// thread; the other functions are pure or touch only the files they are given.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <absl/functional/any_invocable.h>

#include "common/file_system.h"
#include "common/key_group_range.h"
#include "common/mutex.h"
#include "common/protocol/control_messages.h"
#include "common/status.h"
#include "common/types.h"
#include "state/snapshot/native_snapshot.h"
#include "state/state_descriptor.h"

namespace keyflow::rocksdb_native {

inline constexpr char kBackend[] = "rocksdb";
inline constexpr uint32_t kFormatVersion = 1;
// The private file with the snapshot's states (names, kinds, declared types) and their entry
// counts per key group: restores validate registrations and set the counters without a scan.
inline constexpr char kStatesFile[] = "KEYFLOW-STATES";

// One state of a snapshot, as KEYFLOW-STATES records it.
struct SnapshotState {
  std::string name;
  StateKind kind = StateKind::kValue;
  std::string type_description;
  std::vector<int64_t> counts;  // entries per key group of the handle's range
};
std::string EncodeStates(const std::vector<SnapshotState>& states);
// Corruption naming `file` when the bytes are malformed or not for `num_key_groups` groups;
// FailedPrecondition (common/format_version.h) for another version. Precondition: the file
// passed its checksum, so that a version field that differs is a version skew.
Result<std::vector<SnapshotState>> DecodeStates(std::string_view bytes, int32_t num_key_groups,
                                                const std::string& file);

using SstFiles = std::map<uint64_t, SharedStateFile>;  // SST file number -> its shared file

// Which SST files this backend instance uploaded, per pending checkpoint, and the base: those
// of its last checkpoint that completed.
class UploadedFiles {
 public:
  SstFiles Base() const;
  void AddPending(CheckpointId id, SstFiles files);
  // A pending checkpoint's files become the base; pending ones up to id are dropped.
  void Complete(CheckpointId id);
  void Abort(CheckpointId id);  // its files are never referenced
  void Reset();                 // a restore replaced the database: nothing is reused
  size_t pending() const;

 private:
  mutable Mutex mu_;
  SstFiles base_ ABSL_GUARDED_BY(mu_);
  std::map<CheckpointId, SstFiles> pending_ ABSL_GUARDED_BY(mu_);
};

// The RocksDB writes a native snapshot's synchronous part defers (the backend's write gate,
// rocksdb_keyed_state_backend.h): the write-back cache's dirty rows at the barrier as one batch,
// the memtable flush and the RocksDB checkpoint of hard links. They run once, on the thread that
// comes first: the snapshot thread at the start of Write(), or the task thread when it has to
// write RocksDB (or read it other than through a cached point state) before that. The other
// waits for them; Run() after that returns the outcome without running anything.
class DeferredSync {
 public:
  struct Outcome {
    Status rows;      // writing the dirty rows: a failure is the backend's (rows are lost)
    Status snapshot;  // the rows, flush and checkpoint: a failure fails this checkpoint only
  };
  explicit DeferredSync(absl::AnyInvocable<Outcome()> work) : work_(std::move(work)) {}
  Outcome Run();
  bool ran() const;

 private:
  mutable Mutex mu_;
  absl::AnyInvocable<Outcome()> work_ ABSL_GUARDED_BY(mu_);  // reset once run (frees the batch)
  bool ran_ ABSL_GUARDED_BY(mu_) = false;
  Outcome outcome_ ABSL_GUARDED_BY(mu_);
};

// What the synchronous part captured; `local_dir` holds the RocksDB checkpoint (hard links) once
// the DeferredSync has run.
struct LocalSnapshot {
  std::string local_dir;
  NativeSnapshotTarget target;
  std::string backend_id;
  KeyGroupRange range;
  uint64_t total_keys = 0;
  std::string states_bytes;  // EncodeStates of the states at the barrier
  // Entries of every state per key group of `range` at the barrier (the states' counters summed).
  std::vector<uint64_t> entries_per_key_group;
  SstFiles base;  // the base at the barrier
};

// The part the snapshot thread runs: `deferred` first, then the uploads. Removes local_dir when
// done; destroyed unrun, it runs `deferred` first (the rows must reach RocksDB).
std::unique_ptr<NativeSnapshotPart> MakeSnapshotPart(LocalSnapshot local, FileSystem& fs,
                                                     std::shared_ptr<UploadedFiles> uploaded,
                                                     std::shared_ptr<DeferredSync> deferred);

// The SST number of a shared file name "<backend id>-<checkpoint>-<number>.sst" or of a local
// "<number>.sst"; nullopt-like: false when the name has no number.
bool SstNumber(std::string_view name, uint64_t* number);
// RocksDB's name of SST number n: "000012.sst".
std::string LocalSstName(uint64_t number);

// Size and XXH3-64 of a file, read through `fs`.
struct FileDigest {
  uint64_t size = 0;
  uint64_t checksum = 0;
};
// Copies `from` to `to` (temp file `to`.tmp, fsync, rename; `to` must not exist) and returns
// the digest of what it wrote. Errors are IoError sentences naming the file ("the disk of D is
// full" for ENOSPC).
Result<FileDigest> CopyFile(FileSystem& fs, const std::string& from, const std::string& to);
// Corruption naming `path` unless it exists with exactly `size` bytes and `checksum`.
Status VerifyFile(FileSystem& fs, const std::string& path, uint64_t size, uint64_t checksum);

}  // namespace keyflow::rocksdb_native
