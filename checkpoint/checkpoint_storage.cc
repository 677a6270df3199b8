#include "checkpoint/checkpoint_storage.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>

#include "checkpoint/checksummed_envelope.h"
#include "common/binary_io.h"
#include "common/file_io.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

constexpr std::string_view kCheckpointPrefix = "chk-";
constexpr std::string_view kSavepointPrefix = "savepoint-";
constexpr std::string_view kMetadataFileName = "_metadata";
constexpr std::string_view kJobRecordFileName = "_job";
constexpr std::string_view kSharedDirectoryName = "shared";

// Corruption unless `path` exists with `expected` bytes: "<what> <path><of> is truncated: ...".
Status CheckFileSize(FileSystem& fs, const std::string& path, uint64_t expected,
                     const std::string& what, const std::string& of) {
  Result<FileInfo> info = fs.Stat(path);
  if (!info.ok()) {
    return Corruption(what + " " + path + of +
                      " is missing or unreadable: " + info.status().message());
  }
  if (info->size != expected) {
    return Corruption(what + " " + path + of + " is " +
                      (info->size < expected ? "truncated" : "too long") + ": expected " +
                      std::to_string(expected) + " bytes, found " + std::to_string(info->size));
  }
  return Status::Ok();
}

// "chk-17" -> 17 for prefix "chk-"; nullopt for anything else ("chk-", "chk-01x", "chk-0").
std::optional<int64_t> ParseIdSuffix(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || digits.front() == '0') return std::nullopt;
  int64_t id = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return id;
}

}  // namespace

// ---- JobRecord ------------------------------------------------------------------------------

std::string JobRecord::Encode() const {
  std::string body;
  BinaryWriter w(&body);
  w.Bytes(job_id);
  w.Bytes(EncodeJobSpecBlob(spec));
  w.Bytes(state);
  w.I64(last_attempt.value());
  auto command = [&w](const JobCommand& c) {
    w.Bytes(c.what);
    w.Bytes(c.retry);
    w.Bytes(c.directory);
    w.I64(c.target_parallelism);
  };
  w.I64(static_cast<int64_t>(pending_commands.size()));
  for (const JobCommand& c : pending_commands) command(c);
  command(last_command);
  w.Bytes(last_command_outcome);
  w.Bytes(rescale_savepoint);
  w.I64(rescale_savepoint_id.value());
  return EncodeChecksummedEnvelope(kJobRecordMagic, kJobRecordVersion, body);
}

Result<JobRecord> JobRecord::Decode(std::string_view bytes, std::string_view source) {
  const std::string what = "job record " + std::string(source);
  // Versions 1 (no commands) and 2 (no rescale savepoint) are still read; any other version is
  // refused by the envelope.
  KF_ASSIGN_OR_RETURN(DecodedEnvelope envelope, DecodeChecksummedEnvelope(bytes, kJobRecordMagic, 1,
                                                                          kJobRecordVersion, what));
  const uint32_t version = envelope.version;
  const std::string_view body = envelope.body;
  BinaryReader r(body);
  JobRecord rec;
  rec.job_id = std::string(r.Bytes());
  std::string_view spec_blob = r.Bytes();
  rec.state = std::string(r.Bytes());
  rec.last_attempt = AttemptNumber(r.I64());
  if (version >= 2) {
    auto command = [&r]() {
      JobCommand c;
      c.what = std::string(r.Bytes());
      c.retry = std::string(r.Bytes());
      c.directory = std::string(r.Bytes());
      c.target_parallelism = static_cast<int32_t>(r.I64());
      return c;
    };
    int64_t n = r.I64();
    for (int64_t i = 0; r.ok() && i < n && !r.at_end(); ++i)
      rec.pending_commands.push_back(command());
    rec.last_command = command();
    rec.last_command_outcome = std::string(r.Bytes());
  }
  if (version >= 3) {
    rec.rescale_savepoint = std::string(r.Bytes());
    rec.rescale_savepoint_id = CheckpointId(r.I64());
  }
  if (!r.ok()) return r.status(what);
  if (!r.at_end()) {
    return Corruption(what + " is malformed: " + std::to_string(r.remaining()) +
                      " unexpected bytes after the last field");
  }
  KF_ASSIGN_OR_RETURN(rec.spec, DecodeJobSpecBlob(spec_blob, what));
  return rec;
}

// ---- CheckpointStorage ----------------------------------------------------------------------

CheckpointStorage::CheckpointStorage(const std::string& root, FileSystem& fs)
    : root_(AbsoluteNormalPath(root)), fs_(&fs) {}

std::string CheckpointStorage::JobDirectory(const std::string& job_id) const {
  return root_ + "/" + job_id;
}

