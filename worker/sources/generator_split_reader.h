// GeneratorSplitReader: the events of one split of the built-in deterministic generator
// (--input gen:..., see generator_spec.h). Used by the source subtask, demos and benchmarks.
//
// Random access: event o of split s is a pure function of (seed, s, o), computed with a
// counter-based hash (SplitMix64's finalizer over a per-split Weyl sequence), so opening a
// split at a checkpointed position needs no replay, and every process, host and run produces
// the same events. With S splits, K keys, N events:
//
//   events of split s   o = 0 .. spec.EventsInSplit(s)-1; event o is number g = o*S + s of the
//                       whole stream (splits interleave, so event time advances evenly in all)
//   key                 "uid-<k>" with k = j*S + s: split s owns exactly the keys k % S == s, so
//                       each key's records come from one split, in a fixed order, whatever the
//                       parallelism. j is the key's rank among the split's K_s keys:
//                         skew = 0: uniform over [0, K_s)
//                         skew = Z > 0: P(rank j) proportional to the integral of x^-Z over
//                           [j+1, j+2) (a continuous Zipf: Z = 1 is classic Zipf, larger Z is
//                           more skewed); rank 0 is the hottest, so "uid-0".."uid-<S-1>" are
//                           the hottest keys
//                         hot = F > 0: events o < K_s are the first pass, rank j = o (every
//                           key of the split once, in rank order); after it, with probability
//                           hot_share (from the event's hash) the rank is uniform over the hot
//                           ranks [0, H_s), H_s = spec.HotKeysInSplit(s), else uniform over
//                           [0, K_s). So "uid-0".."uid-<H_s*S-1>" are the hot keys; they fall
//                           into key groups by hash like any key
//   timestamp           start + g*step + jitter, jitter uniform in [0, disorder): bounded
//                       out-of-orderness, every timestamp > (max timestamp so far) - disorder
//   payload             `payload` bytes of [a-z], derived from the same hash
//   fields (format.with_fields, for jobs that read fields): the record is the JSON object
//                       {"<key field>":"uid-<k>","<ts field>":<timestamp>,"amount":<a>,
//                        "note":"<note letters>"}, a = uniform in [0, 1000) from the hash,
//                       note = spec.note_bytes letters [a-z] (as payload's); Record::fields is
//                       its field tape (raw_json() is exactly that JSON text; no payload);
//                       with a projection (format.fields) only the listed members, in this
//                       order (the note's letters are then not even computed)
//   key group           KeyGroupAssigner of the job (string keys)
//
// Rate limit (rate R > 0): the split emits at most R/S events per second on the injected clock,
// the first one immediately; after an idle period at most one second's worth is emitted as a
// burst. Next() never blocks: it returns kThrottled and next_available_time() says when to
// call again.
//
// Threading: single thread (the source subtask's task thread). EventAt() is const and pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/field_tape_writer.h"
#include "common/input/generator_spec.h"
#include "common/input/source_split.h"
#include "common/key_group_assignment.h"
#include "common/record.h"
#include "common/status.h"

namespace keyflow {

// How generated events become records (from the job, not from the gen: text).
struct GeneratorRecordFormat {
  bool with_fields = false;  // JobSpec::reads_fields
  std::string key_field = "uid";
  std::string timestamp_field = "ts";
  // With with_fields: only these members go into the tape (JobSpec::fields, the job's declared
  // fields), in the order above; a member not listed is not generated at all. Empty: all four.
  std::vector<std::string> fields;
};

class GeneratorSplitReader {
 public:
  // Errors (InvalidArgument): the job's key type is not string; split_index is not a split of
  // `spec`; `from` lies beyond the split's end (the --input changed since the checkpoint).
  // Preconditions: spec came from ParseGeneratorSpec; clock != nullptr when spec.rate > 0
  // (borrowed, must outlive the reader).
  static Result<GeneratorSplitReader> Create(const GeneratorSpec& spec, int32_t split_index,
                                             const KeyGroupAssigner& assigner,
                                             SplitPosition from = SplitPosition(),
                                             const Clock* clock = nullptr,
                                             const GeneratorRecordFormat& format = {});

  // kRecord (the next event in *out; position() after it), kEndOfSplit, or kThrottled.
  SplitReadResult Next(Record* out) {
    if (next_ >= size_) return Held() ? SplitReadResult::kThrottled : SplitReadResult::kEndOfSplit;
    if (budget_ == 0 && !Refill()) return SplitReadResult::kThrottled;
    --budget_;
    ++emitted_;
    EventAt(next_++, out);
    return SplitReadResult::kRecord;
  }

  // Event `index` of this split, without pacing and without moving the position.
  // Precondition: 0 <= index < size().
  void EventAt(int64_t index, Record* out) const;

  SplitPosition position() const { return SplitPosition::InGenerator(next_); }
  int64_t size() const { return size_; }  // events in this split
  int32_t split_index() const { return split_; }
  // When kThrottled was returned: the clock time at which the next event is allowed.
  Timestamp next_available_time() const { return next_available_; }

 private:
  GeneratorSplitReader(const GeneratorSpec& spec, int32_t split, const KeyGroupAssigner& a);
  // Reads the clock and recomputes budget_. False if no event is allowed yet.
  bool Refill();
  // With a hold file (GeneratorSpec::hold) that does not exist yet: true, and
  // next_available_time() is when to look again (50 ms later).
  bool Held();
  int64_t ZipfRank(uint64_t hash) const;
  int64_t HotSetRank(int64_t index, uint64_t hash) const;
  void WriteFields(uint64_t hash, std::string_view key, Timestamp timestamp, Record* out) const;

  KeyGroupAssigner assigner_;
  int32_t split_;
  int32_t splits_;
  int64_t size_;
  int64_t keys_in_split_;
  int64_t start_ms_, step_ms_, disorder_ms_;
  int32_t payload_bytes_;
  int32_t note_bytes_;
  bool with_fields_ = false;
  // Members written to the tape (with_fields_): all without a projection.
  bool write_key_ = true, write_ts_ = true, write_amount_ = true, write_note_ = true;
  mutable FieldTapeWriter tape_;  // reused by EventAt (single thread)
  mutable std::string note_;
  std::string key_field_, ts_field_;
  uint64_t split_base_;
  bool skewed_;
  int64_t hot_keys_in_split_ = 0;  // 0: no hot set
  double hot_share_ = 1.0;
  double zipf_a_ = 0, zipf_inv_a_ = 0, zipf_c_ = 0, zipf_log_n1_ = 0;
  int64_t next_ = 0;

  // Pacing: at time t (ms), floor((t - anchor_ms_) * per_ms_) + 1 events may have been emitted
  // since the anchor; budget_ is what is left before the clock is read again.
  const Clock* clock_ = nullptr;
  double per_ms_ = 0;  // events per ms for this split; 0 = unlimited
  int64_t max_burst_ = 0;
  bool started_ = false;
  int64_t anchor_ms_ = 0;
  int64_t emitted_ = 0;  // since the anchor (may start negative after a re-anchor)
  int64_t budget_ = 0;
  Timestamp next_available_;
  std::string hold_;  // GeneratorSpec::hold; cleared once the file exists
};

}  // namespace keyflow
