// RocksDbKeyedStateBackend::RestoreNative (Flink's RocksDBIncrementalRestoreOperation): stage
// each source's files (verified, hard-linked or copied) under dir()/restore, reopen the best
// overlapping one as the database and clip it with range deletes, copy the others' rows of
// range() into it as ingested SST files, and set the counters from the snapshots' KEYFLOW-STATES.
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <system_error>

#include "common/file_system.h"
#include "common/format_version.h"
#include "state/rocksdb/rocksdb_key_layout.h"
#include "state/rocksdb/rocksdb_keyed_state.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"
#include "state/rocksdb/rocksdb_native_snapshot.h"

namespace keyflow {

namespace {

namespace fs = std::filesystem;
using rocksdb_native::SnapshotState;

// A source's files in a local directory RocksDB can open, and its states.
struct StagedSource {
  const NativeRestoreSource* source;
  std::string dir;
  std::vector<SnapshotState> states;
};

// Verifies `source`'s files and puts them into `dir` under RocksDB's names: SST files are hard
// links to the shared files (a copy if the shared directory is on another file system), the
// private files copies.
Status Stage(FileSystem& fs, const NativeRestoreSource& source, const std::string& dir,
             StagedSource* staged) {
  const IncrementalKeyedStateHandle& h = source.handle;
  KF_RETURN_IF_ERROR(fs.CreateDirectories(dir));
  for (const SharedStateFile& f : h.shared_files) {
    const std::string path = source.shared_dir + "/" + f.name;
    uint64_t number = 0;
    if (!rocksdb_native::SstNumber(f.name, &number)) {
      return Corruption("the RocksDB snapshot names the shared file " + path +
                        ", which is not an SST file of keyflow: restore from an earlier "
                        "checkpoint");
    }
    KF_RETURN_IF_ERROR(rocksdb_native::VerifyFile(fs, path, f.size, f.checksum));
    const std::string to = dir + "/" + rocksdb_native::LocalSstName(number);
    std::error_code ec;
    fs::create_hard_link(path, to, ec);
    if (ec) KF_RETURN_IF_ERROR(rocksdb_native::CopyFile(fs, path, to).status());
  }
  for (const PrivateStateFile& f : h.private_files) {
    const std::string path = source.checkpoint_dir + "/" + f.path;
    KF_RETURN_IF_ERROR(rocksdb_native::VerifyFile(fs, path, f.size, f.checksum));
    const std::string name = fs::path(f.path).filename().string();
    if (name == rocksdb_native::kStatesFile) {
      KF_ASSIGN_OR_RETURN(std::string bytes, fs.ReadFileToString(path));
      KF_ASSIGN_OR_RETURN(staged->states,
                          rocksdb_native::DecodeStates(bytes, h.range.size(), path));
      continue;
    }
    KF_RETURN_IF_ERROR(rocksdb_native::CopyFile(fs, path, dir + "/" + name).status());
  }
  if (!fs.Exists(dir + "/CURRENT")) {
    return Corruption("the RocksDB snapshot of key groups " + h.range.ToString() + " in " +
                      source.checkpoint_dir +
                      " has no CURRENT file: restore from an earlier checkpoint");
  }
  return Status::Ok();
}

}  // namespace

Status RocksDbKeyedStateBackend::CheckSnapshotStates(const std::vector<SnapshotState>& states,
                                                     const KeyGroupRange& source_range) const {
  const KeyGroupRange overlap = source_range.Intersection(range());
  const std::string context = "cannot restore the RocksDB snapshot of " + source_range.ToString();
  for (const SnapshotState& s : states) {
    int64_t entries = 0;
    for (int32_t g = overlap.start(); g <= overlap.end() && !overlap.empty(); ++g) {
      entries += s.counts[static_cast<size_t>(g - source_range.start())];
    }
    if (entries == 0) continue;  // nothing of it is restored here
    auto it = states_.find(s.name);
    if (it == states_.end()) {
      return FailedPrecondition(context + ": the snapshot holds keyed state '" + s.name +
                                "', which is not registered; register every state of the "
                                "operator before restoring");
    }
    const RocksDbStateInfo& info = it->second->info;
    if (info.kind != s.kind) {
      return FailedPrecondition(context + ": keyed state '" + s.name + "' was written as " +
                                std::string(StateKindName(s.kind)) + " but is registered as " +
                                info.type_description);
    }
    if (info.type_description != s.type_description) {
      return FailedPrecondition(context + ": state '" + s.name + "' was checkpointed as " +
                                s.type_description + " but the job now declares " +
                                info.type_description +
                                ": a job upgrade must keep the type of every state; declare it "
                                "as " +
                                s.type_description +
                                " again, or give the new type a new state "
                                "name");
    }
  }
  return Status::Ok();
}

Status RocksDbKeyedStateBackend::ReopenAsDatabase(const std::string& staged_dir) {
  CloseDatabase();
  std::error_code ec;
  fs::remove_all(db_dir_, ec);
  fs::rename(staged_dir, db_dir_, ec);
  Status s = ec ? IoError("cannot move the restored RocksDB database " + staged_dir + " to " +
                          db_dir_ + " (" + ec.message() + "): check the disk of --state-dir")
                : OpenDatabase(/*existing=*/true);
  if (s.ok()) return s;
  // Back to an empty database, so that the backend stays usable.
  CloseDatabase();
  fs::remove_all(db_dir_, ec);
  Status fresh = OpenDatabase(/*existing=*/false);
  if (!fresh.ok()) failure_ = fresh;
  return s;
}

Status RocksDbKeyedStateBackend::CopyRows(const std::string& staged_dir,
                                          const KeyGroupRange& groups, uint64_t* rows) {
  // Opened read-only with the column families of the registered states it has.
  rocksdb::DBOptions db_options = DbOptions();
  db_options.write_buffer_manager = nullptr;
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_options, staged_dir, &names);
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName, CfOptions());
  std::vector<RocksDbStateInfo*> targets = {nullptr};
  for (const std::string& name : names) {
    if (name.rfind("state:", 0) != 0) continue;
    auto it = states_.find(name.substr(6));
    if (it == states_.end()) continue;
    descriptors.emplace_back(name, CfOptions());
    targets.push_back(&it->second->info);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (s.ok()) s = rocksdb::DB::OpenForReadOnly(db_options, staged_dir, descriptors, &handles, &raw);
  if (!s.ok()) {
    return Corruption("cannot open the restored RocksDB snapshot in " + staged_dir + " (" +
                      s.ToString() + "): restore from an earlier checkpoint");
  }
  std::unique_ptr<rocksdb::DB> source(raw);
  const std::string begin = rocksdb_layout::KeyGroupBegin(groups.start(), prefix_bytes_);
  const std::string end = rocksdb_layout::KeyGroupEnd(groups.end(), prefix_bytes_);
  const rocksdb::Slice upper(end);
  Status result;
  for (size_t i = 1; i < handles.size() && result.ok(); ++i) {
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper;
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(source->NewIterator(ro, handles[i]));
    // The rows come sorted: one SST file per column family, ingested (moved) into ours.
    const std::string sst = staged_dir + "-ingest-" + std::to_string(i) + ".sst";
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), rocksdb::Options(db_options, CfOptions()));
    s = writer.Open(sst);
    uint64_t n = 0;
    for (it->Seek(begin); s.ok() && it->Valid(); it->Next()) {
      s = writer.Put(it->key(), it->value());
      ++n;
    }
    if (s.ok() && it->status().ok() && n > 0) {
      s = writer.Finish();
      rocksdb::IngestExternalFileOptions ingest;
      ingest.move_files = true;
      if (s.ok()) s = db_->IngestExternalFile(targets[i]->column_family, {sst}, ingest);
    }
    *rows += n;
    if (!it->status().ok()) {
      result = Corruption("cannot read the restored RocksDB snapshot in " + staged_dir + " (" +
                          it->status().ToString() + "): restore from an earlier checkpoint");
    } else if (!s.ok()) {
      result = Unavailable("cannot restore keyed state '" + targets[i]->name +
                           "' into the RocksDB state backend in " + dir_ + " (" + s.ToString() +
                           "): free disk space or fix the disk of --state-dir");
    }
  }
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    source->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  source->Close().PermitUncheckedError();
  return result;
}