std::string CheckpointStorage::CheckpointDirectory(const std::string& job_id,
                                                   CheckpointId id) const {
  return JobDirectory(job_id) + "/" + std::string(kCheckpointPrefix) + std::to_string(id.value());
}

std::string CheckpointStorage::SavepointDirectory(const std::string& job_id,
                                                  CheckpointId id) const {
  return JobDirectory(job_id) + "/" + std::string(kSavepointPrefix) + std::to_string(id.value());
}

std::string CheckpointStorage::MetadataPath(const std::string& checkpoint_dir) {
  return checkpoint_dir + "/" + std::string(kMetadataFileName);
}

std::string CheckpointStorage::SubtaskStateFileName(SubtaskIndex subtask) {
  return "subtask-" + std::to_string(subtask.value()) + ".kgs";
}

std::string CheckpointStorage::SharedDirectory(const std::string& job_id) const {
  return JobDirectory(job_id) + "/" + std::string(kSharedDirectoryName);
}

std::string CheckpointStorage::SharedDirectoryOf(const std::string& checkpoint_dir) {
  const std::string dir = AbsoluteNormalPath(checkpoint_dir);
  return (std::filesystem::path(dir).parent_path() / std::string(kSharedDirectoryName)).string();
}

Status CheckpointStorage::PrepareSharedDirectory(const std::string& job_id) const {
  const std::string dir = SharedDirectory(job_id);
  if (fs_->IsDirectory(dir)) return Status::Ok();
  KF_RETURN_IF_ERROR_CTX(fs_->CreateDirectories(dir, kPrivateDirectoryMode),
                         "cannot create the shared directory of incremental checkpoints");
  return Status::Ok();
}

Status CheckpointStorage::PrepareCheckpointDirectory(const std::string& dir) const {
  if (fs_->Exists(dir)) {
    if (!fs_->IsDirectory(dir)) {
      return AlreadyExists("cannot use " + dir +
                           " as a checkpoint directory: it exists and is not a directory");
    }
    KF_ASSIGN_OR_RETURN(std::vector<std::string> entries, fs_->ListDirectory(dir));
    if (!entries.empty()) {
      return AlreadyExists("checkpoint directory " + dir + " already exists and is not empty (" +
                           entries.front() + ", ...): choose a new or empty directory");
    }
    return Status::Ok();
  }
  return fs_->CreateDirectories(dir, kPrivateDirectoryMode);
}

Status CheckpointStorage::WriteMetadata(const std::string& checkpoint_dir,
                                        const CheckpointMetadata& m) const {
  KF_RETURN_IF_ERROR_CTX(fs_->WriteFileAtomically(MetadataPath(checkpoint_dir), m.Encode()),
                         "cannot write the metadata of checkpoint " + std::to_string(m.id.value()));
  return Status::Ok();
}

Result<CheckpointMetadata> CheckpointStorage::ReadMetadata(
    const std::string& checkpoint_dir_or_file, FileSystem& fs) {
  std::string path = fs.IsDirectory(checkpoint_dir_or_file) ? MetadataPath(checkpoint_dir_or_file)
                                                            : checkpoint_dir_or_file;
  if (!fs.Exists(path)) {
    if (fs.Exists(checkpoint_dir_or_file)) {
      return NotFound("no completed checkpoint in " + checkpoint_dir_or_file + ": " +
                      std::string(kMetadataFileName) +
                      " is missing (the checkpoint was never completed)");
    }
    return NotFound("no checkpoint at " + checkpoint_dir_or_file + ": no such file or directory");
  }
  KF_ASSIGN_OR_RETURN(std::string bytes, fs.ReadFileToString(path));
  return CheckpointMetadata::Decode(bytes, path);
}

Status CheckpointStorage::VerifyStateFiles(const std::string& checkpoint_dir,
                                           const CheckpointMetadata& m, FileSystem& fs) {
  const std::string shared_dir = SharedDirectoryOf(checkpoint_dir);
  for (const SubtaskCheckpointState& s : m.subtasks) {
    const std::string of = " of subtask " + std::to_string(s.subtask.value()) + " of checkpoint " +
                           std::to_string(m.id.value());
    // Inside their directories, also after symbolic links: a savepoint whose subtask-<i>.kgs
    // links to another file is refused before any worker reads it.
    auto check = [&](const std::string& base, const std::string& relative, uint64_t size,
                     const std::string& what) -> Status {
      Result<std::string> resolved = ResolveInside(base, relative, "the " + what + of);
      if (!resolved.ok()) return Corruption(resolved.status().message());
      return CheckFileSize(fs, *resolved, size, what, of);
    };
    if (!s.keyed_state.incremental()) {
      KF_RETURN_IF_ERROR(
          check(checkpoint_dir, s.keyed_state.path, s.keyed_state.size, "state file"));
    }
    for (const SharedStateFile& f : s.SharedFiles()) {
      KF_RETURN_IF_ERROR(check(shared_dir, f.name, f.size, "shared state file"));
    }
    if (s.native_state) {
      for (const PrivateStateFile& f : s.native_state->private_files) {
        KF_RETURN_IF_ERROR(check(checkpoint_dir, f.path, f.size, "private state file"));
      }
    }
  }
  return Status::Ok();
}

