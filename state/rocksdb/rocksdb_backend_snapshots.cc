// RocksDbKeyedStateBackend's snapshots: canonical key-group snapshots (serialised from a RocksDB
// snapshot), their restore, and native incremental checkpoints with their deferred sync. The
// class is declared in rocksdb_keyed_state_backend.h; this file holds the snapshot part of it.
#include "state/rocksdb/rocksdb_keyed_state_backend.h"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/file_system.h"
#include "state/apply_to_keys.h"
#include "state/rocksdb/rocksdb_backend_internal.h"
#include "state/rocksdb/rocksdb_info_logger.h"
#include "state/rocksdb/rocksdb_key_layout.h"
#include "state/rocksdb/rocksdb_keyed_state.h"
#include "state/rocksdb/rocksdb_native_snapshot.h"
#include "state/rocksdb/rocksdb_tsan_env.h"
#include "state/rocksdb/rocksdb_value_format.h"

namespace keyflow {

using rocksdb_backend_internal::kWritingCacheChanges;
using rocksdb_backend_internal::NoWal;

namespace fs = std::filesystem;

// CopyKeyGroup's result: a RocksDB snapshot; serialised from on the writer thread.
class RocksDbKeyedStateBackend::KeyGroupSnapshotCopy final : public KeyGroupCopy {
 public:
  KeyGroupSnapshotCopy(const RocksDbKeyedStateBackend* backend, KeyGroupId g)
      : backend_(backend), g_(g), snapshot_(backend->db_->GetSnapshot()) {}
  ~KeyGroupSnapshotCopy() override { backend_->db_->ReleaseSnapshot(snapshot_); }
  void Write(BinaryWriter& out) const override { backend_->WriteKeyGroup(g_, snapshot_, out); }
  uint64_t Count() const override { return backend_->CountKeys(g_, snapshot_); }

