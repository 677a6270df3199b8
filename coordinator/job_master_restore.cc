// JobMaster: choosing the checkpoint an attempt restores from (the latest restorable one,
// falling back past corrupt ones only while no committed output is at stake).
#include "coordinator/job_master.h"

#include "common/logging/logging.h"

namespace keyflow {

Result<std::optional<JobMaster::RestorePoint>> JobMaster::ChooseRestorePoint() {
  auto completed = storage_.ListCompletedCheckpoints(job_id_);
  if (!completed.ok()) return completed.status();
  std::vector<UnrestorableCheckpoint> skipped;  // newest first
  std::optional<RestorePoint> chosen;
  for (auto it = completed->rbegin(); it != completed->rend(); ++it) {
    auto m = CheckpointStorage::ReadMetadata(it->directory);
    auto bad = bad_checkpoints_.find(it->directory);
    Status ok = bad != bad_checkpoints_.end() ? Corruption(bad->second)
                : m.ok() ? CheckpointStorage::VerifyStateFiles(it->directory, *m)
                         : m.status();
    if (!ok.ok()) {
      if (bad == bad_checkpoints_.end()) {
        bad_checkpoints_[it->directory] = ok.message();
        KF_LOG_WARN(
            "checkpoint {} cannot be restored ({}); using the previous completed checkpoint",
            it->id.value(), ok.message());
      }
      skipped.push_back(
          UnrestorableCheckpoint{it->id, it->directory, ok.message(),
                                 m.ok() ? m->sink_committables : std::vector<std::string>{}});
      continue;
    }
    chosen = RestorePoint{std::move(m).value(), it->directory};
    break;
  }
  // The latest rescale's savepoint is newer than every checkpoint taken before it.
  if (rescale_savepoint_ && (!chosen || rescale_savepoint_->metadata.id > chosen->metadata.id)) {
    chosen = rescale_savepoint_;
  }
  if (!chosen) chosen = initial_restore_;
  {
    // A savepoint a worker found corrupted (--from-savepoint, possibly another job's, or the
    // rescale's) with no newer checkpoint of the job's own to restore instead: restoring it
    // again would fail the same way at every restart, and starting from anything older would
    // drop its state (and a rescale's attempt committed its output). The job fails with what to
    // do instead.
    if (chosen) {
      auto bad = bad_checkpoints_.find(chosen->directory);
      if (bad != bad_checkpoints_.end() && rescale_savepoint_ &&
          rescale_savepoint_->directory == chosen->directory) {
        return FailedPrecondition(
            "savepoint " + std::to_string(chosen->metadata.id.value()) + " in " +
            chosen->directory + ", which the job was rescaled from, cannot be restored (" +
            bad->second +
            ") and no checkpoint of the job completed after it: restoring an older one would "
            "emit again what the rescaled job committed; repair or restore the savepoint's "
            "files and run the job again with --from-savepoint " +
            chosen->directory);
      }
      if (bad != bad_checkpoints_.end()) {
        return FailedPrecondition(
            std::string(chosen->metadata.savepoint ? "savepoint " : "checkpoint ") +
            std::to_string(chosen->metadata.id.value()) + " in " + chosen->directory +
            " cannot be restored (" + bad->second +
            ") and the job has no completed checkpoint of its own to fall back to: the job "
            "cannot continue; run it again with --from-savepoint of another savepoint or "
            "checkpoint, or without --from-savepoint to start from the beginning of the input");
      }
    }
  }
  KF_RETURN_IF_ERROR(CheckFallbackKeepsCommittedOutput(skipped, chosen));
  return chosen;
}

Status JobMaster::CheckFallbackKeepsCommittedOutput(
    const std::vector<UnrestorableCheckpoint>& skipped,
    const std::optional<RestorePoint>& chosen) const {
  const CheckpointId chosen_id = chosen ? chosen->metadata.id : CheckpointId(0);
  // Each committable is one part file; a newer completed checkpoint's committables that the
  // chosen point does not hold were (or may have been) committed by its notification.
  std::set<std::string> at_stake;
  std::string corrupt;
  for (const UnrestorableCheckpoint& c : skipped) {
    if (c.id <= chosen_id) continue;
    corrupt += (corrupt.empty() ? "" : "; ") + ("checkpoint " + std::to_string(c.id.value()) +
                                                " in " + c.directory + " (" + c.reason + ")");
    at_stake.insert(c.sink_committables.begin(), c.sink_committables.end());
  }
  if (chosen) {
    for (const std::string& b : chosen->metadata.sink_committables) at_stake.erase(b);
  }
  if (corrupt.empty()) return Status::Ok();
  const std::string target = chosen ? (chosen->metadata.savepoint ? "savepoint " : "checkpoint ") +
                                          std::to_string(chosen_id.value())
                                    : std::string("the start of the input");
  if (at_stake.empty()) {
    KF_LOG_WARN(
        "falling back to {} job={}: no committed output is at stake (the newer unrestorable "
        "checkpoints hold no sink committables): {}",
        target, job_id_, corrupt);
    return Status::Ok();
  }
  const std::string accept =
      chosen ? "accept the replay with keyflow run ... --from-savepoint " + chosen->directory +
                   " (the replayed results go to new part files next to the committed ones, "
                   "so a reader sees those results twice)"
             : "accept the replay by running the job again from the start into a new --output "
               "directory";
  return FailedPrecondition(
      "the newest completed checkpoint cannot be restored: " + corrupt + ", and falling back to " +
      target + " would emit again the results of " + std::to_string(at_stake.size()) +
      " part file(s) already committed in " +
      (spec_.output_dir.empty() ? std::string("the output directory") : spec_.output_dir) +
      " after it, which keyflow never retracts; either " + accept +
      ", or repair or restore the corrupt file and resume with keyflow run ... "
      "--from-savepoint " +
      skipped.front().directory);
}

}  // namespace keyflow
