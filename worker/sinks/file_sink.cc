#include "worker/sinks/file_sink.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "common/check.h"

namespace keyflow {
namespace {

constexpr uint8_t kCommittableVersion = 1;
constexpr std::string_view kInProgressSuffix = ".inprogress";
constexpr std::string_view kPendingSuffix = ".pending";
constexpr std::string_view kCommittedSuffix = ".jsonl";
constexpr std::string_view kFinalTag = "-final";

std::string JoinPath(const std::string& dir, std::string_view name) {
  std::string p = dir;
  if (p.empty() || p.back() != '/') p += '/';
  p += name;
  return p;
}

// Size and Checksum64 of a file's content.
Status ChecksumFile(FileSystem& fs, const std::string& path, uint64_t* size, uint64_t* checksum) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, fs.NewRandomAccessFile(path));
  StreamingChecksum sum;
  constexpr uint64_t kChunk = 1 << 20;
  std::string buf;
  for (uint64_t offset = 0; offset < f->size(); offset += kChunk) {
    KF_RETURN_IF_ERROR(
        f->ReadAt(offset, static_cast<size_t>(std::min(kChunk, f->size() - offset)), &buf));
    sum.Update(buf.data(), buf.size());
  }
  *size = f->size();
  *checksum = sum.Digest();
  return Status::Ok();
}

bool IsDigits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Splits `count` non-negative integers off the end of
// "<rest>-<n1>-...-<count>", leaving
// `*body` = rest. Fields are returned left to right.
bool SplitTrailingInts(std::string_view* body, int count, int64_t* fields) {
  for (int i = count - 1; i >= 0; --i) {
    size_t dash = body->rfind('-');
    if (dash == std::string_view::npos) return false;
    std::string_view field = body->substr(dash + 1);
    if (!IsDigits(field)) return false;
    std::from_chars(field.data(), field.data() + field.size(), fields[i]);
    *body = body->substr(0, dash);
  }
  return true;
}

