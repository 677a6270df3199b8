#include "checkpoint/checkpoint_coordinator.h"

#include <algorithm>
#include <filesystem>

#include "common/file_io.h"
#include "common/key_group_assignment.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

constexpr size_t kRecentlyFinishedIds = 64;

std::vector<KeyGroupRange> RangesOf(const JobSpec& spec) {
  Status valid = ValidateParallelism(spec.parallelism, spec.max_parallelism);
  KF_CHECK(valid.ok()) << "CheckpointCoordinator needs a resolved job spec: " << valid.ToString();
  return CreateKeyGroupPartitions(spec.max_parallelism, spec.parallelism);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) return path;
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

std::string_view CheckpointStateName(CheckpointState s) {
  switch (s) {
    case CheckpointState::kPending:
      return "PENDING";
    case CheckpointState::kCompleted:
      return "COMPLETED";
    case CheckpointState::kAborted:
      return "ABORTED";
    case CheckpointState::kExpired:
      return "EXPIRED";
  }
  return "?";
}

CheckpointCoordinator::CheckpointCoordinator(std::string job_id, JobSpec spec,
                                             AttemptNumber attempt, CheckpointConfig config,
                                             const CheckpointStorage* storage,
                                             const Clock* wall_clock, int64_t first_id)
    : job_id_(std::move(job_id)),
      spec_(std::move(spec)),
      attempt_(attempt),
      config_(config),
      storage_(storage),
      wall_clock_(wall_clock),
      ranges_(RangesOf(spec_)),
      next_id_(first_id),
      shared_(storage->SharedDirectory(job_id_), storage->fs()) {
  KF_CHECK_GE(first_id, 1);
  KF_CHECK_GE(config_.max_concurrent, 1);
  KF_CHECK_GE(config_.retained, 1);
  KF_CHECK(storage_ != nullptr && wall_clock_ != nullptr);
}

void CheckpointCoordinator::RegisterRecovered(const CheckpointLocation& c) {
  // Its shared files are referenced until retention drops it.
  Result<CheckpointMetadata> m = CheckpointStorage::ReadMetadata(c.directory, storage_->fs());
  if (!m.ok()) {
    KF_LOG_WARN("cannot read the metadata of recovered checkpoint dir={} reason={}", c.directory,
                m.status().ToString());
    return;
  }
  Status registered = shared_.Register(c.id, m->SharedFiles());
  if (!registered.ok()) {
    KF_LOG_WARN("recovered checkpoint id={} has inconsistent shared files: {}", c.id.value(),
                registered.message());
  }
}

void CheckpointCoordinator::RecoverCompleted(std::vector<CheckpointLocation> completed,
                                             RecoverOptions options) {
  KF_CHECK(pending_.empty()) << "RecoverCompleted must run before the first trigger";
  for (CheckpointLocation& c : completed) {
    KF_CHECK_LT(c.id.value(), next_id_) << "recovered checkpoint id must be below first_id";
    const CheckpointId last = !completed_.empty()      ? completed_.back().id
                              : !unrestorable_.empty() ? unrestorable_.back().id
                                                       : CheckpointId(0);
    KF_CHECK_LT(last, c.id) << "not ascending";
    if (options.unrestorable.count(c.directory) != 0) {
      unrestorable_.push_back(std::move(c));
    } else {
      if (options.restore == c.directory) protected_ = c.id;
      completed_.push_back(std::move(c));
    }
  }
  // The restorable ones first: an unrestorable checkpoint's metadata never keeps theirs from
  // registering (a name registered with another size is refused).
  for (const CheckpointLocation& c : completed_) RegisterRecovered(c);
  for (const CheckpointLocation& c : unrestorable_) {
    RegisterRecovered(c);
    KF_LOG_WARN(
        "keeping unrestorable checkpoint job={} id={} dir={} on disk until a newer checkpoint "
        "completes; it is never restored again",
        job_id_, c.id.value(), c.directory);
  }
  ApplyRetention();
  Result<SharedStateRegistry::Swept> swept = shared_.DeleteUnreferenced();
  if (!swept.ok()) {
    KF_LOG_WARN("cannot delete the unreferenced shared state files dir={} reason={}",
                shared_.directory(), swept.status().ToString());
  } else if (swept->files > 0) {
    KF_LOG_INFO(
        "deleted unreferenced shared state files job={} files={} bytes={} dir={} (of checkpoints "
        "that never completed or were subsumed)",
        job_id_, swept->files, swept->bytes, shared_.directory());
  }
}