 private:
  const RocksDbKeyedStateBackend* backend_;
  KeyGroupId g_;
  const rocksdb::Snapshot* snapshot_;
};

void RocksDbKeyedStateBackend::SerializeKeyGroup(KeyGroupId g, BinaryWriter& out) const {
  KF_CHECK(range().contains(g)) << "SerializeKeyGroup: key group " << g << " is not in " << range();
  SyncCache(CacheSync::kWrite, range().IndexOf(g));
  WriteKeyGroup(g, nullptr, out);
}

std::unique_ptr<KeyGroupCopy> RocksDbKeyedStateBackend::CopyKeyGroup(KeyGroupId g) const {
  KF_CHECK(range().contains(g)) << "CopyKeyGroup: key group " << g << " is not in " << range();
  SyncCache(CacheSync::kWrite, range().IndexOf(g));
  return std::make_unique<KeyGroupSnapshotCopy>(this, g);
}

void RocksDbKeyedStateBackend::WriteKeyGroup(KeyGroupId g, const rocksdb::Snapshot* snapshot,
                                             BinaryWriter& out) const {
  rocksdb_layout::DecodedKey decoded;

  struct Part {
    const RocksDbStateInfo* info;
    uint64_t entries = 0;
    std::string bytes;
  };
  std::vector<Part> parts;
  for (const auto& [name, state] : states_) {
    const RocksDbStateInfo& info = state->info;
    Part part{&info};
    BinaryWriter w(&part.bytes);
    KeyGroupRows rows(*this, g, snapshot, info.column_family);
    // A map's rows of one (key, namespace) are adjacent: gathered, then written as one map.
    std::optional<TypedBuffer> map;
    if (info.kind == StateKind::kMap) map.emplace(*info.value_ops);
    std::string map_prefix;
    std::string map_pairs;
    uint64_t map_size = 0;
    auto flush_map = [&] {
      if (map_size == 0) return;
      KF_CHECK(rocksdb_format::RowsToCanonicalMap(map_size, map_pairs, *map, *info.value_ops, w))
          << "map state '" << info.name << "' holds rows this backend did not write";
      map_size = 0;
      map_pairs.clear();
    };
    for (rows.SeekToFirst(); rows->Valid(); rows->Next()) {
      std::string_view rocks_key = rows.key();
      std::string_view value(rows->value().data(), rows->value().size());
      KF_CHECK(rocksdb_layout::DecodeKey(rocks_key, prefix_bytes_, &decoded));
      if (info.kind == StateKind::kMap) {
        std::string_view prefix = rocks_key.substr(0, decoded.prefix_length);
        if (map_size > 0 && prefix == map_prefix) {
          map_pairs.append(decoded.rest).append(value);
          ++map_size;
          continue;
        }
        flush_map();
        map_prefix.assign(prefix);
        map_pairs.append(decoded.rest).append(value);
        map_size = 1;
      }
      ++part.entries;
      w.Bytes(decoded.key);
      w.I64(decoded.ns);
      if (info.kind == StateKind::kList) {
        KF_CHECK(rocksdb_format::StoredListToCanonical(value, w))
            << "list state '" << info.name << "' holds a value this backend did not write";
      } else if (info.kind != StateKind::kMap) {
        w.Raw(value.data(), value.size());
      }
    }
    flush_map();
    KF_CHECK(rows->status().ok()) << "reading state '" << info.name << "' in " << dir_ << ": "
                                  << rows->status().ToString();
    if (part.entries > 0) parts.push_back(std::move(part));
  }
  // Format version 2 (state/README.md), the bytes the heap backend writes for the same state.
  out.I32(-kKeyGroupStateFormatVersion);
  out.I32(g.value());
  out.VarU64(parts.size());
  for (const Part& p : parts) {
    out.Bytes(p.info->name);
    out.U8(static_cast<uint8_t>(p.info->kind));
    out.Bytes(p.info->type_description);
    out.VarU64(p.entries);
    out.Raw(p.bytes.data(), p.bytes.size());
  }
}

void RocksDbKeyedStateBackend::StageKeyGroup(
    std::string_view bytes, rocksdb::WriteBatch& batch,
    std::map<std::string, int64_t, std::less<>>* counts) const {
  BinaryReader in(bytes);
  KF_CHECK(in.I32() == -kKeyGroupStateFormatVersion);
  const int32_t g = in.I32();
  const uint64_t num_states = in.VarU64();
  std::string rocks_key;
  std::string stored;
  std::vector<std::pair<std::string_view, std::string_view>> rows;
  for (uint64_t i = 0; i < num_states; ++i) {
    const std::string_view name = in.Bytes();
    in.U8();     // kind: as registered (the staging backend checked)
    in.Bytes();  // declared type: likewise
    const uint64_t n = in.VarU64();
    const RocksDbStateInfo& info = states_.find(name)->second->info;
    (*counts)[std::string(name)] = static_cast<int64_t>(n);
    TypedBuffer scratch(*info.value_ops);
    for (uint64_t e = 0; e < n; ++e) {
      const std::string_view key = in.Bytes();
      const int64_t ns = in.I64();
      rocks_key.clear();
      rocksdb_layout::AppendEntryPrefix(&rocks_key, g, prefix_bytes_, key, ns);
      if (info.kind == StateKind::kList) {
        stored.clear();
        KF_CHECK(rocksdb_format::CanonicalListToStored(in, *info.element_ops, &stored));
        batch.Put(info.column_family, rocks_key, stored);
      } else if (info.kind == StateKind::kMap) {
        KF_CHECK(
            rocksdb_format::CanonicalMapToRows(in, *info.element_ops, *info.map_value_ops, &rows));
        const size_t prefix_length = rocks_key.size();
        for (const auto& [uk, uv] : rows) {
          rocks_key.resize(prefix_length);
          rocks_key.append(uk);
          batch.Put(info.column_family, rocks_key, rocksdb::Slice(uv.data(), uv.size()));
        }
      } else {
        std::string_view value;
        KF_CHECK(rocksdb_format::ReadValueSlice(in, scratch, &value));
        batch.Put(info.column_family, rocks_key, rocksdb::Slice(value.data(), value.size()));
      }
    }
  }
  KF_CHECK(in.ok() && in.at_end());
}

Status RocksDbKeyedStateBackend::RestoreKeyGroup(KeyGroupId g, BinaryReader& in) {
  if (!range().contains(g)) return key_context().IllegalKeyGroup(g);
  KF_RETURN_IF_ERROR(failure_);
  // Parsed and validated by the heap backend (same checks, same sentences); a failure leaves
  // both untouched. Its canonical bytes are then trusted.
  KF_RETURN_IF_ERROR(staging_.RestoreKeyGroup(g, in));
  std::string canonical;
  BinaryWriter w(&canonical);
  staging_.SerializeKeyGroup(g, w);
  staging_.ClearAll();

  const int32_t index = range().IndexOf(g);
  SyncCache(CacheSync::kWriteAndDrop);  // the rows of g are replaced: cached ones are stale
  rocksdb::WriteBatch batch;
  for (auto& [name, state] : states_) {
    if (state->info.counts[static_cast<size_t>(index)] == 0) continue;
    batch.DeleteRange(state->info.column_family,
                      rocksdb_layout::KeyGroupBegin(g.value(), prefix_bytes_),
                      rocksdb_layout::KeyGroupEnd(g.value(), prefix_bytes_));
  }
  std::map<std::string, int64_t, std::less<>> counts;
  StageKeyGroup(canonical, batch, &counts);
  BeforeWrite(index);
  rocksdb::Status s = db_->Write(NoWal(), &batch);
  if (!s.ok()) {
    return Unavailable("cannot restore key group " + std::to_string(g.value()) +
                       " into the RocksDB state backend in " + dir_ + " (" + s.ToString() +
                       "): free disk space or fix the disk of --state-dir");
  }
  ++epoch_;
  for (auto& [name, state] : states_) {
    auto c = counts.find(name);
    state->info.counts[static_cast<size_t>(index)] = c == counts.end() ? 0 : c->second;
  }
  return Status::Ok();
}

StateSize RocksDbKeyedStateBackend::ApproximateSize() const {
  uint64_t memtables = 0;
  uint64_t sst = 0;
  db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &memtables);
  db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &sst);
  return StateSize{static_cast<int64_t>(memtables + block_cache_->GetUsage()) + cache_bytes_,
                   static_cast<int64_t>(sst)};
}

