#include "worker/sources/multiplex_source_reader.h"

#include <algorithm>
#include <utility>

#include "common/logging/logging.h"

namespace keyflow {

MultiplexSourceReader::MultiplexSourceReader(SplitReaderFactory open_split)
    : open_split_(std::move(open_split)) {}

Status MultiplexSourceReader::AddSplits(std::vector<SourceSplitState> splits) {
  const size_t open = unfinished_ + static_cast<size_t>(std::count_if(
                                        splits.begin(), splits.end(),
                                        [](const SourceSplitState& st) { return !st.finished; }));
  for (SourceSplitState& st : splits) {
    if (st.finished) {  // read to its end before: kept for the state, never opened again
      slots_.push_back(Slot{std::move(st), nullptr, nullptr, true});
      continue;
    }
    KF_ASSIGN_OR_RETURN(std::unique_ptr<SplitReader> reader, open_split_(st, open));
    KF_LOG_INFO("source reading split={} from={}", st.split.ToString(), st.position.ToString());
    slots_.push_back(Slot{std::move(st), std::move(reader), nullptr, false});
    ++unfinished_;
    outputs_pending_ = true;
  }
  return Status::Ok();
}

Result<PollResult> MultiplexSourceReader::PollNext(ReaderOutput& output) {
  Record record;
  int emitted = 0;
  Timestamp throttled_until = kMaxWatermark;
  if (outputs_pending_) {
    // Every split gets its output before any record is emitted, so a split that has not had
    // its turn yet already holds back event time.
    for (Slot& slot : slots_) {
      if (!slot.finished && slot.output == nullptr) {
        slot.output = &output.CreateOutputForSplit(slot.state.split.id());
      }
    }
    outputs_pending_ = false;
  }
  for (size_t turn = 0; turn < slots_.size() && emitted < kRecordsPerPoll; ++turn) {
    Slot& slot = slots_[next_slot_];
    next_slot_ = (next_slot_ + 1) % slots_.size();
    if (slot.finished) continue;
    for (int i = 0; i < kRecordsPerSplitTurn; ++i) {
      KF_ASSIGN_OR_RETURN(SplitReadResult r, slot.reader->Next(&record));
      if (r == SplitReadResult::kRecord) {
        KF_RETURN_IF_ERROR(slot.output->Collect(record));
        ++emitted;
        continue;
      }
      if (r == SplitReadResult::kThrottled) {
        throttled_until = std::min(throttled_until, slot.reader->next_available_time());
        break;
      }
      slot.finished = true;  // end of split: keep its final position
      slot.state.position = slot.reader->position();
      slot.state.finished = true;
      output.ReleaseOutputForSplit(slot.state.split.id());
      slot.output = nullptr;
      slot.reader.reset();  // closes the file
      --unfinished_;
      break;
    }
  }
  if (unfinished_ == 0) {
    return no_more_splits_ ? PollResult::End() : PollResult::NothingUntil(kMaxWatermark);
  }
  if (emitted == 0 && throttled_until != kMaxWatermark) {
    return PollResult::NothingUntil(throttled_until);
  }
  return PollResult::More();
}

std::vector<SourceSplitState> MultiplexSourceReader::SnapshotState(
    std::optional<CheckpointId> /*checkpoint*/) {
  std::vector<SourceSplitState> out;
  out.reserve(slots_.size());
  for (Slot& slot : slots_) {
    // A reader's position is asked here and at the end of its split, not per record.
    if (slot.reader != nullptr) slot.state.position = slot.reader->position();
    out.push_back(slot.state);
  }
  return out;
}

}  // namespace keyflow