std::optional<CheckpointLocation> CheckpointCoordinator::latest_completed() const {
  if (completed_.empty()) return std::nullopt;
  return completed_.back();
}

std::vector<CheckpointStats> CheckpointCoordinator::PendingStats() const {
  std::vector<CheckpointStats> out;
  for (const auto& [id, p] : pending_) out.push_back(p.stats);
  return out;
}

size_t CheckpointCoordinator::NumPendingCheckpoints() const {
  return static_cast<size_t>(std::count_if(pending_.begin(), pending_.end(), [](const auto& e) {
    return e.second.counts_as_concurrent;
  }));
}

Result<std::vector<CheckpointCoordinator::Outgoing>> CheckpointCoordinator::Trigger(
    int64_t now_ms, CheckpointType type, const std::string& savepoint_dir, RequestCallback on_done,
    CheckpointTriggerOptions options) {
  return StartCheckpoint(now_ms, type, /*periodic=*/false, savepoint_dir, std::move(on_done),
                         options);
}

Result<std::vector<CheckpointCoordinator::Outgoing>> CheckpointCoordinator::StartCheckpoint(
    int64_t now_ms, CheckpointType type, bool periodic, const std::string& savepoint_dir,
    RequestCallback on_done, CheckpointTriggerOptions options) {
  const bool savepoint = type == CheckpointType::kSavepoint;
  if (type == CheckpointType::kCheckpoint && !options.forced &&
      NumPendingCheckpoints() >= static_cast<size_t>(config_.max_concurrent)) {
    return FailedPrecondition(
        "too many concurrent checkpoints: " + std::to_string(NumPendingCheckpoints()) +
        " pending, at most " + std::to_string(config_.max_concurrent) +
        " allowed (max concurrent checkpoints); try again when the pending one completes");
  }
  const CheckpointId id(next_id_++);
  std::string dir;
  if (!savepoint) {
    dir = storage_->CheckpointDirectory(job_id_, id);
  } else if (savepoint_dir.empty()) {
    dir = storage_->SavepointDirectory(job_id_, id);
  } else {
    dir = AbsolutePath(savepoint_dir);
  }
  KF_RETURN_IF_ERROR_CTX(storage_->PrepareCheckpointDirectory(dir),
                         std::string(savepoint ? "savepoint " : "checkpoint ") +
                             std::to_string(id.value()) + " not triggered");
  // Savepoints are self-contained; final checkpoints may be incremental (they only commit).
  const bool incremental = spec_.incremental_checkpoints && !savepoint;
  if (incremental) {
    KF_RETURN_IF_ERROR_CTX(storage_->PrepareSharedDirectory(job_id_),
                           "checkpoint " + std::to_string(id.value()) + " not triggered");
  }

  PendingCheckpoint p;
  p.stats.id = id;
  p.stats.savepoint = savepoint;
  p.stats.final = type == CheckpointType::kFinal;
  p.stats.state = CheckpointState::kPending;
  p.stats.directory = dir;
  p.stats.trigger_wall_ms = wall_clock_->Now().millis();
  p.periodic = periodic;
  p.counts_as_concurrent = type == CheckpointType::kCheckpoint && !options.forced;
  p.notify_complete = options.notify_complete;
  p.trigger_now_ms = now_ms;
  p.deadline_ms = now_ms + config_.timeout_ms;
  p.stats.incremental = incremental;
  p.incremental = incremental;
  p.handles.resize(ranges_.size());
  p.native.resize(ranges_.size());
  p.written_bytes.resize(ranges_.size());
  p.on_done = std::move(on_done);

  std::vector<Outgoing> out;
  out.reserve(ranges_.size());
  for (size_t i = 0; i < ranges_.size(); ++i) {
    out.push_back(
        Outgoing{SubtaskIndex(static_cast<int32_t>(i)),
                 TriggerCheckpoint{attempt_, id, p.stats.trigger_wall_ms, type, dir, incremental,
                                   incremental ? shared_.directory() : std::string()}});
  }
  KF_LOG_INFO("checkpoint triggered job={} id={} type={} periodic={} incremental={} dir={}",
              job_id_, id.value(), CheckpointTypeName(type), periodic, incremental, dir);
  pending_.emplace(id.value(), std::move(p));
  return out;
}

