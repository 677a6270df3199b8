// KeyedTask's snapshots and restores: the state and timers of its key groups written at a
// barrier (full or key-group-incremental, synchronous part on the task thread, the rest on the
// snapshot thread) and restored from a checkpoint's handles. The class is declared in
// keyed_task.h; this file holds its snapshot part.
#include "worker/task/keyed_task.h"

#include "checkpoint/checkpoint_storage.h"
#include "common/file_io.h"
#include "common/hashing.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

constexpr size_t kSnapshotWriteBuffer = 1 << 20;

// Index of section `id` in the file's sections, or -1.
int SectionIndex(const KeyedSnapshotInfo& info, uint8_t id) {
  for (size_t i = 0; i < info.section_ids.size(); ++i) {
    if (info.section_ids[i] == id) return static_cast<int>(i);
  }
  return -1;
}

uint64_t CountOf(const KeyGroupEntry& e, int section) {
  return section >= 0 && static_cast<size_t>(section) < e.counts.size() ? e.counts[section] : 0;
}

// XXH3-64 of the whole file, read in 1 MiB pieces.
Result<uint64_t> WholeFileChecksum(const RandomAccessFile& file) {
  StreamingChecksum sum;
  std::string chunk;
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  for (uint64_t at = 0; at < file.size(); at += kChunk) {
    KF_RETURN_IF_ERROR(
        file.ReadAt(at, static_cast<size_t>(std::min(kChunk, file.size() - at)), &chunk));
    sum.Update(chunk.data(), chunk.size());
  }
  return sum.Digest();
}

}  // namespace

// The handle of a key-group-incremental checkpoint of `range`: the blocks `written` holds (the
// new file `name`; null if nothing changed) and, for the other key groups, the blocks of `base`.
KeyGroupsStateHandle IncrementalStateHandle(KeyGroupRange range, const KeyedSnapshotInfo* written,
                                            const std::string& name,
                                            const KeyGroupsStateHandle* base) {
  KeyGroupsStateHandle h;
  h.range = range;
  std::map<std::string, uint32_t> file_index;
  auto file = [&](const SharedStateFile& f) {
    auto [it, added] = file_index.emplace(f.name, static_cast<uint32_t>(h.shared_files.size()));
    if (added) h.shared_files.push_back(f);
    return it->second;
  };
  int keys_section = -1, timers_section = -1;
  if (written != nullptr) {
    h.size = written->file_size;
    h.checksum = written->index_checksum;
    file(SharedStateFile{name, written->file_size, written->file_checksum});
    keys_section = SectionIndex(*written, kKeyedStateSectionId);
    timers_section = SectionIndex(*written, kTimersSectionId);
  }
  for (KeyGroupId g : range.key_groups()) {
    const KeyGroupEntry* e = written != nullptr ? written->find(g) : nullptr;
    if (e != nullptr) {
      h.block_file.push_back(file_index.at(name));
      h.offsets.push_back(e->offset);
      h.lengths.push_back(e->length);
      h.keys.push_back(CountOf(*e, keys_section));
      h.timers.push_back(CountOf(*e, timers_section));
      continue;
    }
    KF_CHECK(base != nullptr && base->range == range && base->incremental())
        << "key group " << g.value() << " is neither written nor in the base";
    size_t i = static_cast<size_t>(range.IndexOf(g));
    h.block_file.push_back(file(base->shared_files[base->block_file[i]]));
    h.offsets.push_back(base->offsets[i]);
    h.lengths.push_back(base->lengths[i]);
    h.keys.push_back(base->keys[i]);
    h.timers.push_back(base->timers[i]);
  }
  return h;
}

struct KeyedTask::OpenedStateFile {
  std::unique_ptr<RandomAccessFile> file;
  std::optional<KeyedSnapshotReader> reader;
};