// A file name written by a FileSink with `prefix`, decoded.
struct SinkFileName {
  enum Kind { kInProgress, kPending, kCommitted, kFinal } kind;
  int64_t subtask = 0;
  int64_t attempt = 0;
  int64_t checkpoint = 0;  // kPending and kCommitted only
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::optional<SinkFileName> ParseSinkFileName(std::string_view name, std::string_view prefix) {
  SinkFileName f{};
  int64_t fields[4];
  std::string_view body;
  if (!name.empty() && name[0] == '.' && EndsWith(name, kInProgressSuffix)) {
    body = name.substr(1, name.size() - 1 - kInProgressSuffix.size());
    if (!SplitTrailingInts(&body, 3, fields)) return std::nullopt;  // s, a, t
    f.kind = SinkFileName::kInProgress;
  } else if (!name.empty() && name[0] == '_' && EndsWith(name, kPendingSuffix)) {
    body = name.substr(1, name.size() - 1 - kPendingSuffix.size());
    if (!SplitTrailingInts(&body, 4, fields)) return std::nullopt;  // s, a, t, c
    f.kind = SinkFileName::kPending;
    f.checkpoint = fields[3];
  } else if (EndsWith(name, kCommittedSuffix)) {
    body = name.substr(0, name.size() - kCommittedSuffix.size());
    if (EndsWith(body, kFinalTag)) {
      body.remove_suffix(kFinalTag.size());
      if (!SplitTrailingInts(&body, 2, fields)) return std::nullopt;  // s, a
      f.kind = SinkFileName::kFinal;
    } else {
      if (!SplitTrailingInts(&body, 3, fields)) return std::nullopt;  // s, a, c
      f.kind = SinkFileName::kCommitted;
      f.checkpoint = fields[2];
    }
  } else {
    return std::nullopt;
  }
  if (body != prefix) return std::nullopt;
  f.subtask = fields[0];
  f.attempt = fields[1];
  return f;
}

Status CommitImpl(FileSystem& fs, const std::string& directory, const FileSinkCommittable& c,
                  bool* already) {
  const std::string pending = JoinPath(directory, c.pending_name);
  const std::string committed = JoinPath(directory, c.final_name);
  const std::string ctx =
      "cannot commit the output of checkpoint " + std::to_string(c.checkpoint.value());
  const std::string what = ctx + ": ";
  Result<FileInfo> st = fs.Stat(pending);
  if (st.ok()) {
    if (st->size != c.size) {
      return Corruption(what + "pending file '" + pending + "' has " + std::to_string(st->size) +
                        " bytes, the checkpoint recorded " + std::to_string(c.size) +
                        "; it was modified outside keyflow");
    }
    if (!fs.Exists(committed)) {
      Status renamed = fs.Rename(pending, committed);
      if (renamed.ok()) {
        *already = false;
        return Status::Ok();
      }
      if (fs.Exists(pending)) return renamed.WithContext(ctx);
      // Renamed concurrently by another recovering subtask: check the committed file below.
    } else if (fs.Exists(pending)) {  // both names: not a concurrent commit
      return FailedPrecondition(what + "committed file '" + committed +
                                "' exists already and is never replaced; move it away if it "
                                "does not belong to this job");
    }
  } else if (st.status().code() != StatusCode::kNotFound) {
    return st.status().WithContext(ctx);
  }
  Result<FileInfo> done = fs.Stat(committed);
  if (!done.ok()) {
    if (done.status().code() == StatusCode::kNotFound) {
      return NotFound(what + "neither '" + pending + "' nor '" + committed +
                      "' exists; was the output directory changed while the job ran?");
    }
    return done.status().WithContext(ctx);
  }
  if (done->size != c.size) {
    return Corruption(what + "committed file '" + committed + "' has " +
                      std::to_string(done->size) + " bytes, the checkpoint recorded " +
                      std::to_string(c.size) + "; it was modified outside keyflow");
  }
  *already = true;
  return Status::Ok();
}

bool ValidFileName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

// A committable arrives from a checkpoint or savepoint file (and so from outside): it may only
// name a pending file and its committed name as a FileSink writes them — the same prefix,
// subtask and attempt, and its own checkpoint id — so that a crafted one cannot make Commit
// rename any other file of the directory (issue 13).
bool WellFormedCommittableNames(const FileSinkCommittable& c) {
  if (!ValidFileName(c.pending_name) || !ValidFileName(c.final_name)) return false;
  std::string_view body = c.final_name;
  if (!EndsWith(body, kCommittedSuffix)) return false;
  body.remove_suffix(kCommittedSuffix.size());
  int64_t fields[3];
  if (!SplitTrailingInts(&body, 3, fields)) return false;
  if (body.empty() || body[0] == '.' || body[0] == '_') return false;
  std::optional<SinkFileName> pending = ParseSinkFileName(c.pending_name, body);
  std::optional<SinkFileName> committed = ParseSinkFileName(c.final_name, body);
  return pending && committed && pending->kind == SinkFileName::kPending &&
         committed->kind == SinkFileName::kCommitted && pending->subtask == committed->subtask &&
         pending->attempt == committed->attempt && pending->checkpoint == c.checkpoint.value() &&
         committed->checkpoint == c.checkpoint.value();
}

}  // namespace

// ------------------------------------------------------------------------- committable

void FileSinkCommittable::EncodeTo(BinaryWriter* out) const {
  out->U8(kCommittableVersion);
  out->I64(checkpoint.value());
  out->Bytes(pending_name);
  out->Bytes(final_name);
  out->U64(size);
  out->U64(checksum);
}

Result<FileSinkCommittable> FileSinkCommittable::DecodeFrom(BinaryReader* in) {
  FileSinkCommittable c;
  uint8_t version = in->U8();
  c.checkpoint = CheckpointId(in->I64());
  c.pending_name = std::string(in->Bytes());
  c.final_name = std::string(in->Bytes());
  c.size = in->U64();
  c.checksum = in->U64();
  KF_RETURN_IF_ERROR(in->status("file sink committable"));
  if (version != kCommittableVersion) {
    return Corruption("file sink committable has format version " + std::to_string(version) +
                      ", this build reads version " + std::to_string(kCommittableVersion));
  }
  if (!WellFormedCommittableNames(c)) {
    return Corruption("file sink committable of checkpoint " +
                      std::to_string(c.checkpoint.value()) +
                      " names files a file sink does not write ('" + c.pending_name.substr(0, 200) +
                      "', '" + c.final_name.substr(0, 200) +
                      "'): the checkpoint was crafted or damaged; restore another one");
  }
  return c;
}

// -------------------------------------------------------------------------------- sink