std::vector<CheckpointCoordinator::Outgoing> CheckpointCoordinator::OnTick(int64_t now_ms) {
  std::vector<Outgoing> out;
  if (!first_tick_ms_) first_tick_ms_ = now_ms;

  std::vector<int64_t> expired;
  for (const auto& [id, p] : pending_) {
    if (now_ms >= p.deadline_ms) expired.push_back(id);
  }
  for (int64_t id : expired) {
    Abort(id, CheckpointState::kExpired, AbortKind::kFailure,
          DeadlineExceeded("checkpoint " + std::to_string(id) + " expired after " +
                           std::to_string(config_.timeout_ms) +
                           " ms before all subtasks acknowledged it (checkpoint timeout)"),
          /*notify=*/true, now_ms, &out);
  }

  if (config_.interval_ms <= 0 || !periodic_enabled_) return out;
  const int64_t reference = last_periodic_trigger_ms_.value_or(*first_tick_ms_);
  if (now_ms - reference < config_.interval_ms) return out;
  if (NumPendingCheckpoints() >= static_cast<size_t>(config_.max_concurrent)) return out;
  if (last_completion_ms_ && now_ms - *last_completion_ms_ < config_.min_pause_ms) return out;
  last_periodic_trigger_ms_ = now_ms;
  auto triggered =
      StartCheckpoint(now_ms, CheckpointType::kCheckpoint, /*periodic=*/true, "", nullptr);
  if (!triggered.ok()) {
    KF_LOG_WARN("periodic checkpoint not triggered job={} reason={}", job_id_,
                triggered.status().ToString());
    return out;
  }
  for (Outgoing& o : *triggered) out.push_back(std::move(o));
  return out;
}

std::vector<CheckpointCoordinator::Outgoing> CheckpointCoordinator::StopPeriodic(
    const std::string& reason, int64_t now_ms) {
  periodic_enabled_ = false;
  std::vector<Outgoing> out;
  std::vector<int64_t> ids;
  for (const auto& [id, p] : pending_) {
    if (!p.stats.savepoint) ids.push_back(id);
  }
  for (int64_t id : ids) {
    Abort(id, CheckpointState::kAborted, AbortKind::kByJob,
          Aborted("checkpoint " + std::to_string(id) + " was aborted: " + reason),
          /*notify=*/true, now_ms, &out);
  }
  return out;
}

void CheckpointCoordinator::ResumePeriodic() {
  periodic_enabled_ = true;
}

Status CheckpointCoordinator::NormalizeHandle(const PendingCheckpoint& p, SubtaskIndex subtask,
                                              KeyGroupsStateHandle* h) const {
  const KeyGroupRange& expected = ranges_[static_cast<size_t>(subtask.value())];
  // The worker reports the file name relative to the directory it was given; accept an
  // absolute path inside that directory too.
  const std::string prefix = p.stats.directory + "/";
  if (h->path.compare(0, prefix.size(), prefix) == 0) h->path = h->path.substr(prefix.size());
  // Relative, no "..", no symbolic link out of the directory: the path goes into `_metadata`
  // and a restore reads it (a forged ack must not point a worker at another file). A
  // key-group-incremental handle has no path (CheckIncrementalAck checks its shared files).
  if (!h->incremental()) {
    Result<std::string> inside = ResolveInside(p.stats.directory, h->path, "its state file");
    if (!inside.ok()) {
      return InvalidArgument(inside.status().message() + " (the checkpoint directory is " +
                             p.stats.directory + ")");
    }
  }
  if (!(h->range == expected)) {
    return InvalidArgument("its state covers " + h->range.ToString() + " but the subtask owns " +
                           expected.ToString());
  }
  const size_t n = static_cast<size_t>(expected.size());
  if (h->offsets.size() != n || h->lengths.size() != n || h->keys.size() != n ||
      h->timers.size() != n) {
    return InvalidArgument(
        "its state handle does not have one offset, length, key count and "
        "timer count per key group");
  }
  for (size_t k = 0; k < n && !h->incremental(); ++k) {
    if (h->offsets[k] > h->size || h->lengths[k] > h->size - h->offsets[k]) {
      return InvalidArgument("its state handle places a key-group block outside the file");
    }
  }
  return Status::Ok();
}