Status KeyedTask::Restore(const RestoreAssignment& r) {
  int64_t start = clock_->MonotonicMillis();
  uint64_t bytes = 0;
  auto corrupted = [&](const Status& s) {
    restore_corrupted_.store(true, std::memory_order_release);
    return Corruption("checkpoint " + std::to_string(r.checkpoint.value()) +
                      " cannot be restored: " + s.message());
  };
  // One rule for every format (checkpoint/README.md "Format versions"): Corruption (a checksum,
  // a missing or truncated file) lets the job master fall back to an earlier checkpoint;
  // FailedPrecondition (a format version this build does not read, another backend, changed
  // state types) is not recoverable and leaves the checkpoint as it is.
  auto failed = [&](const Status& s, const std::string& context) {
    if (s.code() == StatusCode::kCorruption) return corrupted(s);
    if (s.code() == StatusCode::kFailedPrecondition) {
      restore_unreadable_.store(true, std::memory_order_release);
    }
    return context.empty() ? s : s.WithContext(context);
  };
  // Native keyed state first (it replaces all keyed state); the canonical handles then hold
  // only the timers.
  if (!r.native_state.empty()) {
    std::vector<NativeRestoreSource> sources;
    for (const IncrementalKeyedStateHandle& h : r.native_state) {
      sources.push_back(NativeRestoreSource{h, r.checkpoint_dir, r.shared_dir});
    }
    Status s = operator_->mutable_backend().RestoreNative(sources);
    if (!s.ok()) {
      return failed(s, "restoring the native keyed state of checkpoint " +
                           std::to_string(r.checkpoint.value()));
    }
  }
  OpenedStateFiles shared;  // each shared file opened and verified once
  for (const KeyGroupsStateHandle& h : r.keyed_state) {
    if (h.incremental()) {
      Status s = RestoreIncremental(r, h, &shared);
      if (!s.ok()) return failed(s, "");
      continue;
    }
    // AssignState makes handle paths absolute; a relative one is relative to the checkpoint.
    std::string path =
        !h.path.empty() && h.path[0] == '/' ? h.path : r.checkpoint_dir + "/" + h.path;
    auto opened = OpenRandomAccessFile(path);
    if (!opened.ok()) return corrupted(opened.status());
    const RandomAccessFile& file = **opened;
    if (file.size() != h.size) {
      return corrupted(Corruption("state file " + path + " has " + std::to_string(file.size()) +
                                  " bytes but the checkpoint recorded " + std::to_string(h.size) +
                                  " (truncated or replaced)"));
    }
    auto reader = KeyedSnapshotReader::Open(file);
    if (!reader.ok()) return failed(reader.status(), "");
    if (reader->info().index_checksum != h.checksum) {
      return corrupted(
          Corruption("state file " + path + " does not match the checkpoint metadata (checksum)"));
    }
    if (!reader->info().full()) {
      return corrupted(Corruption("state file " + path +
                                  " holds only some key groups but the checkpoint metadata names "
                                  "it as a full snapshot"));
    }
    Status s = operator_->Restore(*reader);
    if (!s.ok()) return failed(s, "");
    bytes += reader->bytes_read();
  }
  for (const auto& [name, f] : shared) bytes += f->reader->bytes_read();
  KF_LOG_INFO(
      "state restored subtask={} checkpoint={} files={} shared_files={} native={} bytes_read={} "
      "keys={} timers={} ms={}",
      deployment_.subtask.value(), r.checkpoint.value(), r.keyed_state.size(), shared.size(),
      r.native_state.size(), bytes, operator_->backend().NumEntries(),
      operator_->timer_service().NumEventTimers() +
          operator_->timer_service().NumProcessingTimers(),
      clock_->MonotonicMillis() - start);
  metrics_->restore_bytes.Set(static_cast<int64_t>(bytes));
  return Status::Ok();
}

Status KeyedTask::RestoreIncremental(const RestoreAssignment& r, const KeyGroupsStateHandle& h,
                                     OpenedStateFiles* files) {
  const size_t n = static_cast<size_t>(h.range.size());
  if (h.block_file.size() != n || h.offsets.size() != n || h.lengths.size() != n) {
    return Corruption("the checkpoint metadata of an incremental state handle of " +
                      h.range.ToString() + " does not list one block per key group");
  }
  for (KeyGroupId g : h.range.Intersection(deployment_.key_groups).key_groups()) {
    const size_t i = static_cast<size_t>(h.range.IndexOf(g));
    if (h.block_file[i] >= h.shared_files.size()) {
      return Corruption("the checkpoint metadata names shared file " +
                        std::to_string(h.block_file[i]) + " for key group " +
                        std::to_string(g.value()) + " but lists " +
                        std::to_string(h.shared_files.size()));
    }
    const SharedStateFile& f = h.shared_files[h.block_file[i]];
    const std::string path = r.shared_dir + "/" + f.name;
    std::unique_ptr<OpenedStateFile>& opened = (*files)[f.name];
    if (opened == nullptr) {
      if (r.shared_dir.empty() || f.name.empty() || f.name.find('/') != std::string::npos ||
          f.name == "." || f.name == "..") {
        return Corruption("the checkpoint metadata names shared state file '" + f.name +
                          "' in shared directory '" + r.shared_dir + "', which is not a file");
      }
      auto file = OpenRandomAccessFile(path);
      if (!file.ok())
        return file.status().code() == StatusCode::kCorruption
                   ? file.status()
                   : Corruption(file.status().message());
      if ((*file)->size() != f.size) {
        return Corruption("shared state file " + path + " has " + std::to_string((*file)->size()) +
                          " bytes but the checkpoint recorded " + std::to_string(f.size) +
                          " (truncated or replaced)");
      }
      KF_ASSIGN_OR_RETURN(uint64_t sum, WholeFileChecksum(**file));
      if (sum != f.checksum) {
        return Corruption("shared state file " + path +
                          " does not match the checkpoint metadata (checksum): it was changed "
                          "or damaged");
      }
      auto next = std::make_unique<OpenedStateFile>();
      next->file = std::move(*file);
      auto reader = KeyedSnapshotReader::Open(*next->file);
      if (!reader.ok()) return reader.status();
      next->reader.emplace(std::move(*reader));
      opened = std::move(next);
    }
    KeyedSnapshotReader& reader = *opened->reader;
    const KeyGroupEntry* e = reader.info().find(g);
    if (e == nullptr || e->offset != h.offsets[i] || e->length != h.lengths[i]) {
      return Corruption("shared state file " + path + " holds no block of key group " +
                        std::to_string(g.value()) +
                        " where the checkpoint metadata says (it was replaced)");
    }
    KF_RETURN_IF_ERROR(operator_->RestoreKeyGroup(reader, g));
  }
  return Status::Ok();
}

