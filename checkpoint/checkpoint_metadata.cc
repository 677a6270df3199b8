#include "checkpoint/checkpoint_metadata.h"

#include "checkpoint/checksummed_envelope.h"
#include "common/binary_io.h"
#include "common/file_io.h"
#include "common/key_group_assignment.h"

namespace keyflow {
namespace {

constexpr uint8_t kFlagSavepoint = 1;
constexpr uint8_t kFlagFinal = 2;

void WriteU64Vector(BinaryWriter& w, const std::vector<uint64_t>& v) {
  w.VarU64(v.size());
  for (uint64_t x : v) w.VarU64(x);
}

// Each element takes at least one byte, so Count(1) bounds the allocation by the input size.
std::vector<uint64_t> ReadU64Vector(BinaryReader& r) {
  std::vector<uint64_t> v;
  uint64_t n = r.Count(1);
  v.reserve(n);
  for (uint64_t i = 0; i < n && r.ok(); ++i) v.push_back(r.VarU64());
  return v;
}

Status ValidateHandle(const KeyGroupsStateHandle& h, const KeyGroupRange& expected, int32_t i) {
  const std::string who = "subtask " + std::to_string(i);
  if (h.path.empty()) return InvalidArgument(who + " has no state file path");
  // Relative, without "..": a crafted `_metadata` must not make a restore read (or `checkpoint
  // inspect` stat) a file outside its checkpoint directory.
  RETURN_IF_ERROR(CheckRelativePath(h.path, who + "'s state file"));
  if (!(h.range == expected)) {
    return InvalidArgument(who + " covers " + h.range.ToString() + " but owns " +
                           expected.ToString());
  }
  const size_t n = static_cast<size_t>(expected.size());
  if (h.offsets.size() != n || h.lengths.size() != n || h.keys.size() != n ||
      h.timers.size() != n) {
    return InvalidArgument(who +
                           " must have one offset, length, key count and timer count per "
                           "key group (" +
                           std::to_string(n) + "), has " + std::to_string(h.offsets.size()) + ", " +
                           std::to_string(h.lengths.size()) + ", " + std::to_string(h.keys.size()) +
                           ", " + std::to_string(h.timers.size()));
  }
  for (size_t k = 0; k < n; ++k) {
    if (h.offsets[k] > h.size || h.lengths[k] > h.size - h.offsets[k]) {
      return InvalidArgument(who + ": the block of key group " +
                             std::to_string(expected.start() + static_cast<int32_t>(k)) +
                             " lies outside its file of " + std::to_string(h.size) + " bytes");
    }
  }
  return Status::Ok();
}

}  // namespace

uint64_t CheckpointMetadata::TotalStateBytes() const {
  uint64_t total = 0;
  for (const auto& s : subtasks) total += s.keyed_state.size;
  return total;
}

std::string_view CheckpointMetadata::TypeName() const {
  if (savepoint) return "savepoint";
  return final ? "final" : "checkpoint";
}

Status CheckpointMetadata::Validate() const {
  if (id.value() < 1)
    return InvalidArgument("checkpoint id " + std::to_string(id.value()) + " < 1");
  RETURN_IF_ERROR(ValidateParallelism(spec.parallelism, spec.max_parallelism));
  if (subtasks.size() != static_cast<size_t>(spec.parallelism)) {
    return InvalidArgument("parallelism is " + std::to_string(spec.parallelism) +
                           " but there are " + std::to_string(subtasks.size()) + " subtask states");
  }
  for (int32_t i = 0; i < spec.parallelism; ++i) {
    const SubtaskCheckpointState& s = subtasks[static_cast<size_t>(i)];
    if (s.subtask.value() != i) {
      return InvalidArgument("subtask state " + std::to_string(i) + " is labelled subtask " +
                             std::to_string(s.subtask.value()));
    }
    RETURN_IF_ERROR(ValidateHandle(s.keyed_state,
                                   ComputeKeyGroupRangeForOperatorIndex(
                                       spec.max_parallelism, spec.parallelism, SubtaskIndex(i)),
                                   i));
  }
  return Status::Ok();
}

std::string CheckpointMetadata::Encode() const {
  Status valid = Validate();
  CHECK(valid.ok()) << "encoding invalid checkpoint metadata: " << valid.ToString();
  std::string body;
  BinaryWriter w(&body);
  w.Bytes(job_id);
  w.I64(id.value());
  w.I64(timestamp_ms);
  w.I64(completed_ms);
  w.U8(static_cast<uint8_t>((savepoint ? kFlagSavepoint : 0) | (final ? kFlagFinal : 0)));
  w.I64(attempt.value());
  w.Bytes(EncodeJobSpecBlob(spec));
  w.VarU64(subtasks.size());
  for (const SubtaskCheckpointState& s : subtasks) {
    const KeyGroupsStateHandle& h = s.keyed_state;
    w.I32(s.subtask.value());
    w.Bytes(h.path);
    w.U64(h.size);
    w.U64(h.checksum);
    w.I32(h.range.start());
    w.I32(h.range.end());
    WriteU64Vector(w, h.offsets);
    WriteU64Vector(w, h.lengths);
    WriteU64Vector(w, h.keys);
    WriteU64Vector(w, h.timers);
  }
  w.VarU64(split_positions.size());
  for (const auto& [split, position] : split_positions) {
    w.Bytes(split);
    w.Bytes(position);
  }
  w.VarU64(sink_committables.size());
  for (const std::string& c : sink_committables) w.Bytes(c);
  return EncodeChecksummedEnvelope(kCheckpointMetadataMagic, kCheckpointMetadataVersion, body);
}

Result<CheckpointMetadata> CheckpointMetadata::Decode(std::string_view bytes,
                                                      std::string_view source) {
  const std::string what = "checkpoint metadata " + std::string(source);
  ASSIGN_OR_RETURN(
      std::string_view body,
      DecodeChecksummedEnvelope(bytes, kCheckpointMetadataMagic, kCheckpointMetadataVersion, what));
  BinaryReader r(body);
  CheckpointMetadata m;
  m.job_id = std::string(r.Bytes());
  m.id = CheckpointId(r.I64());
  m.timestamp_ms = r.I64();
  m.completed_ms = r.I64();
  uint8_t flags = r.U8();
  m.savepoint = (flags & kFlagSavepoint) != 0;
  m.final = (flags & kFlagFinal) != 0;
  m.attempt = AttemptNumber(r.I64());
  std::string_view spec_blob = r.Bytes();
  if (!r.ok()) return r.status(what);
  if ((flags & ~(kFlagSavepoint | kFlagFinal)) != 0) {
    return Corruption(what + " is malformed: unknown flags " + std::to_string(flags));
  }
  ASSIGN_OR_RETURN(m.spec, DecodeJobSpecBlob(spec_blob, what));
  // Smallest encoded subtask state: i32 + empty path + 2 u64 + 2 i32 + 4 empty vectors.
  constexpr size_t kMinSubtaskBytes = 4 + 1 + 16 + 8 + 4;
  uint64_t num_subtasks = r.Count(kMinSubtaskBytes);
  m.subtasks.reserve(num_subtasks);
  for (uint64_t i = 0; i < num_subtasks && r.ok(); ++i) {
    SubtaskCheckpointState s;
    KeyGroupsStateHandle& h = s.keyed_state;
    s.subtask = SubtaskIndex(r.I32());
    h.path = std::string(r.Bytes());
    h.size = r.U64();
    h.checksum = r.U64();
    int32_t start = r.I32();
    int32_t end = r.I32();
    if (!r.ok()) break;
    if (start < 0 || end < start - 1) {
      return Corruption(what + " is malformed: subtask " + std::to_string(i) +
                        " has an invalid key-group range [" + std::to_string(start) + ", " +
                        std::to_string(end) + "]");
    }
    h.range = KeyGroupRange::Of(start, end);
    h.offsets = ReadU64Vector(r);
    h.lengths = ReadU64Vector(r);
    h.keys = ReadU64Vector(r);
    h.timers = ReadU64Vector(r);
    m.subtasks.push_back(std::move(s));
  }
  uint64_t num_splits = r.Count(2);
  for (uint64_t i = 0; i < num_splits && r.ok(); ++i) {
    std::string split(r.Bytes());
    m.split_positions[std::move(split)] = std::string(r.Bytes());
  }
  uint64_t num_committables = r.Count(1);
  m.sink_committables.reserve(num_committables);
  for (uint64_t i = 0; i < num_committables && r.ok(); ++i) {
    m.sink_committables.emplace_back(r.Bytes());
  }
  if (!r.ok()) return r.status(what);
  if (!r.at_end()) {
    return Corruption(what + " is malformed: " + std::to_string(r.remaining()) +
                      " unexpected bytes after the last field");
  }
  Status valid = m.Validate();
  if (!valid.ok()) return Corruption(what + " is inconsistent: " + valid.message());
  return m;
}

}  // namespace keyflow