Status CheckpointCoordinator::CheckIncrementalAck(const PendingCheckpoint& p,
                                                  const SubtaskCheckpointState& s) const {
  const bool references_shared = s.keyed_state.incremental() || s.native_state.has_value();
  if (!references_shared) return Status::Ok();
  if (!p.incremental) {
    return InvalidArgument(std::string("it references shared files, but the trigger asked for ") +
                           (p.stats.savepoint ? "a savepoint" : "a full checkpoint") +
                           ", which must be self-contained (a full snapshot in " +
                           p.stats.directory + ")");
  }
  KF_RETURN_IF_ERROR(
      ValidateSubtaskState(s, ranges_[static_cast<size_t>(s.subtask.value())], p.stats.savepoint));
  for (const SharedStateFile& f : s.SharedFiles()) {
    const SharedStateFile* known = shared_.Find(f.name);
    if (known != nullptr && (known->size != f.size || known->checksum != f.checksum)) {
      return InvalidArgument(
          "its shared file " + f.name + " has " + std::to_string(f.size) + " bytes and checksum " +
          std::to_string(f.checksum) + ", but the registered file of that name has " +
          std::to_string(known->size) + " bytes and checksum " + std::to_string(known->checksum));
    }
  }
  return Status::Ok();
}

Status CheckpointCoordinator::CheckSharedFilesExist(const CheckpointMetadata& m) const {
  for (const SharedStateFile& f : m.SharedFiles()) {
    const std::string path = shared_.directory() + "/" + f.name;
    Result<FileInfo> info = storage_->fs().Stat(path);
    if (!info.ok() || info->is_directory || info->size != f.size) {
      return FailedPrecondition(
          "checkpoint " + std::to_string(m.id.value()) + " cannot complete: its shared file " +
          path + " " +
          (!info.ok() ? "is missing"
                      : "has " + std::to_string(info->is_directory ? 0 : info->size) +
                            " bytes, the acknowledgement says " + std::to_string(f.size)) +
          "; a later checkpoint writes the state again (check that nothing else deletes files "
          "in the shared directory)");
    }
  }
  return Status::Ok();
}

void CheckpointCoordinator::DeleteUnregisteredFilesOf(const AcknowledgeCheckpoint& ack,
                                                      std::string_view what) {
  SubtaskCheckpointState late{ack.subtask, ack.keyed_state, ack.native_state, 0};
  for (const SharedStateFile& f : late.SharedFiles()) {
    if (IsValidSharedFileName(f.name) && shared_.DeleteIfUnregistered(f.name)) {
      KF_LOG_INFO("deleted shared file of {} job={} attempt={} id={} name={}", what, job_id_,
                  ack.attempt.value(), ack.checkpoint.value(), f.name);
    }
  }
}