std::vector<rocksdb_native::SnapshotState> RocksDbKeyedStateBackend::SnapshotStates() const {
  std::vector<rocksdb_native::SnapshotState> states;
  for (const auto& [name, state] : states_) {
    states.push_back(rocksdb_native::SnapshotState{
        name, state->info.kind, state->info.type_description, state->info.counts});
  }
  return states;
}

Result<std::unique_ptr<NativeSnapshotPart>> RocksDbKeyedStateBackend::SnapshotNative(
    const NativeSnapshotTarget& target) {
  AwaitNativeSync();  // an earlier part's, if it was neither written nor destroyed
  KF_RETURN_IF_ERROR(failure_);
  if (target.shared_dir.empty() || target.checkpoint_dir.empty()) {
    return FailedPrecondition(
        "a native RocksDB snapshot needs a checkpoint and a shared directory; take a full "
        "snapshot (SerializeKeyGroup) instead");
  }
  const auto start = std::chrono::steady_clock::now();
  // The dirty cached rows at the barrier, as SyncCache(kWrite) would write them; they stay
  // cached (clean) until the gate has seen them written.
  auto rows = std::make_unique<rocksdb::WriteBatch>();
  TakeDirtyRows(rows.get());
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  for (const auto& [name, state] : states_) families.push_back(state->info.column_family);
  rocksdb_native::LocalSnapshot local;
  local.local_dir = dir_ + "/chk-" + std::to_string(target.checkpoint.value());
  local.target = target;
  local.backend_id = backend_id_;
  local.range = range();
  local.total_keys = NumEntries();
  const std::vector<rocksdb_native::SnapshotState> states = SnapshotStates();
  local.states_bytes = rocksdb_native::EncodeStates(states);
  local.entries_per_key_group.assign(static_cast<size_t>(range().size()), 0);
  for (const rocksdb_native::SnapshotState& state : states) {
    for (size_t i = 0; i < local.entries_per_key_group.size(); ++i) {
      local.entries_per_key_group[i] += static_cast<uint64_t>(state.counts[i]);
    }
  }
  local.base = uploaded_->Base();
  std::optional<rocksdb::Options> sst_options = IngestOptions(rows->Count());
  auto deferred = std::make_shared<rocksdb_native::DeferredSync>(
      [this, rows = std::move(rows), families = std::move(families),
       sst_options = std::move(sst_options), local_dir = local.local_dir,
       checkpoint = target.checkpoint] {
        return RunDeferredSync(*rows, families, sst_options, local_dir, checkpoint);
      });
  native_sync_ = deferred;
  cache_limit_ = 2 * options_.write_cache_bytes;
  last_sync_micros_ = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  return rocksdb_native::MakeSnapshotPart(std::move(local), *fs_, uploaded_, std::move(deferred));
}

namespace {

// A write batch's Put and Delete entries per column family id, as slices into the batch.
class BatchRows : public rocksdb::WriteBatch::Handler {
 public:
  struct Row {
    rocksdb::Slice key;
    rocksdb::Slice value;
    bool put;
  };
  std::map<uint32_t, std::vector<Row>> by_family;