Result<FileSink> FileSink::Open(FileSinkOptions options) {
  if (options.directory.empty()) return InvalidArgument("the output directory is empty");
  const std::string& p = options.prefix;
  if (!ValidFileName(p) || p[0] == '.' || p[0] == '_') {
    return InvalidArgument("invalid output file prefix '" + p +
                           "': it must be non-empty, without '/', and not start with '.' or "
                           "'_' (those mark files that are not part of the result)");
  }
  KF_CHECK_GE(options.subtask.value(), 0);
  KF_CHECK_GE(options.attempt.value(), 0);
  KF_CHECK_GT(options.buffer_bytes, 0u);
  KF_CHECK(options.file_system != nullptr);
  if (options.file_system->Exists(options.directory) &&
      !options.file_system->IsDirectory(options.directory)) {
    return InvalidArgument("output path '" + options.directory + "' exists and is not a directory");
  }
  KF_RETURN_IF_ERROR_CTX(
      options.file_system->CreateDirectories(options.directory, DirectoryModeFor(options.access)),
      "cannot use the output directory '" + options.directory + "'");
  FileSink sink;
  sink.fs_ = options.file_system;
  sink.options_ = std::move(options);
  sink.buffer_.reserve(sink.options_.buffer_bytes + 4096);
  return sink;
}

FileSink::~FileSink() {
  if (file_) Abort().IgnoreError();
}

std::string FileSink::Path(std::string_view name) const {
  return JoinPath(options_.directory, name);
}

std::string FileSink::BaseName() const {
  return options_.prefix + "-" + std::to_string(options_.subtask.value()) + "-" +
         std::to_string(options_.attempt.value()) + "-" + std::to_string(next_txn_);
}

Status FileSink::OpenTransaction() {
  std::string name = "." + BaseName() + std::string(kInProgressSuffix);
  KF_ASSIGN_OR_RETURN(file_, fs_->NewWritableFile(Path(name), WriteMode::kCreateNew));
  // Its final mode from the start (created 0600): the committed file is this file renamed.
  KF_RETURN_IF_ERROR_CTX(fs_->SetPermissions(Path(name), FileModeFor(options_.access)),
                         "cannot open an output transaction");
  inprogress_name_ = std::move(name);
  checksum_ = std::make_unique<StreamingChecksum>();
  txn_bytes_ = 0;
  buffer_.clear();
  return Status::Ok();
}

Status FileSink::FlushBuffer() {
  if (buffer_.empty()) return Status::Ok();
  KF_RETURN_IF_ERROR_CTX(file_->Append(buffer_), "cannot write an output file");
  checksum_->Update(buffer_.data(), buffer_.size());
  buffer_.clear();
  return Status::Ok();
}

Status FileSink::Write(std::string_view line) {
  KF_CHECK(!finished_) << "FileSink::Write after FinishAndCommit";
  if (std::memchr(line.data(), '\n', line.size()) != nullptr) {
    return InvalidArgument("an output line must not contain a newline (JSON Lines): " +
                           std::string(line.substr(0, 80)));
  }
  if (!file_) KF_RETURN_IF_ERROR(OpenTransaction());
  buffer_.append(line.data(), line.size());
  buffer_.push_back('\n');
  txn_bytes_ += line.size() + 1;
  if (buffer_.size() >= options_.buffer_bytes) KF_RETURN_IF_ERROR(FlushBuffer());
  return Status::Ok();
}

Status FileSinkPreCommitSync::Run() {
  KF_CHECK(file_ != nullptr) << "FileSinkPreCommitSync::Run called twice";
  std::unique_ptr<WritableFile> file = std::move(file_);
  KF_RETURN_IF_ERROR_CTX(file->Append(tail_), "cannot write output file '" + from_ + "'");
  std::string().swap(tail_);
  KF_RETURN_IF_ERROR_CTX(file->Sync(), "cannot fsync output file '" + from_ + "'");
  KF_RETURN_IF_ERROR_CTX(file->Close(), "cannot close output file '" + from_ + "'");
  KF_RETURN_IF_ERROR_CTX(fs_->Rename(from_, to_), "cannot pre-commit output file '" + from_ + "'");
  KF_RETURN_IF_ERROR_CTX(fs_->SyncDirectory(directory_),
                         "cannot fsync output directory '" + directory_ + "'");
  return Status::Ok();
}