std::vector<CheckpointCoordinator::Outgoing> CheckpointCoordinator::OnAcknowledge(
    const AcknowledgeCheckpoint& ack, int64_t now_ms) {
  std::vector<Outgoing> out;
  const int64_t id = ack.checkpoint.value();
  if (ack.attempt != attempt_) {
    KF_LOG_DEBUG("ignoring ack of another attempt job={} id={} attempt={} current={}", job_id_, id,
                 ack.attempt.value(), attempt_.value());
    // An upload of an earlier attempt that finished after RecoverCompleted swept the shared
    // directory: its checkpoint was aborted (ids are never reused), so nobody will reference
    // its new files; files a retained checkpoint references are registered and stay.
    if (ack.attempt.value() < attempt_.value()) DeleteUnregisteredFilesOf(ack, "ack of attempt");
    return out;
  }
  auto it = pending_.find(id);
  if (it == pending_.end()) {
    if (recently_finished_.count(id) != 0) {
      KF_LOG_INFO("ignoring late ack job={} id={} subtask={}", job_id_, id, ack.subtask.value());
      // An upload for a checkpoint that already ended: nobody will reference its new files.
      DeleteUnregisteredFilesOf(ack, "late ack");
    } else {
      KF_LOG_WARN("ignoring ack for unknown checkpoint job={} id={} subtask={}", job_id_, id,
                  ack.subtask.value());
    }
    return out;
  }
  PendingCheckpoint& p = it->second;
  const int32_t i = ack.subtask.value();
  if (i < 0 || static_cast<size_t>(i) >= ranges_.size()) {
    KF_LOG_WARN("ignoring ack from unknown subtask job={} id={} subtask={}", job_id_, id, i);
    return out;
  }
  if (p.handles[static_cast<size_t>(i)]) {
    KF_LOG_DEBUG("ignoring duplicate ack job={} id={} subtask={}", job_id_, id, i);
    return out;
  }
  SubtaskCheckpointState state{ack.subtask, ack.keyed_state, ack.native_state, ack.written_bytes};
  KeyGroupsStateHandle& handle = state.keyed_state;
  Status valid = NormalizeHandle(p, ack.subtask, &handle);
  if (valid.ok()) valid = CheckIncrementalAck(p, state);
  // From here on a pending checkpoint that acknowledged a shared file protects it.
  if (valid.ok()) valid = shared_.Register(CheckpointId(id), state.SharedFiles());
  if (!valid.ok()) {
    Abort(id, CheckpointState::kAborted, AbortKind::kFailure,
          Aborted("subtask " + std::to_string(i) + " acknowledged checkpoint " +
                  std::to_string(id) + " with an invalid state handle: " + valid.message()),
          /*notify=*/true, now_ms, &out);
    return out;
  }
  // A full snapshot wrote its whole file (also when an older worker reports no written bytes).
  if (!handle.incremental() && !state.native_state && state.written_bytes == 0) {
    state.written_bytes = handle.size;
  }
  const uint64_t state_bytes = state.StateBytes();
  p.stats.state_bytes += state_bytes;
  p.stats.written_bytes += state.written_bytes;
  p.stats.subtasks.push_back({static_cast<int32_t>(i), state_bytes, state.written_bytes,
                              ack.sync_duration_us, ack.async_duration_us,
                              ack.alignment_duration_us});
  p.written_bytes[static_cast<size_t>(i)] = state.written_bytes;
  p.native[static_cast<size_t>(i)] = std::move(state.native_state);
  p.handles[static_cast<size_t>(i)] = std::move(handle);
  for (const auto& [split, position] : ack.split_positions) {
    auto [pos, inserted] = p.split_positions.emplace(split, position);
    if (!inserted && pos->second != position) {
      KF_LOG_WARN("two subtasks report split={} in checkpoint id={}; keeping subtask {}'s", split,
                  id, i);
      pos->second = position;
    }
  }
  p.sink_committables.insert(p.sink_committables.end(), ack.sink_committables.begin(),
                             ack.sink_committables.end());
  p.stats.max_sync_us = std::max(p.stats.max_sync_us, ack.sync_duration_us);
  p.stats.max_async_us = std::max(p.stats.max_async_us, ack.async_duration_us);
  p.stats.max_alignment_us = std::max(p.stats.max_alignment_us, ack.alignment_duration_us);
  if (++p.stats.acknowledged == static_cast<int32_t>(ranges_.size())) Complete(id, now_ms, &out);
  return out;
}

std::vector<CheckpointCoordinator::Outgoing> CheckpointCoordinator::OnDecline(
    const DeclineCheckpoint& decline, int64_t now_ms) {
  std::vector<Outgoing> out;
  const int64_t id = decline.checkpoint.value();
  if (decline.attempt != attempt_ || pending_.count(id) == 0) {
    KF_LOG_DEBUG("ignoring decline job={} id={} attempt={}", job_id_, id, decline.attempt.value());
    return out;
  }
  const int32_t i = decline.subtask.value();
  const std::string by = i >= 0 && static_cast<size_t>(i) < ranges_.size()
                             ? "subtask " + std::to_string(i)
                             : "worker " + std::to_string(decline.worker.value()) +
                                   " (no subtask of checkpoint " + std::to_string(id) + ")";
  Abort(id, CheckpointState::kAborted, AbortKind::kFailure,
        Aborted("checkpoint " + std::to_string(id) + " was declined by " + by + ": " +
                decline.reason),
        /*notify=*/true, now_ms, &out);
  return out;
}

