// SourceSplit, SplitPosition, SourceSplitState: the replayable slices of a job's input and how far
// a reader got in one (Flink's FLIP-27 SourceSplit with its checkpointed position, §5.6).
//
// InputSpec (input_spec.h) turns --input into a list of splits; the source subtask reads its
// splits with FileSplitReader / GeneratorSplitReader and, at a checkpoint, stores every split
// with its position (SourceSplitState) in the checkpoint. On restore or rescale the splits are
// handed out again with their positions and the readers resume exactly there.
//
// Encoding (little-endian, via BinaryWriter; described in worker/README.md "Sources"):
//   SourceSplit    = u8 format version (1), u8 kind, i32 id, then
//                    kind file: bytes path | kind generator: i32 generator split index |
//                    kind kafka: bytes topic, i32 partition, i64 stop offset (-1: none) |
//                    kind connector: bytes split (the job library source's split)
//   SplitPosition  = varint offset, varint lines consumed
//   SourceSplitState = SourceSplit, SplitPosition [, bytes connector position: kind connector]
//
// Value types; no threading concerns.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/binary_io.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

struct SplitIdTag {};
// Index of a split in InputSpec::splits(): the sorted file list or the generator split index.
using SplitId = StrongId<SplitIdTag, int32_t>;

enum class SplitKind : uint8_t { kFile = 1, kGenerator = 2, kKafka = 3, kConnector = 4 };
std::string_view SplitKindName(SplitKind kind);  // "file" | "generator" | "kafka" | "connector"

class SourceSplit {
 public:
  SourceSplit() = default;  // a file split with id 0 and an empty path; only for decoding
  static SourceSplit File(SplitId id, std::string path);
  // Precondition: generator_index >= 0.
  static SourceSplit Generator(SplitId id, int32_t generator_index);
  // A partition of a Kafka topic, read up to (not including) `stop_offset`, or without end
  // when it is kNoStopOffset. Preconditions: topic non-empty, partition >= 0, stop_offset >= -1.
  static constexpr int64_t kNoStopOffset = -1;
  static SourceSplit KafkaPartition(SplitId id, std::string topic, int32_t partition,
                                    int64_t stop_offset = kNoStopOffset);
  // A split of a job library's source (--input connector:...). Precondition: split non-empty.
  static SourceSplit Connector(SplitId id, std::string split);

  SplitId id() const { return id_; }
  SplitKind kind() const { return kind_; }
  // The file to read. Precondition: kind() == kFile.
  const std::string& path() const;
  // Which of the generator's splits this is. Precondition: kind() == kGenerator.
  int32_t generator_index() const;
  // Preconditions (all three): kind() == kKafka.
  const std::string& topic() const;
  int32_t partition() const;
  int64_t stop_offset() const;
  // The source's split text. Precondition: kind() == kConnector.
  const std::string& connector_split() const;

  // "file split 2 (/data/b.jsonl)" / "generator split 3" / "kafka split 4 (events-1)".
  std::string ToString() const;

  void EncodeTo(BinaryWriter* out) const;
  // Corruption if the bytes are truncated, of an unknown version or kind.
  static Result<SourceSplit> DecodeFrom(BinaryReader* in);

  // Ordered by id first (then kind, path, generator index), equal iff all fields are equal.
  friend auto operator<=>(const SourceSplit&, const SourceSplit&) = default;
  friend bool operator==(const SourceSplit&, const SourceSplit&) = default;

 private:
  SplitId id_{0};
  SplitKind kind_ = SplitKind::kFile;
  std::string path_;             // file: the path; kafka: the topic; connector: the split
  int32_t generator_index_ = 0;  // generator: the index; kafka: the partition
  int64_t stop_offset_ = kNoStopOffset;
};

// Where the next record of a split starts. The default value is the start of any split.
//   file split:      byte offset of the next line, and how many lines precede it (so the next
//                    line number, used in bad-record reports, survives a restore);
//   generator split: index of the next event of the split;
//   kafka split:     offset of the next record of the partition;
//   connector split: records read, and the reader's own position (opaque bytes).
class SplitPosition {
 public:
  SplitPosition() = default;
  // Preconditions: byte_offset >= 0, next_line_number >= 1.
  static SplitPosition InFile(int64_t byte_offset, int64_t next_line_number);
  // Precondition: next_index >= 0.
  static SplitPosition InGenerator(int64_t next_index);
  // Precondition: next_offset >= 0.
  static SplitPosition InKafka(int64_t next_offset);
  // After `records` records of a connector split; `position`: ConnectorSplitReader::Position().
  static SplitPosition InConnector(int64_t records, std::string position);

  int64_t byte_offset() const { return offset_; }
  int64_t next_line_number() const { return lines_ + 1; }  // 1-based
  int64_t next_event_index() const { return offset_; }
  int64_t next_kafka_offset() const { return offset_; }
  const std::string& connector_position() const { return connector_; }

  // Advances a file position past one line of `bytes` bytes (including its line terminator).
  void AdvanceLine(int64_t bytes) {
    offset_ += bytes;
    ++lines_;
  }
  // Advances a generator position past one event.
  void AdvanceEvent() { ++offset_; }
  // Moves a Kafka position to just after the record at `offset`.
  void AdvanceKafka(int64_t offset) { offset_ = offset + 1; }

  std::string ToString() const;  // "offset 1234, line 17"

  void EncodeTo(BinaryWriter* out) const;
  static Result<SplitPosition> DecodeFrom(BinaryReader* in);

  friend auto operator<=>(const SplitPosition&, const SplitPosition&) = default;
  friend bool operator==(const SplitPosition&, const SplitPosition&) = default;

 private:
  int64_t offset_ = 0;     // bytes (file) or events (generator) consumed
  int64_t lines_ = 0;      // lines consumed (file); 0 for a generator
  std::string connector_;  // a connector split's reader position (encoded by SourceSplitState)
};

// A split with its position: one entry of a source subtask's checkpointed state. `finished`:
// the reader read the split to its end (a restored finished split is not opened again, so a
// file may be removed once it was read).
struct SourceSplitState {
  SourceSplit split;
  SplitPosition position;
  bool finished = false;

  // [kFlagsMarker, u8 flags (bit 0: finished)] SourceSplit SplitPosition; the flag prefix only
  // when a flag is set, so an unfinished split encodes as it always did. The marker is no
  // SourceSplit format version.
  static constexpr uint8_t kFlagsMarker = 0xF2;
  void EncodeTo(BinaryWriter* out) const;
  // Corruption for truncated bytes, an unknown flag or any SourceSplit/SplitPosition error.
  static Result<SourceSplitState> DecodeFrom(BinaryReader* in);

  friend auto operator<=>(const SourceSplitState&, const SourceSplitState&) = default;
  friend bool operator==(const SourceSplitState&, const SourceSplitState&) = default;
};

// What a split reader's Next() produced.
enum class SplitReadResult : uint8_t {
  kRecord,      // a record was written to the output; the position is after it
  kEndOfSplit,  // the split is exhausted; the position stays at its end
  kThrottled,   // rate limit reached; try again at the reader's next_available_time()
};

}  // namespace keyflow