Result<std::vector<CheckpointLocation>> CheckpointStorage::List(const std::string& job_id,
                                                                std::string_view prefix,
                                                                bool savepoint) const {
  std::vector<CheckpointLocation> out;
  const std::string job_dir = JobDirectory(job_id);
  if (!fs_->Exists(job_dir)) return out;
  KF_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDirectory(job_dir));
  for (const std::string& name : names) {
    std::optional<int64_t> id = ParseIdSuffix(name, prefix);
    if (!id) continue;
    const std::string dir = job_dir + "/" + name;
    if (!fs_->Exists(MetadataPath(dir))) continue;  // never completed: does not exist
    Result<CheckpointMetadata> m = ReadMetadata(dir, *fs_);
    if (!m.ok() && m.status().code() == StatusCode::kFailedPrecondition) {
      // Intact, but of a format version this build does not read (a version skew): it can
      // neither restore it nor know the shared files it keeps, so nothing of this job may be
      // restored, retained or swept by it (checkpoint/README.md "Format versions").
      return m.status();
    }
    if (!m.ok()) {
      KF_LOG_WARN("skipping checkpoint directory dir={} reason={}", dir, m.status().ToString());
      continue;
    }
    if (m->id.value() != *id || m->savepoint != savepoint) {
      KF_LOG_WARN("skipping checkpoint directory dir={} reason=its metadata names {} {}", dir,
                  m->TypeName(), m->id.value());
      continue;
    }
    out.push_back(CheckpointLocation{CheckpointId(*id), savepoint, dir});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointLocation& a, const CheckpointLocation& b) { return a.id < b.id; });
  return out;
}

Result<std::vector<CheckpointLocation>> CheckpointStorage::ListCompletedCheckpoints(
    const std::string& job_id) const {
  return List(job_id, kCheckpointPrefix, /*savepoint=*/false);
}

Result<std::vector<CheckpointLocation>> CheckpointStorage::ListSavepoints(
    const std::string& job_id) const {
  return List(job_id, kSavepointPrefix, /*savepoint=*/true);
}

Result<int64_t> CheckpointStorage::MaxUsedId(const std::string& job_id) const {
  const std::string job_dir = JobDirectory(job_id);
  if (!fs_->Exists(job_dir)) return int64_t{0};
  KF_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDirectory(job_dir));
  int64_t max_id = 0;
  for (const std::string& name : names) {
    std::optional<int64_t> id = ParseIdSuffix(name, kCheckpointPrefix);
    if (!id) id = ParseIdSuffix(name, kSavepointPrefix);
    if (id) max_id = std::max(max_id, *id);
  }
  return max_id;
}

Status CheckpointStorage::DeleteCheckpoint(const std::string& checkpoint_dir) const {
  return fs_->RemoveAll(checkpoint_dir);
}

Status CheckpointStorage::WriteJobRecord(const JobRecord& record) const {
  const std::string dir = JobDirectory(record.job_id);
  KF_RETURN_IF_ERROR(fs_->CreateDirectories(dir, kPrivateDirectoryMode));
  return fs_->WriteFileAtomically(dir + "/" + std::string(kJobRecordFileName), record.Encode());
}

Result<std::vector<JobRecord>> CheckpointStorage::ListJobRecords() const {
  std::vector<JobRecord> out;
  if (!fs_->Exists(root_)) return out;
  KF_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDirectory(root_));
  for (const std::string& name : names) {
    const std::string path = root_ + "/" + name + "/" + std::string(kJobRecordFileName);
    if (!fs_->Exists(path)) continue;
    Result<std::string> bytes = fs_->ReadFileToString(path);
    Result<JobRecord> rec =
        bytes.ok() ? JobRecord::Decode(*bytes, path) : Result<JobRecord>(bytes.status());
    if (!rec.ok()) {
      KF_LOG_WARN("skipping job record path={} reason={}", path, rec.status().ToString());
      continue;
    }
    out.push_back(std::move(rec).value());
  }
  return out;
}

}  // namespace keyflow