void CheckpointCoordinator::AbortAll(const std::string& reason, int64_t now_ms) {
  std::vector<int64_t> ids;
  for (const auto& [id, p] : pending_) ids.push_back(id);
  for (int64_t id : ids) {
    Abort(id, CheckpointState::kAborted, AbortKind::kByJob,
          Aborted("checkpoint " + std::to_string(id) + " was aborted: " + reason),
          /*notify=*/false, now_ms, nullptr);
  }
}

void CheckpointCoordinator::Complete(int64_t id, int64_t now_ms, std::vector<Outgoing>* out) {
  PendingCheckpoint& p = pending_.at(id);
  CheckpointMetadata m;
  m.job_id = job_id_;
  m.id = CheckpointId(id);
  m.timestamp_ms = p.stats.trigger_wall_ms;
  m.completed_ms = wall_clock_->Now().millis();
  m.savepoint = p.stats.savepoint;
  m.final = p.stats.final;
  m.attempt = attempt_;
  m.spec = spec_;
  m.subtasks.reserve(p.handles.size());
  for (size_t i = 0; i < p.handles.size(); ++i) {
    m.subtasks.push_back(SubtaskCheckpointState{SubtaskIndex(static_cast<int32_t>(i)),
                                                std::move(*p.handles[i]), std::move(p.native[i]),
                                                p.written_bytes[i]});
  }
  m.split_positions = std::move(p.split_positions);
  m.sink_committables = std::move(p.sink_committables);
  // Each ack was checked alone; what holds only for all of them (every subtask native or none,
  // one size per shared name) and the shared files on disk are checked here, before the commit.
  Status written = m.Validate();
  if (!written.ok()) {
    written = FailedPrecondition("checkpoint " + std::to_string(id) +
                                 " cannot complete: its acknowledgements do not form a valid "
                                 "checkpoint: " +
                                 written.message());
  }
  if (written.ok()) written = CheckSharedFilesExist(m);
  if (written.ok()) written = storage_->WriteMetadata(p.stats.directory, m);
  if (!written.ok()) {
    Abort(id, CheckpointState::kAborted, AbortKind::kFailure, written, /*notify=*/true, now_ms,
          out);
    return;
  }

  // The checkpoint exists from here on.
  PendingCheckpoint done = std::move(p);
  pending_.erase(id);
  RememberFinished(id);
  last_completion_ms_ = now_ms;
  consecutive_failures_ = 0;
  const CheckpointLocation location{CheckpointId(id), done.stats.savepoint, done.stats.directory};
  KF_LOG_INFO(
      "checkpoint completed job={} id={} type={} bytes={} written_bytes={} duration_ms={} dir={}",
      job_id_, id, m.TypeName(), done.stats.state_bytes, done.stats.written_bytes,
      now_ms - done.trigger_now_ms, done.stats.directory);

  if (!done.stats.savepoint) {
    // Subsume older pending checkpoints (savepoints cannot be subsumed), then notify.
    std::vector<int64_t> older;
    for (const auto& [pid, pp] : pending_) {
      if (pid < id && !pp.stats.savepoint) older.push_back(pid);
    }
    for (int64_t pid : older) {
      Abort(pid, CheckpointState::kAborted, AbortKind::kByJob,
            Aborted("checkpoint " + std::to_string(pid) + " was subsumed by checkpoint " +
                    std::to_string(id)),
            /*notify=*/true, now_ms, out);
    }
    for (size_t i = 0; done.notify_complete && i < ranges_.size(); ++i) {
      out->push_back(Outgoing{SubtaskIndex(static_cast<int32_t>(i)),
                              NotifyCheckpointComplete{attempt_, CheckpointId(id)}});
    }
    completed_.push_back(location);
    protected_.reset();  // a newer checkpoint exists: the restored one may be subsumed
    ApplyRetention();
    DeleteUnrestorable();
  }

  ++totals_.completed;
  done.stats.state = CheckpointState::kCompleted;
  done.stats.duration_ms = now_ms - done.trigger_now_ms;
  Record(done.stats);
  if (done.on_done) done.on_done(location, now_ms);
}