  rocksdb::Status PutCF(uint32_t family, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override {
    by_family[family].push_back(Row{key, value, true});
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteCF(uint32_t family, const rocksdb::Slice& key) override {
    by_family[family].push_back(Row{key, rocksdb::Slice(), false});
    return rocksdb::Status::OK();
  }
};

}  // namespace

Status RocksDbKeyedStateBackend::IngestRows(
    rocksdb::WriteBatch& rows, const std::vector<rocksdb::ColumnFamilyHandle*>& families,
    const rocksdb::Options& sst_options, const std::string& tag) const {
  BatchRows collected;
  if (rocksdb::Status s = rows.Iterate(&collected); !s.ok()) {
    return StorageFailure(s, kWritingCacheChanges);
  }
  std::vector<rocksdb::IngestExternalFileArg> args;
  std::vector<std::string> written;
  rocksdb::Status s;
  for (auto& [id, list] : collected.by_family) {
    auto family =
        std::find_if(families.begin(), families.end(),
                     [id = id](rocksdb::ColumnFamilyHandle* h) { return h->GetID() == id; });
    if (family == families.end()) {
      s = rocksdb::Status::InvalidArgument("a row of an unknown column family");
      break;
    }
    // The column families compare bytewise; a key is in the batch once (the cache's map).
    std::sort(list.begin(), list.end(), [](const BatchRows::Row& a, const BatchRows::Row& b) {
      return a.key.compare(b.key) < 0;
    });
    const std::string path = dir_ + "/ingest-" + tag + "-" + std::to_string(id) + ".sst";
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), sst_options, *family);
    s = writer.Open(path);
    if (s.ok()) written.push_back(path);
    for (const BatchRows::Row& row : list) {
      if (!s.ok()) break;
      s = row.put ? writer.Put(row.key, row.value) : writer.Delete(row.key);
    }
    if (s.ok()) s = writer.Finish();
    if (!s.ok()) break;
    rocksdb::IngestExternalFileArg arg;
    arg.column_family = *family;
    arg.external_files = {path};
    arg.options.move_files = true;  // hard links: the files are in the database's file system
    args.push_back(std::move(arg));
  }
  // All column families at once: a failure ingests none.
  if (s.ok() && !args.empty()) s = db_->IngestExternalFiles(args);
  std::error_code ec;
  for (const std::string& path : written) fs::remove(path, ec);  // moved, or left by a failure
  return s.ok() ? Status::Ok() : StorageFailure(s, kWritingCacheChanges);
}

rocksdb_native::DeferredSync::Outcome RocksDbKeyedStateBackend::RunDeferredSync(
    rocksdb::WriteBatch& rows, const std::vector<rocksdb::ColumnFamilyHandle*>& families,
    const std::optional<rocksdb::Options>& sst_options, const std::string& local_dir,
    CheckpointId checkpoint) const {
  ScopedRocksDbIgnore ignore;  // librocksdb's accesses while the task thread reads (TSan only)
  rocksdb_native::DeferredSync::Outcome outcome;
  if (sst_options) {
    outcome.rows =
        IngestRows(rows, families, *sst_options, "chk-" + std::to_string(checkpoint.value()));
  } else if (rows.Count() > 0) {
    if (rocksdb::Status s = db_->Write(NoWal(), &rows); !s.ok()) {
      outcome.rows = StorageFailure(s, kWritingCacheChanges);
    }
  }
  if (!outcome.rows.ok()) {
    outcome.snapshot = outcome.rows;
    return outcome;
  }
  std::error_code ec;
  fs::remove_all(local_dir, ec);  // a leftover of an earlier attempt at this checkpoint
  // The WAL is off: flush every memtable so that the checkpoint's SST files hold all state.
  rocksdb::FlushOptions flush;
  flush.wait = true;
  flush.allow_write_stall = true;
  rocksdb::Status s = families.empty() ? rocksdb::Status::OK() : db_->Flush(flush, families);
  rocksdb::Checkpoint* raw = nullptr;
  if (s.ok()) s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> created(raw);
  if (s.ok()) s = created->CreateCheckpoint(local_dir, /*log_size_for_flush=*/0);
  if (!s.ok()) {
    fs::remove_all(local_dir, ec);
    const std::string why = s.ToString();
    outcome.snapshot =
        s.IsNoSpace() || why.find("No space left") != std::string::npos
            ? IoError("cannot take the RocksDB snapshot of checkpoint " +
                      std::to_string(checkpoint.value()) + " in " + local_dir + " (" + why +
                      "): the disk of --state-dir is full; free space there")
            : IoError("cannot take the RocksDB snapshot of checkpoint " +
                      std::to_string(checkpoint.value()) + " in " + local_dir + " (" + why +
                      "): check the disk of --state-dir");
  }
  return outcome;
}

void RocksDbKeyedStateBackend::NotifyNativeCheckpointComplete(CheckpointId id) {
  uploaded_->Complete(id);
}

void RocksDbKeyedStateBackend::NotifyNativeCheckpointAborted(CheckpointId id) {
  uploaded_->Abort(id);
}

void RocksDbKeyedStateBackend::DropAllRows() {
  SyncCache(CacheSync::kDrop);  // every row is deleted
  ++epoch_;
  for (auto& [name, state] : states_) {
    rocksdb::WriteBatch batch;
    batch.DeleteRange(
        state->info.column_family, rocksdb_layout::KeyGroupBegin(0, prefix_bytes_),
        rocksdb_layout::KeyGroupBegin(key_context().max_parallelism(), prefix_bytes_));
    std::fill(state->info.counts.begin(), state->info.counts.end(), 0);
    Apply(batch, "clearing state '" + name + "'");
  }
}

}  // namespace keyflow
