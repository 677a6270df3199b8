#include "checkpoint/checkpoint_metadata.h"

#include <algorithm>
#include <set>

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

void WriteSharedFiles(BinaryWriter& w, const std::vector<SharedStateFile>& files) {
  w.VarU64(files.size());
  for (const SharedStateFile& f : files) {
    w.Bytes(f.name);
    w.U64(f.size);
    w.U64(f.checksum);
  }
}

// Smallest encoded SharedStateFile / PrivateStateFile: empty name + two u64.
constexpr size_t kMinFileBytes = 1 + 16;

std::vector<SharedStateFile> ReadSharedFiles(BinaryReader& r) {
  std::vector<SharedStateFile> v;
  uint64_t n = r.Count(kMinFileBytes);
  v.reserve(n);
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    SharedStateFile f;
    f.name = std::string(r.Bytes());
    f.size = r.U64();
    f.checksum = r.U64();
    v.push_back(std::move(f));
  }
  return v;
}

// Range as two i32; Corruption-worthy when not a range (start < 0 or end < start - 1).
bool ReadRange(BinaryReader& r, KeyGroupRange* range) {
  int32_t start = r.I32();
  int32_t end = r.I32();
  if (!r.ok() || start < 0 || end < start - 1) return false;
  *range = KeyGroupRange::Of(start, end);
  return true;
}

void WriteNative(BinaryWriter& w, const IncrementalKeyedStateHandle& n) {
  w.Bytes(n.backend);
  w.U32(n.format_version);
  w.Bytes(n.backend_id);
  w.I32(n.range.start());
  w.I32(n.range.end());
  WriteSharedFiles(w, n.shared_files);
  w.VarU64(n.private_files.size());
  for (const PrivateStateFile& f : n.private_files) {
    w.Bytes(f.path);
    w.U64(f.size);
    w.U64(f.checksum);
  }
  w.U64(n.total_keys);
}

bool ReadNative(BinaryReader& r, IncrementalKeyedStateHandle* n) {
  n->backend = std::string(r.Bytes());
  n->format_version = r.U32();
  n->backend_id = std::string(r.Bytes());
  if (!ReadRange(r, &n->range)) return false;
  n->shared_files = ReadSharedFiles(r);
  uint64_t num_private = r.Count(kMinFileBytes);
  n->private_files.reserve(num_private);
  for (uint64_t i = 0; i < num_private && r.ok(); ++i) {
    PrivateStateFile f;
    f.path = std::string(r.Bytes());
    f.size = r.U64();
    f.checksum = r.U64();
    n->private_files.push_back(std::move(f));
  }
  n->total_keys = r.U64();
  return r.ok();
}

Status ValidateSharedFiles(const std::vector<SharedStateFile>& files, const std::string& who) {
  for (const SharedStateFile& f : files) {
    KF_RETURN_IF_ERROR(CheckSharedFileName(f.name, who + "'s shared file"));
  }
  return Status::Ok();
}

Status ValidateHandle(const KeyGroupsStateHandle& h, const KeyGroupRange& expected, int32_t i,
                      bool savepoint) {
  const std::string who = "subtask " + std::to_string(i);
  if (h.incremental()) {
    if (savepoint) {
      return InvalidArgument(who +
                             " references shared files, but a savepoint must be self-contained "
                             "(a full snapshot in its own directory)");
    }
    if (!h.path.empty()) {
      return InvalidArgument(who + " names both a state file ('" + h.path.substr(0, 200) +
                             "') and shared files; a key-group-incremental handle has no path");
    }
    KF_RETURN_IF_ERROR(ValidateSharedFiles(h.shared_files, who));
  } else {
    if (h.path.empty()) return InvalidArgument(who + " has no state file path");
    // Relative, without "..": a crafted `_metadata` must not make a restore read (or
    // `checkpoint inspect` stat) a file outside its checkpoint directory.
    KF_RETURN_IF_ERROR(CheckRelativePath(h.path, who + "'s state file"));
    if (!h.block_file.empty()) {
      return InvalidArgument(who + " has block file indexes but no shared files");
    }
  }
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
  if (h.incremental() && h.block_file.size() != n) {
    return InvalidArgument(who + " must have one block file index per key group (" +
                           std::to_string(n) + "), has " + std::to_string(h.block_file.size()));
  }
  for (size_t k = 0; k < n; ++k) {
    const std::string group = std::to_string(expected.start() + static_cast<int32_t>(k));
    uint64_t file_size = h.size;
    std::string file = "its file";
    if (h.incremental()) {
      if (h.block_file[k] >= h.shared_files.size()) {
        return InvalidArgument(who + ": key group " + group + " names shared file " +
                               std::to_string(h.block_file[k]) + " but there are only " +
                               std::to_string(h.shared_files.size()));
      }
      const SharedStateFile& f = h.shared_files[h.block_file[k]];
      file_size = f.size;
      file = "its shared file " + f.name;
    }
    if (h.offsets[k] > file_size || h.lengths[k] > file_size - h.offsets[k]) {
      return InvalidArgument(who + ": the block of key group " + group + " lies outside " + file +
                             " of " + std::to_string(file_size) + " bytes");
    }
  }
  return Status::Ok();
}

