// The keyed-state snapshot file: all keyed state and timers of one subtask, written key group
// by key group with an index of byte offsets, so that a restoring subtask reads only the key
// groups it owns (Flink's KeyGroupsStateHandle + KeyGroupRangeOffsets). Byte layout: README.md.
//
// Used by: the operator test harness and the worker's checkpointing (writer), restore and
// rescaling (reader), `keyflow checkpoint inspect` (reader, info only).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/binary_io.h"
#include "common/hashing.h"
#include "common/key.h"
#include "common/key_group_range.h"
#include "common/status.h"
#include "common/types.h"
#include "state/key_group_copy.h"

namespace keyflow {

// The version written. 3: the index names the key group of each entry, so a file may hold only
// some key groups of its range (key-group-incremental checkpoints). 2: the keyed-state section
// holds per-key-group state format 2 (declared types; state/README.md). Versions 1 and 2 are
// still read (every key group of the range present; version 1 sections are version 1).
inline constexpr uint32_t kKeyedSnapshotFormatVersion = 3;
inline constexpr uint32_t kOldestKeyedSnapshotFormatVersion = 1;
inline constexpr char kKeyedSnapshotMagic[9] = "KFKGSNAP";
inline constexpr char kKeyedSnapshotFooterMagic[9] = "KFKGEND1";
inline constexpr size_t kKeyedSnapshotFooterSize = 32;

// A participant in the snapshot (the keyed state backend, the timer service): it writes and
// restores its own data of one key group. Sections are identified by a stable one-byte id.
struct SnapshotSection {
  uint8_t id = 0;
  std::string name;  // for messages: "keyed state", "timers"
  // Writes the section's data of key group g.
  std::function<void(KeyGroupId, BinaryWriter&)> write;
  // Number of entries (keys, timers) in key group g, recorded in the index for inspection.
  std::function<uint64_t(KeyGroupId)> count;
  // Restores the bytes that `write` produced for key group g.
  std::function<Status(KeyGroupId, BinaryReader&)> restore;
  // Optional: a cheap copy of key group g (state/key_group_copy.h) whose Write/Count give what
  // `write`/`count` give now. With it, an asynchronous snapshot lets the task thread copy a key
  // group it is about to change instead of serialising it (AsyncKeyedSnapshot).
  std::function<std::unique_ptr<KeyGroupCopy>(KeyGroupId)> copy;
};

// What the header and index say: enough to plan a restore without reading any state.
struct KeyGroupEntry {
  KeyGroupId key_group{0};
  uint64_t offset = 0;           // of the key group's block, from the start of the file
  uint64_t length = 0;           // of the block, including its checksum
  std::vector<uint64_t> counts;  // per section, in section order of the header
};

struct KeyedSnapshotInfo {
  uint32_t format_version = kKeyedSnapshotFormatVersion;
  int32_t max_parallelism = 0;
  KeyType key_type = KeyType::kString;
  // The subtask's key-group range. A full snapshot holds a block of every key group of it; a
  // sparse one (format 3, key-group-incremental checkpoints) only those in `key_groups`.
  KeyGroupRange range;
  std::vector<uint8_t> section_ids;  // in block order
  std::vector<std::string> section_names;
  std::vector<KeyGroupEntry> key_groups;  // the blocks, ascending key group
  uint64_t file_size = 0;
  uint64_t index_checksum = 0;  // identifies the file's content; goes into checkpoint metadata
  // XXH3-64 of the whole file (SharedStateFile::checksum). Set by the writer only.
  uint64_t file_checksum = 0;

