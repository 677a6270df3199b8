// ContinuousFileSplitEnumerator: the enumerator of --input monitor:DIR (Flink's
// ContinuousFileSplitEnumerator of FileSource.monitorContinuously). Every file in DIR is a split;
// the directory is listed when an attempt starts and then every interval while it runs, and each
// file not seen before becomes a new split (ids counting on from the highest known one), read
// from its start by reader id % P. Readers never hear "no more splits": the job runs until it is
// cancelled or stopped with a savepoint.
//
// The discovery cursor is the set of files already known, and it lives in the readers' state:
// a split is handed to its reader on the channel that carries the checkpoint triggers, so every
// checkpoint triggered after the assignment holds the split (finished ones included, marked
// finished). A restored attempt gets every split of its checkpoint back with its position and
// lists the directory again: a file is read exactly once across restores and rescales — files
// assigned after the checkpoint are discovered again and read from their start, as the records
// they produced were rolled back with the rest of the job.
//
// A file removed after it was read stays known (its finished split is never opened again); a
// file removed before it was read fails its reader (the data is gone). A listing that fails
// while the job runs (the directory was removed, EIO) is logged and retried at the next
// interval.
//
// Listing a large directory takes a while (a stat per entry), so while the attempt runs it is
// done off the control thread (DirectoryLister: by default a thread per listing, one at a time);
// a tick picks up a finished listing, and the next one starts an interval after that. Start
// uses the listing of the parse that created the enumerator (at deployment, synchronously).
//
// Threading: the coordinator's control thread (the lister's work on its own thread).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/input/input_spec.h"
#include "coordinator/source/split_enumerator.h"

namespace keyflow {

class ContinuousFileSplitEnumerator final : public SplitEnumerator {
 public:
  // `input` of kind kMonitor (its splits: the files listed at parse). `restored`: null when
  // starting from scratch; else every split must be a file of the monitored directory
  // (FailedPrecondition otherwise) and decode (Corruption otherwise).
  static Result<std::unique_ptr<ContinuousFileSplitEnumerator>> Create(
      const InputSpec& input, const RestoredSplits* restored,
      DirectoryLister lister = AsyncDirectoryLister());
  // Destroying it waits for a listing still running (the future of std::async).

  Status Start(SplitEnumeratorContext& context) override;
  void OnTick(SplitEnumeratorContext& context, int64_t now_ms) override;
  // {"kind": "monitor", "directory", "interval_ms", "splits" (files known), "listing_error"
  // (why the last listing failed, "" when it succeeded)}
  nlohmann::json StatusJson() const override;

  // Splits known so far (assigned to a reader).
  size_t known_splits() const { return known_paths_.size(); }

 private:
  ContinuousFileSplitEnumerator() = default;
  // Assigns each file of `files` not known yet as a new split.
  void AssignNew(SplitEnumeratorContext& context, std::vector<std::string> files);

  std::string directory_;
  int64_t interval_ms_ = 0;
  std::vector<SourceSplitState> initial_;  // the restored splits, assigned by Start
  std::vector<std::string> listed_;        // the files the parse listed, assigned by Start if new
  std::set<std::string> known_paths_;
  int32_t next_id_ = 0;
  int64_t next_discovery_ms_ = -1;  // set by the first OnTick
  DirectoryLister lister_;
  std::string listing_error_;  // of the last listing, "" if it succeeded
  std::future<Result<std::vector<std::string>>> listing_;  // valid while a listing runs
};

}  // namespace keyflow