Status ValidateNative(const IncrementalKeyedStateHandle& n, const KeyGroupRange& expected,
                      int32_t i) {
  const std::string who = "subtask " + std::to_string(i) + "'s native state";
  if (n.backend != "rocksdb") {
    return InvalidArgument(who + " is of backend '" + n.backend.substr(0, 100) +
                           "'; only 'rocksdb' snapshots are native");
  }
  if (!(n.range == expected)) {
    return InvalidArgument(who + " covers " + n.range.ToString() + " but the subtask owns " +
                           expected.ToString());
  }
  KF_RETURN_IF_ERROR(ValidateSharedFiles(n.shared_files, who));
  for (const PrivateStateFile& f : n.private_files) {
    KF_RETURN_IF_ERROR(CheckRelativePath(f.path, who + "'s private file"));
  }
  return Status::Ok();
}

}  // namespace

bool IsValidSharedFileName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Status CheckSharedFileName(std::string_view name, std::string_view what) {
  if (IsValidSharedFileName(name)) return Status::Ok();
  return InvalidArgument(std::string(what) + " name '" + std::string(name.substr(0, 200)) +
                         "' is not a plain file name of [A-Za-z0-9._-] (no '/', not '.' or "
                         "'..'): it must lie in the job's shared directory");
}

std::vector<SharedStateFile> SubtaskCheckpointState::SharedFiles() const {
  std::vector<SharedStateFile> out;
  std::set<std::string_view> seen;
  auto add = [&](const std::vector<SharedStateFile>& files) {
    for (const SharedStateFile& f : files) {
      if (seen.insert(f.name).second) out.push_back(f);
    }
  };
  add(keyed_state.shared_files);
  if (native_state) add(native_state->shared_files);
  return out;
}

uint64_t SubtaskCheckpointState::StateBytes() const {
  uint64_t total = keyed_state.incremental() ? 0 : keyed_state.size;
  for (const SharedStateFile& f : SharedFiles()) total += f.size;
  if (native_state) {
    for (const PrivateStateFile& f : native_state->private_files) total += f.size;
  }
  return total;
}

uint64_t CheckpointMetadata::TotalStateBytes() const {
  uint64_t total = 0;
  for (const auto& s : subtasks) total += s.StateBytes();
  return total;
}

uint64_t CheckpointMetadata::TotalWrittenBytes() const {
  uint64_t total = 0;
  for (const auto& s : subtasks) total += s.written_bytes;
  return total;
}

std::vector<SharedStateFile> CheckpointMetadata::SharedFiles() const {
  std::vector<SharedStateFile> out;
  std::set<std::string> seen;
  for (const auto& s : subtasks) {
    for (SharedStateFile& f : s.SharedFiles()) {
      if (seen.insert(f.name).second) out.push_back(std::move(f));
    }
  }
  return out;
}

std::string_view CheckpointMetadata::TypeName() const {
  if (savepoint) return "savepoint";
  return final ? "final" : "checkpoint";
}

Status ValidateSubtaskState(const SubtaskCheckpointState& s, const KeyGroupRange& range,
                            bool savepoint) {
  const int32_t i = s.subtask.value();
  KF_RETURN_IF_ERROR(ValidateHandle(s.keyed_state, range, i, savepoint));
  if (s.native_state) {
    if (savepoint) {
      return InvalidArgument("subtask " + std::to_string(i) +
                             " has native state, but a savepoint must be self-contained (the "
                             "canonical full format)");
    }
    KF_RETURN_IF_ERROR(ValidateNative(*s.native_state, range, i));
  }
  return Status::Ok();
}