  // The entry of key group g, or null if the file holds no block of g.
  const KeyGroupEntry* find(KeyGroupId g) const;
  // The entry of key group g. Precondition: the file holds g (a full snapshot of range).
  const KeyGroupEntry& entry(KeyGroupId g) const;
  bool full() const { return key_groups.size() == static_cast<size_t>(range.size()); }
};

// Serialises one key group's block (key group id, every section, checksum) into `out`
// (appending). Pure function of the sections' data: can run on any thread that may read it.
void SerializeKeyGroupBlock(KeyGroupId g, const std::vector<const SnapshotSection*>& sections,
                            std::string* out);
// The same block from copies taken by the sections' `copy` (copies[i] of sections[i]).
void SerializeKeyGroupBlock(KeyGroupId g, const std::vector<const SnapshotSection*>& sections,
                            const std::vector<std::unique_ptr<KeyGroupCopy>>& copies,
                            std::string* out);

// Writes a snapshot incrementally: header, then at most one block per key group of the range
// in ascending order (each produced by SerializeKeyGroupBlock, possibly on another thread),
// then Finish() writes index and footer. A full snapshot appends every key group of the range;
// a sparse one (key-group-incremental) only some. Output goes to a caller-owned sink.
class KeyedSnapshotWriter {
 public:
  using Sink = std::function<Status(std::string_view)>;
  KeyedSnapshotWriter(int32_t max_parallelism, KeyType key_type, KeyGroupRange range,
                      const std::vector<const SnapshotSection*>& sections, Sink sink);

  Status Begin();
  // Precondition: g is in the range and above every key group appended before. `counts` per
  // section.
  Status AppendKeyGroup(KeyGroupId g, std::string_view block, std::vector<uint64_t> counts);
  // Writes index and footer; returns what a reader will see.
  Result<KeyedSnapshotInfo> Finish();

 private:
  Status Emit(std::string_view bytes);
  KeyedSnapshotInfo info_;
  Sink sink_;
  uint64_t position_ = 0;
  int32_t next_ = 0;  // the lowest key group that may be appended next
  std::unique_ptr<StreamingChecksum> file_checksum_;
};

// Convenience: the whole snapshot of `range` into one string, on the calling thread.
Result<KeyedSnapshotInfo> WriteKeyedSnapshot(int32_t max_parallelism, KeyType key_type,
                                             KeyGroupRange range,
                                             const std::vector<const SnapshotSection*>& sections,
                                             std::string* out);

class RandomAccessSource;

// Reads a snapshot: footer, header and index on Open (validated, checksummed), then single key
// groups on demand. Errors name the source (file path) and what is wrong with it.
class KeyedSnapshotReader {
 public:
  // Does not take ownership; `source` must outlive the reader.
  static Result<KeyedSnapshotReader> Open(const RandomAccessSource& source);

  const KeyedSnapshotInfo& info() const { return info_; }

  // Restores every key group in info().range ∩ `target` into `sections` (matched by id; a
  // section in the file that no participant claims is an error), reading only those blocks.
  // Each block's checksum and key-group id are verified before anything is restored from it.
  // Precondition: the file is full (info().full()); a sparse file is restored per key group.
  Status Restore(KeyGroupRange target, const std::vector<const SnapshotSection*>& sections);
  // Restores key group g's block (NotFound naming the file if it holds none) into `sections`,
  // with the checks of Restore.
  Status RestoreKeyGroup(KeyGroupId g, const std::vector<const SnapshotSection*>& sections);
  // Reads and verifies one block (checksum, key-group id); *block receives it without the
  // checksum: the i32 key-group id, then the sections.
  Status ReadKeyGroupBlock(KeyGroupId g, std::string* block) const;

  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status CheckSections(const std::vector<const SnapshotSection*>& sections) const;
  Status RestoreBlock(KeyGroupId g, const std::vector<const SnapshotSection*>& sections,
                      std::string* scratch);
  KeyedSnapshotReader(const RandomAccessSource* source, KeyedSnapshotInfo info)
      : source_(source), info_(std::move(info)) {}
  const RandomAccessSource* source_;
  KeyedSnapshotInfo info_;
  mutable uint64_t bytes_read_ = 0;
};

}  // namespace keyflow