Result<std::unique_ptr<FileSinkPreCommitSync>> FileSink::HandOver(const std::string& name) {
  auto sync = std::make_unique<FileSinkPreCommitSync>();
  checksum_->Update(buffer_.data(), buffer_.size());
  sync->tail_ = std::move(buffer_);  // written by the sync, not on this thread
  buffer_ = std::string();
  buffer_.reserve(options_.buffer_bytes + 4096);
  sync->fs_ = fs_;
  sync->file_ = std::move(file_);
  sync->from_ = Path(inprogress_name_);
  sync->to_ = Path(name);
  sync->directory_ = options_.directory;
  inprogress_name_.clear();
  ++next_txn_;
  return sync;
}

Result<std::optional<FileSinkPreCommit>> FileSink::StartPreCommit(CheckpointId id) {
  KF_CHECK(!finished_) << "FileSink::PreCommit after FinishAndCommit";
  KF_CHECK(!last_precommit_ || id > *last_precommit_)
      << "pre-commit for checkpoint " << id << " after checkpoint " << *last_precommit_;
  last_precommit_ = id;
  if (!file_) return std::optional<FileSinkPreCommit>();
  FileSinkPreCommit pre;
  FileSinkCommittable& c = pre.committable;
  c.checkpoint = id;
  c.pending_name =
      "_" + BaseName() + "-" + std::to_string(id.value()) + std::string(kPendingSuffix);
  c.final_name = options_.prefix + "-" + std::to_string(options_.subtask.value()) + "-" +
                 std::to_string(options_.attempt.value()) + "-" + std::to_string(id.value()) +
                 std::string(kCommittedSuffix);
  c.size = txn_bytes_;
  KF_ASSIGN_OR_RETURN(pre.sync, HandOver(c.pending_name));
  c.checksum = checksum_->Digest();
  pending_.push_back(c);
  return std::optional<FileSinkPreCommit>(std::move(pre));
}

Result<std::optional<FileSinkCommittable>> FileSink::PreCommit(CheckpointId id) {
  KF_ASSIGN_OR_RETURN(std::optional<FileSinkPreCommit> pre, StartPreCommit(id));
  if (!pre) return std::optional<FileSinkCommittable>();
  Status synced = pre->sync->Run();
  if (!synced.ok()) {
    pending_.pop_back();
    return synced;
  }
  return std::optional<FileSinkCommittable>(std::move(pre->committable));
}

Status FileSink::Commit(const std::string& directory, const FileSinkCommittable& committable,
                        FileSystem& fs) {
  bool already = false;
  KF_RETURN_IF_ERROR(CommitImpl(fs, directory, committable, &already));
  if (already) return Status::Ok();
  return fs.SyncDirectory(directory);
}

Status FileSink::NotifyCheckpointComplete(CheckpointId id) {
  Status first;
  std::vector<FileSinkCommittable> remaining;
  bool committed_any = false;
  for (FileSinkCommittable& c : pending_) {
    if (c.checkpoint > id) {
      remaining.push_back(std::move(c));
      continue;
    }
    bool already = false;
    Status s = CommitImpl(*fs_, options_.directory, c, &already);
    if (!s.ok()) {
      if (first.ok()) first = s;
      remaining.push_back(std::move(c));  // kept: recovery commits it again
    } else {
      committed_any = committed_any || !already;
    }
  }
  pending_ = std::move(remaining);
  if (committed_any) {
    Status s = fs_->SyncDirectory(options_.directory);
    if (first.ok()) first = s;
  }
  return first;
}

Result<std::vector<std::string>> FileSink::FinishAndCommit() {
  KF_CHECK(!finished_) << "FileSink::FinishAndCommit called twice";
  std::vector<std::string> names;
  for (const FileSinkCommittable& c : pending_) {
    bool already = false;
    KF_RETURN_IF_ERROR(CommitImpl(*fs_, options_.directory, c, &already));
    names.push_back(c.final_name);
  }
  pending_.clear();
  if (file_) {
    std::string name = options_.prefix + "-" + std::to_string(options_.subtask.value()) + "-" +
                       std::to_string(options_.attempt.value()) + std::string(kFinalTag) +
                       std::string(kCommittedSuffix);
    KF_ASSIGN_OR_RETURN(std::unique_ptr<FileSinkPreCommitSync> sync, HandOver(name));
    KF_RETURN_IF_ERROR(sync->Run());
    names.push_back(std::move(name));
  } else if (!names.empty()) {
    KF_RETURN_IF_ERROR(fs_->SyncDirectory(options_.directory));
  }
  finished_ = true;
  return names;
}