Status CheckpointMetadata::Validate() const {
  if (id.value() < 1)
    return InvalidArgument("checkpoint id " + std::to_string(id.value()) + " < 1");
  KF_RETURN_IF_ERROR(ValidateParallelism(spec.parallelism, spec.max_parallelism));
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
    const KeyGroupRange range = ComputeKeyGroupRangeForOperatorIndex(
        spec.max_parallelism, spec.parallelism, SubtaskIndex(i));
    KF_RETURN_IF_ERROR(ValidateSubtaskState(s, range, savepoint));
    if (s.native_state.has_value() != subtasks[0].native_state.has_value()) {
      return InvalidArgument("subtask " + std::to_string(i) +
                             (s.native_state ? " has" : " has no") + " native state but subtask 0" +
                             (s.native_state ? " has none" : " has") +
                             "; either every subtask's keyed state is native or none is");
    }
  }
  // One name, one file: a name with two sizes or checksums means two uploads collided.
  std::map<std::string_view, const SharedStateFile*> names;
  auto check = [&names](const std::vector<SharedStateFile>& files) -> Status {
    for (const SharedStateFile& f : files) {
      auto [it, inserted] = names.emplace(f.name, &f);
      if (!inserted && (it->second->size != f.size || it->second->checksum != f.checksum)) {
        return InvalidArgument("shared file " + f.name +
                               " is named twice with different sizes or checksums");
      }
    }
    return Status::Ok();
  };
  for (const SubtaskCheckpointState& s : subtasks) {
    KF_RETURN_IF_ERROR(check(s.keyed_state.shared_files));
    if (s.native_state) KF_RETURN_IF_ERROR(check(s.native_state->shared_files));
  }
  return Status::Ok();
}

std::string CheckpointMetadata::Encode() const {
  Status valid = Validate();
  KF_CHECK(valid.ok()) << "encoding invalid checkpoint metadata: " << valid.ToString();
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
    // Version 2.
    WriteSharedFiles(w, h.shared_files);
    w.VarU64(h.block_file.size());
    for (uint32_t b : h.block_file) w.VarU64(b);
    w.U64(s.written_bytes);
    w.U8(s.native_state ? 1 : 0);
    if (s.native_state) WriteNative(w, *s.native_state);
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
  // Version 1 (full snapshots only) is still read; the envelope refuses any other version.
  KF_ASSIGN_OR_RETURN(
      DecodedEnvelope envelope,
      DecodeChecksummedEnvelope(bytes, kCheckpointMetadataMagic, kOldestCheckpointMetadataVersion,
                                kCheckpointMetadataVersion, what));
  const uint32_t version = envelope.version;
  const std::string_view body = envelope.body;
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
  KF_ASSIGN_OR_RETURN(m.spec, DecodeJobSpecBlob(spec_blob, what));
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
    if (!ReadRange(r, &h.range)) {
      if (!r.ok()) break;
      return Corruption(what + " is malformed: subtask " + std::to_string(i) +
                        " has an invalid key-group range");
    }
    h.offsets = ReadU64Vector(r);
    h.lengths = ReadU64Vector(r);
    h.keys = ReadU64Vector(r);
    h.timers = ReadU64Vector(r);
    if (version >= 2) {
      h.shared_files = ReadSharedFiles(r);
      uint64_t num_blocks = r.Count(1);
      h.block_file.reserve(num_blocks);
      for (uint64_t k = 0; k < num_blocks && r.ok(); ++k) {
        uint64_t b = r.VarU64();
        if (b > UINT32_MAX) {
          return Corruption(what + " is malformed: subtask " + std::to_string(i) +
                            " has a block file index of " + std::to_string(b));
        }
        h.block_file.push_back(static_cast<uint32_t>(b));
      }
      s.written_bytes = r.U64();
      uint8_t has_native = r.U8();
      if (!r.ok()) break;
      if (has_native > 1) {
        return Corruption(what + " is malformed: subtask " + std::to_string(i) +
                          " has a native-state flag of " + std::to_string(has_native));
      }
      if (has_native == 1) {
        s.native_state.emplace();
        if (!ReadNative(r, &*s.native_state)) {
          if (!r.ok()) break;
          return Corruption(what + " is malformed: subtask " + std::to_string(i) +
                            "'s native state has an invalid key-group range");
        }
      }
    } else {
      s.written_bytes = h.size;  // a version-1 checkpoint wrote its full file
    }
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