void CheckpointCoordinator::Abort(int64_t id, CheckpointState state, AbortKind kind,
                                  const Status& why, bool notify, int64_t now_ms,
                                  std::vector<Outgoing>* out) {
  auto it = pending_.find(id);
  KF_CHECK(it != pending_.end());
  PendingCheckpoint p = std::move(it->second);
  pending_.erase(it);
  RememberFinished(id);
  if (kind == AbortKind::kFailure) {
    ++consecutive_failures_;
    ++totals_.failed;
    last_failure_ = why.message();
  }
  KF_LOG_WARN("checkpoint {} job={} id={} consecutive_failures={} reason={}",
              state == CheckpointState::kExpired ? "expired" : "aborted", job_id_, id,
              consecutive_failures_, why.message());
  Status deleted = storage_->DeleteCheckpoint(p.stats.directory);
  if (!deleted.ok()) {
    KF_LOG_WARN("cannot delete aborted checkpoint dir={} reason={}", p.stats.directory,
                deleted.ToString());
  }
  // Its new shared files (no retained or other pending checkpoint references them).
  const size_t shared_deleted = shared_.Unregister(CheckpointId(id));
  if (shared_deleted > 0) {
    KF_LOG_INFO("deleted shared state files of aborted checkpoint job={} id={} files={}", job_id_,
                id, shared_deleted);
  }
  if (notify && out != nullptr) {
    for (size_t i = 0; i < ranges_.size(); ++i) {
      out->push_back(Outgoing{SubtaskIndex(static_cast<int32_t>(i)),
                              NotifyCheckpointAborted{attempt_, CheckpointId(id), why.message()}});
    }
  }
  p.stats.state = state;
  p.stats.failure = why.message();
  p.stats.duration_ms = now_ms - p.trigger_now_ms;
  Record(p.stats);
  if (p.on_done) p.on_done(why, now_ms);
}

void CheckpointCoordinator::ApplyRetention() {
  while (completed_.size() > static_cast<size_t>(config_.retained)) {
    // The oldest, unless this attempt restores from it (then it is the only one: the newest
    // restorable checkpoint; a newer completion clears the protection first).
    auto victim = completed_.begin();
    if (protected_ && victim->id == *protected_) ++victim;
    const CheckpointLocation oldest = *victim;
    KF_CHECK(!oldest.savepoint);
    Status deleted = storage_->DeleteCheckpoint(oldest.directory);
    if (!deleted.ok()) {
      KF_LOG_WARN("cannot delete subsumed checkpoint dir={} reason={}", oldest.directory,
                  deleted.ToString());
    } else {
      KF_LOG_INFO("checkpoint subsumed and deleted job={} id={}", job_id_, oldest.id.value());
    }
    // Only after the newer checkpoints registered theirs: a file they still use stays.
    const size_t shared_deleted = shared_.Unregister(oldest.id);
    if (shared_deleted > 0) {
      KF_LOG_INFO("deleted shared state files no retained checkpoint uses job={} id={} files={}",
                  job_id_, oldest.id.value(), shared_deleted);
    }
    completed_.erase(victim);
  }
}

void CheckpointCoordinator::DeleteUnrestorable() {
  for (const CheckpointLocation& c : unrestorable_) {
    Status deleted = storage_->DeleteCheckpoint(c.directory);
    if (!deleted.ok()) {
      KF_LOG_WARN("cannot delete unrestorable checkpoint dir={} reason={}", c.directory,
                  deleted.ToString());
    } else {
      KF_LOG_INFO("unrestorable checkpoint subsumed and deleted job={} id={}", job_id_,
                  c.id.value());
    }
    const size_t shared_deleted = shared_.Unregister(c.id);
    if (shared_deleted > 0) {
      KF_LOG_INFO("deleted shared state files no retained checkpoint uses job={} id={} files={}",
                  job_id_, c.id.value(), shared_deleted);
    }
  }
  unrestorable_.clear();
}

void CheckpointCoordinator::Record(CheckpointStats stats) {
  history_.push_front(std::move(stats));
  if (history_.size() > kHistorySize) history_.pop_back();
}

void CheckpointCoordinator::RememberFinished(int64_t id) {
  recently_finished_.insert(id);
  if (recently_finished_.size() > kRecentlyFinishedIds) {
    recently_finished_.erase(recently_finished_.begin());
  }
}

}  // namespace keyflow