void KeyedTask::InstallWriteGuards(KeyGroupWriteGuard* snapshot, bool native) {
  tracker_->SetSnapshot(snapshot);
  // A backend with native snapshots never writes incremental canonical keyed state: its writes
  // need no tracking, only the copy-on-write of a full snapshot being written.
  KeyGroupWriteGuard* state = tracker_.get();
  if (operator_->backend().SupportsNativeSnapshots()) state = native ? nullptr : snapshot;
  operator_->SetWriteGuards(state, tracker_.get());
}

void KeyedTask::WaitForSnapshotThread() {
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  InstallWriteGuards(nullptr, false);
  snapshot_.reset();
}

void KeyedTask::TakeSnapshot(CheckpointId id, int64_t alignment_us) {
  int64_t t0 = NowMicros();
  WaitForSnapshotThread();  // one snapshot file at a time
  auto announced = announced_.find(id.value());
  KF_CHECK(announced != announced_.end()) << "snapshot of an unannounced checkpoint " << id;
  const Announced a = announced->second;
  announced_.erase(announced_.begin(), std::next(announced));
  const bool incremental =
      a.incremental && !a.shared_directory.empty() && a.type != CheckpointType::kSavepoint;
  const bool native = incremental && operator_->backend().SupportsNativeSnapshots();

  KeyedCheckpointPart part;
  part.alignment_duration_us = alignment_us;
  part.incremental = incremental;
  // The native snapshot's synchronous part (RocksDB: flush + checkpoint of hard links), before
  // the sink's pre-commit so that its failure leaves nothing pre-committed.
  std::unique_ptr<NativeSnapshotPart> native_part;
  if (native) {
    NativeSnapshotTarget target;
    target.checkpoint = id;
    target.checkpoint_dir = a.directory;
    target.shared_dir = a.shared_directory;
    target.private_prefix = "subtask-" + std::to_string(deployment_.subtask.value()) + "-db/";
    auto taken = operator_->mutable_backend().SnapshotNative(target);
    if (!taken.ok()) {
      callbacks_.checkpoint_done(id, taken.status().WithContext("snapshotting the keyed state"));
      return;
    }
    native_part = std::move(*taken);
  }
  // The sink's pre-commit on this thread only hands its file over; the fsync that makes the
  // committable durable runs on the snapshot thread, before the acknowledgement (Liveness 6).
  Result<std::unique_ptr<SinkPreCommitSync>> pre = collector_.sink->PrepareCommit(id);
  if (!pre.ok()) {
    callbacks_.checkpoint_done(id, pre.status().WithContext("pre-committing the sink"));
    return;
  }
  std::unique_ptr<SinkPreCommitSync> sink_sync = std::move(pre).value();
  part.sink_committables = collector_.sink->PendingCommittables();
  if (ended_ && a.type == CheckpointType::kFinal && final_checkpoint_.value() == 0) {
    final_checkpoint_ = id;
  }

  // With a native snapshot the canonical file holds only the timers.
  std::vector<const SnapshotSection*> sections = operator_->snapshot_sections();
  if (native) {
    std::erase_if(sections, [](const SnapshotSection* s) { return s->id != kTimersSectionId; });
  }
  // Changes from now on belong to the next interval; an incremental checkpoint with a base
  // writes only the key groups changed since the base's synchronous part.
  tracker_->StartInterval(id);
  std::optional<KeyGroupsStateHandle> base;
  std::vector<bool> include;  // empty: every key group
  if (incremental && base_) {
    base = base_->second;
    include = tracker_->ChangedSince(base_->first);
  }
  const bool write_file = include.empty() || std::count(include.begin(), include.end(), true) > 0;
  snapshot_ = std::make_unique<AsyncKeyedSnapshot>(deployment_.spec.max_parallelism,
                                                   deployment_.spec.key_type,
                                                   deployment_.key_groups, sections, include);
  snapshot_id_ = id;
  InstallWriteGuards(snapshot_.get(), native);
  part.sync_duration_us = NowMicros() - t0;

  const std::string name = incremental
                               ? uuid_ + "-" + std::to_string(id.value()) + "-" +
                                     std::to_string(deployment_.subtask.value()) + ".kgs"
                               : CheckpointStorage::SubtaskStateFileName(deployment_.subtask);
  const std::string path = (incremental ? a.shared_directory : a.directory) + "/" + name;
  AsyncKeyedSnapshot* snapshot = snapshot_.get();
  snapshot_thread_ = std::thread([this, id, name, path, part, snapshot, incremental, write_file,
                                  base = std::move(base), native_part = std::move(native_part),
                                  sink_sync = std::move(sink_sync)]() mutable {
    int64_t a0 = NowMicros();
    Result<KeyedCheckpointPart> result = [&]() -> Result<KeyedCheckpointPart> {
      if (sink_sync) {
        Status synced = sink_sync->Run();
        if (!synced.ok()) {
          // The committable is not durable and the sink holds it as pending: this subtask
          // cannot go on exactly once. Fail it; recovery produces that output again.
          Status failed = synced.WithContext("pre-committing the sink");
          mailbox_->Put([this, failed] { processor_->ReportError(failed); }, "sink sync failed")
              .IgnoreError();
          return failed;
        }
      }
      if (native_part) {
        uint64_t written = 0;
        KF_ASSIGN_OR_RETURN(IncrementalKeyedStateHandle native_handle,
                            native_part->Write(&written));
        part.native_state = std::move(native_handle);
        part.written_bytes += written;
      }
      std::optional<KeyedSnapshotInfo> info;
      if (write_file) {
        KF_ASSIGN_OR_RETURN(
            info, snapshot->WriteToFile(FileSystem::Default(), path, kSnapshotWriteBuffer));
        part.written_bytes += info->file_size;
      }
      if (incremental) {
        part.keyed_state = IncrementalStateHandle(deployment_.key_groups, info ? &*info : nullptr,
                                                  name, base ? &*base : nullptr);
        // The canonical file holds only the timers: the keys per key group are the native
        // snapshot's entries (state/rocksdb/README.md).
        if (native_part) {
          const std::vector<uint64_t>& entries = native_part->EntriesPerKeyGroup();
          KF_CHECK_EQ(entries.size(), part.keyed_state.keys.size());
          part.keyed_state.keys = entries;
        }
      } else {
        KeyGroupsStateHandle& h = part.keyed_state;
        h.path = name;
        h.size = info->file_size;
        h.checksum = info->index_checksum;
        h.range = info->range;
        for (const KeyGroupEntry& e : info->key_groups) {
          h.offsets.push_back(e.offset);
          h.lengths.push_back(e.length);
          h.keys.push_back(e.counts.size() > 0 ? e.counts[0] : 0);
          h.timers.push_back(e.counts.size() > 1 ? e.counts[1] : 0);
        }
      }
      part.async_duration_us = NowMicros() - a0;
      return part;
    }();
    Status put = mailbox_->Put(
        [this, id, result = std::move(result)]() mutable { FinishSnapshot(id, std::move(result)); },
        "snapshot " + std::to_string(id.value()) + " written");
    (void)put;  // a closed mailbox means the task is gone; nobody waits for the ack
  });
}

void KeyedTask::FinishSnapshot(CheckpointId id, Result<KeyedCheckpointPart> part) {
  // A later TakeSnapshot may have finished this one already (it waits for the previous file).
  if (snapshot_ && snapshot_id_ == id) WaitForSnapshotThread();
  if (part.ok()) {
    KF_LOG_INFO(
        "snapshot written subtask={} checkpoint={} incremental={} written_bytes={} "
        "shared_files={} native={} sync_us={} async_us={} alignment_us={}",
        deployment_.subtask.value(), id.value(), part->incremental, part->written_bytes,
        part->keyed_state.shared_files.size(), part->native_state.has_value(),
        part->sync_duration_us, part->async_duration_us, part->alignment_duration_us);
    if (part->incremental) pending_incremental_[id.value()] = part->keyed_state;
  }
  callbacks_.checkpoint_done(id, std::move(part));
}

}  // namespace keyflow