Status RocksDbKeyedStateBackend::RestoreNative(const std::vector<NativeRestoreSource>& sources) {
  KF_RETURN_IF_ERROR(failure_);
  last_restore_ = NativeRestoreStats{};
  // Only handles this backend can read; only those that hold some of range().
  std::vector<const NativeRestoreSource*> used;
  for (const NativeRestoreSource& source : sources) {
    const IncrementalKeyedStateHandle& h = source.handle;
    if (h.backend != rocksdb_native::kBackend) {
      return FailedPrecondition(
          "cannot restore the native keyed-state snapshot of " + h.range.ToString() +
          ": it was written by the '" + h.backend +
          "' state backend, which the rocksdb backend cannot read; run the job with "
          "--state-backend " +
          h.backend + ", or restore from a savepoint (portable between backends)");
    }
    if (h.format_version != rocksdb_native::kFormatVersion) {
      // The version is a field of the checkpoint's _metadata, whose checksum verified.
      return UnreadableFormatVersion("the RocksDB snapshot of key groups " + h.range.ToString(),
                                     h.format_version, rocksdb_native::kFormatVersion,
                                     rocksdb_native::kFormatVersion);
    }
    if (!h.range.Intersection(range()).empty()) used.push_back(&source);
  }

  DropAllRows();       // also empties the write-back cache (SyncCache)
  uploaded_->Reset();  // whatever happens, the next checkpoint writes every file anew
  const std::string root = dir_ + "/restore";
  std::error_code ec;
  fs::remove_all(root, ec);
  auto fail = [&](Status s) {
    fs::remove_all(root, ec);
    if (db_ != nullptr) DropAllRows();
    return s;
  };

  std::vector<StagedSource> staged;
  for (size_t i = 0; i < used.size(); ++i) {
    StagedSource s{used[i], root + "/source-" + std::to_string(i), {}};
    if (Status st = Stage(*fs_, *used[i], s.dir, &s); !st.ok()) return fail(st);
    if (Status st = CheckSnapshotStates(s.states, used[i]->handle.range); !st.ok()) {
      return fail(st);
    }
    staged.push_back(std::move(s));
  }

  // The base (Flink's): the source with the largest overlap, if at least half of its key groups
  // are ours; its database becomes ours, clipped to range().
  int base = -1;
  int32_t best = 0;
  for (size_t i = 0; i < staged.size(); ++i) {
    const KeyGroupRange r = staged[i].source->handle.range;
    const int32_t overlap = r.Intersection(range()).size();
    if (overlap > best && 2 * overlap >= r.size()) {
      best = overlap;
      base = static_cast<int>(i);
    }
  }
  if (base >= 0) {
    if (Status s = ReopenAsDatabase(staged[static_cast<size_t>(base)].dir); !s.ok()) {
      return fail(s);
    }
    const KeyGroupRange r = staged[static_cast<size_t>(base)].source->handle.range;
    rocksdb::WriteBatch clip;
    for (auto& [name, state] : states_) {
      if (r.start() < range().start()) {
        clip.DeleteRange(state->info.column_family,
                         rocksdb_layout::KeyGroupBegin(r.start(), prefix_bytes_),
                         rocksdb_layout::KeyGroupBegin(range().start(), prefix_bytes_));
      }
      if (r.end() > range().end()) {
        clip.DeleteRange(state->info.column_family,
                         rocksdb_layout::KeyGroupEnd(range().end(), prefix_bytes_),
                         rocksdb_layout::KeyGroupEnd(r.end(), prefix_bytes_));
      }
    }
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    if (rocksdb::Status s = db_->Write(wo, &clip); !s.ok()) {
      return fail(Unavailable("cannot clip the restored RocksDB database in " + db_dir_ + " (" +
                              s.ToString() + "): free disk space or fix the disk of --state-dir"));
    }
    last_restore_.base_source =
        static_cast<int>(staged[static_cast<size_t>(base)].source - sources.data());
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    if (static_cast<int>(i) == base) continue;
    const KeyGroupRange groups = staged[i].source->handle.range.Intersection(range());
    if (Status s = CopyRows(staged[i].dir, groups, &last_restore_.rows_copied); !s.ok()) {
      return fail(s);
    }
  }
  // The counters, from the snapshots.
  for (const StagedSource& s : staged) {
    const KeyGroupRange r = s.source->handle.range;
    const KeyGroupRange overlap = r.Intersection(range());
    for (const SnapshotState& state : s.states) {
      auto it = states_.find(state.name);
      if (it == states_.end()) continue;
      for (int32_t g = overlap.start(); g <= overlap.end(); ++g) {
        it->second->info.counts[static_cast<size_t>(g - range().start())] =
            state.counts[static_cast<size_t>(g - r.start())];
      }
    }
  }
  fs::remove_all(root, ec);
  ++epoch_;
  for (int32_t i = 0; i < range().size(); ++i) BeforeWrite(i);
  return Status::Ok();
}

}  // namespace keyflow