Status FileSink::Abort() {
  if (!file_) return Status::Ok();
  const std::string path = Path(inprogress_name_);
  file_.reset();
  buffer_.clear();
  inprogress_name_.clear();
  ++next_txn_;
  KF_RETURN_IF_ERROR_CTX(fs_->RemoveFile(path), "cannot delete aborted output file '" + path + "'");
  return Status::Ok();
}

Result<FileSinkRecoveryStats> FileSink::Recover(const std::string& directory,
                                                const std::string& prefix,
                                                std::optional<CheckpointId> restored,
                                                std::span<const FileSinkCommittable> committables,
                                                AttemptNumber current_attempt, FileSystem& fs) {
  FileSinkRecoveryStats stats;
  for (const FileSinkCommittable& c : committables) {
    KF_CHECK(restored && c.checkpoint <= *restored)
        << "committable of checkpoint " << c.checkpoint << " is newer than the restored one";
  }
  if (committables.empty() && !fs.Exists(directory)) return stats;  // nothing was ever written

  // 1. Commit the restored checkpoint's committables, after checking their content.
  for (const FileSinkCommittable& c : committables) {
    std::string path = JoinPath(directory, c.pending_name);
    if (!fs.Exists(path)) path = JoinPath(directory, c.final_name);
    uint64_t size = 0, checksum = 0;
    Status read = ChecksumFile(fs, path, &size, &checksum);
    if (read.ok() && (size != c.size || checksum != c.checksum)) {
      return Corruption("output file '" + path + "' of checkpoint " +
                        std::to_string(c.checkpoint.value()) + " has " + std::to_string(size) +
                        " bytes" + (size == c.size ? " with another checksum" : "") +
                        "; the checkpoint recorded " + std::to_string(c.size) +
                        " bytes; it was modified outside keyflow");
    }
    bool already = false;
    KF_RETURN_IF_ERROR(CommitImpl(fs, directory, c, &already));  // also reports missing files
    ++(already ? stats.already_committed : stats.committed);
  }

  // 2. Delete the in-progress and pending files earlier attempts left that the restored
  // checkpoint does not contain. Committed files stay, always: one the restored checkpoint
  // does not cover means the restore would emit its results a second time.
  const int64_t restored_id = restored ? restored->value() : 0;
  std::vector<std::string> doomed;
  std::vector<std::string> uncovered;
  KF_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDirectory(directory));
  for (const std::string& name : names) {
    std::optional<SinkFileName> f = ParseSinkFileName(name, prefix);
    if (!f || f->attempt >= current_attempt.value()) continue;
    if (f->kind == SinkFileName::kCommitted && f->checkpoint <= restored_id) continue;
    if (f->kind == SinkFileName::kCommitted || f->kind == SinkFileName::kFinal) {
      uncovered.push_back(name);
    } else {
      doomed.push_back(name);
    }
  }
  if (!uncovered.empty()) {
    std::string list;
    for (size_t i = 0; i < uncovered.size() && i < 5; ++i) {
      list += (i ? ", " : "") + uncovered[i];
    }
    if (uncovered.size() > 5) list += ", ...";
    return FailedPrecondition(
        "output directory '" + directory + "' holds " + std::to_string(uncovered.size()) +
        " committed file(s) of earlier attempts that " +
        (restored ? "the restored checkpoint " + std::to_string(restored_id)
                  : "a restart from "
                    "scratch") +
        " does not cover (" + list +
        "), and committed output is never deleted: restoring would emit those results a second "
        "time; restore a newer checkpoint, or start a new job with --from-savepoint to accept "
        "the replay into new part files (checkpoint/README.md, \"When a checkpoint is "
        "corrupt\")");
  }
  for (const std::string& name : doomed) {
    KF_RETURN_IF_ERROR_CTX(fs.RemoveFile(JoinPath(directory, name)),
                           "cannot delete leftover output file");
    ++stats.deleted;
  }
  KF_RETURN_IF_ERROR(fs.SyncDirectory(directory));
  return stats;
}

}  // namespace keyflow
