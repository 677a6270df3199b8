#include "worker/sinks/file_sink.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write output file '" + path + "'", errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status FsyncDir(int dir_fd, const std::string& dir) {
  if (::fsync(dir_fd) != 0) return ErrnoError("cannot fsync output directory '" + dir + "'", errno);
  return Status::Ok();
}

Result<ScopedFd> OpenDir(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("cannot open output directory '" + dir + "'", errno);
  return fd;
}

// mkdir -p.
Status MakeDirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("cannot create output directory '" + part + "'", errno);
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return ErrnoError("cannot access output directory '" + dir + "'", errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument("output path '" + dir + "' exists and is not a directory");
  }
  return Status::Ok();
}

// Size and Checksum64 of a file's content.
Status ChecksumFile(const std::string& path, uint64_t* size, uint64_t* checksum) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("cannot open output file '" + path + "'", errno);
  StreamingChecksum sum;
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  uint64_t total = 0;
  while (true) {
    ssize_t n = ::read(fd.get(), buf.get(), 1 << 20);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read output file '" + path + "'", errno);
    }
    if (n == 0) break;
    sum.Update(buf.get(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  *size = total;
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

Status CommitImpl(const std::string& directory, const FileSinkCommittable& c, bool* already) {
  const std::string pending = JoinPath(directory, c.pending_name);
  const std::string committed = JoinPath(directory, c.final_name);
  const std::string what =
      "cannot commit the output of checkpoint " + std::to_string(c.checkpoint.value()) + ": ";
  struct stat st;
  if (::stat(pending.c_str(), &st) == 0) {
    if (static_cast<uint64_t>(st.st_size) != c.size) {
      return Corruption(what + "pending file '" + pending + "' has " + std::to_string(st.st_size) +
                        " bytes, the checkpoint recorded " + std::to_string(c.size) +
                        "; it was modified outside keyflow");
    }
    if (::rename(pending.c_str(), committed.c_str()) == 0) {
      *already = false;
      return Status::Ok();
    }
    if (errno != ENOENT) {
      return ErrnoError(what + "cannot rename '" + pending + "' to '" + committed + "'", errno);
    }
    // Renamed concurrently by another recovering subtask: check the committed file below.
  } else if (errno != ENOENT) {
    return ErrnoError(what + "cannot stat '" + pending + "'", errno);
  }
  if (::stat(committed.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return NotFound(what + "neither '" + pending + "' nor '" + committed +
                      "' exists; was the output directory changed while the job ran?");
    }
    return ErrnoError(what + "cannot stat '" + committed + "'", errno);
  }
  if (static_cast<uint64_t>(st.st_size) != c.size) {
    return Corruption(what + "committed file '" + committed + "' has " +
                      std::to_string(st.st_size) + " bytes, the checkpoint recorded " +
                      std::to_string(c.size) + "; it was modified outside keyflow");
  }
  *already = true;
  return Status::Ok();
}

bool ValidFileName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
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
  RETURN_IF_ERROR(in->status("file sink committable"));
  if (version != kCommittableVersion) {
    return Corruption("file sink committable has format version " + std::to_string(version) +
                      ", this build reads version " + std::to_string(kCommittableVersion));
  }
  if (!ValidFileName(c.pending_name) || !ValidFileName(c.final_name)) {
    return Corruption("file sink committable names an invalid file ('" + c.pending_name + "', '" +
                      c.final_name + "')");
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
  CHECK_GE(options.subtask.value(), 0);
  CHECK_GE(options.attempt.value(), 0);
  CHECK_GT(options.buffer_bytes, 0u);
  RETURN_IF_ERROR(MakeDirs(options.directory));
  FileSink sink;
  ASSIGN_OR_RETURN(sink.dir_fd_, OpenDir(options.directory));
  sink.options_ = std::move(options);
  sink.buffer_.reserve(sink.options_.buffer_bytes + 4096);
  return sink;
}

FileSink::~FileSink() {
  if (fd_.valid()) Abort().IgnoreError();
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
  std::string path = Path(name);
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoError("cannot create output file '" + path + "'", errno);
  fd_ = std::move(fd);
  inprogress_name_ = std::move(name);
  checksum_ = std::make_unique<StreamingChecksum>();
  txn_bytes_ = 0;
  buffer_.clear();
  return Status::Ok();
}

Status FileSink::FlushBuffer() {
  if (buffer_.empty()) return Status::Ok();
  RETURN_IF_ERROR(WriteAll(fd_.get(), buffer_.data(), buffer_.size(), Path(inprogress_name_)));
  checksum_->Update(buffer_.data(), buffer_.size());
  buffer_.clear();
  return Status::Ok();
}

Status FileSink::Write(std::string_view line) {
  CHECK(!finished_) << "FileSink::Write after FinishAndCommit";
  if (std::memchr(line.data(), '\n', line.size()) != nullptr) {
    return InvalidArgument("an output line must not contain a newline (JSON Lines): " +
                           std::string(line.substr(0, 80)));
  }
  if (!fd_.valid()) RETURN_IF_ERROR(OpenTransaction());
  buffer_.append(line.data(), line.size());
  buffer_.push_back('\n');
  txn_bytes_ += line.size() + 1;
  if (buffer_.size() >= options_.buffer_bytes) RETURN_IF_ERROR(FlushBuffer());
  return Status::Ok();
}

Status FileSink::CloseAndRename(const std::string& name) {
  const std::string from = Path(inprogress_name_);
  RETURN_IF_ERROR(FlushBuffer());
  if (::fsync(fd_.get()) != 0) return ErrnoError("cannot fsync output file '" + from + "'", errno);
  if (fd_.Reset() != 0) return ErrnoError("cannot close output file '" + from + "'", errno);
  const std::string to = Path(name);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoError("cannot rename output file '" + from + "' to '" + to + "'", errno);
  }
  RETURN_IF_ERROR(FsyncDir(dir_fd_.get(), options_.directory));
  inprogress_name_.clear();
  ++next_txn_;
  return Status::Ok();
}

Result<std::optional<FileSinkCommittable>> FileSink::PreCommit(CheckpointId id) {
  CHECK(!finished_) << "FileSink::PreCommit after FinishAndCommit";
  CHECK(!last_precommit_ || id > *last_precommit_)
      << "pre-commit for checkpoint " << id << " after checkpoint " << *last_precommit_;
  last_precommit_ = id;
  if (!fd_.valid()) return std::optional<FileSinkCommittable>();
  FileSinkCommittable c;
  c.checkpoint = id;
  c.pending_name =
      "_" + BaseName() + "-" + std::to_string(id.value()) + std::string(kPendingSuffix);
  c.final_name = options_.prefix + "-" + std::to_string(options_.subtask.value()) + "-" +
                 std::to_string(options_.attempt.value()) + "-" + std::to_string(id.value()) +
                 std::string(kCommittedSuffix);
  c.size = txn_bytes_;
  RETURN_IF_ERROR(FlushBuffer());
  c.checksum = checksum_->Digest();
  RETURN_IF_ERROR(CloseAndRename(c.pending_name));
  pending_.push_back(c);
  return std::optional<FileSinkCommittable>(std::move(c));
}

Status FileSink::Commit(const std::string& directory, const FileSinkCommittable& committable) {
  bool already = false;
  RETURN_IF_ERROR(CommitImpl(directory, committable, &already));
  if (already) return Status::Ok();
  ASSIGN_OR_RETURN(ScopedFd dir, OpenDir(directory));
  return FsyncDir(dir.get(), directory);
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
    Status s = CommitImpl(options_.directory, c, &already);
    if (!s.ok()) {
      if (first.ok()) first = s;
      remaining.push_back(std::move(c));  // kept: recovery commits it again
    } else {
      committed_any = committed_any || !already;
    }
  }
  pending_ = std::move(remaining);
  if (committed_any) {
    Status s = FsyncDir(dir_fd_.get(), options_.directory);
    if (first.ok()) first = s;
  }
  return first;
}

Result<std::vector<std::string>> FileSink::FinishAndCommit() {
  CHECK(!finished_) << "FileSink::FinishAndCommit called twice";
  std::vector<std::string> names;
  for (const FileSinkCommittable& c : pending_) {
    bool already = false;
    RETURN_IF_ERROR(CommitImpl(options_.directory, c, &already));
    names.push_back(c.final_name);
  }
  pending_.clear();
  if (fd_.valid()) {
    std::string name = options_.prefix + "-" + std::to_string(options_.subtask.value()) + "-" +
                       std::to_string(options_.attempt.value()) + std::string(kFinalTag) +
                       std::string(kCommittedSuffix);
    RETURN_IF_ERROR(CloseAndRename(name));
    names.push_back(std::move(name));
  } else if (!names.empty()) {
    RETURN_IF_ERROR(FsyncDir(dir_fd_.get(), options_.directory));
  }
  finished_ = true;
  return names;
}

Status FileSink::Abort() {
  if (!fd_.valid()) return Status::Ok();
  const std::string path = Path(inprogress_name_);
  fd_.Reset();
  buffer_.clear();
  inprogress_name_.clear();
  ++next_txn_;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot delete aborted output file '" + path + "'", errno);
  }
  return Status::Ok();
}

Result<FileSinkRecoveryStats> FileSink::Recover(const std::string& directory,
                                                const std::string& prefix,
                                                std::optional<CheckpointId> restored,
                                                std::span<const FileSinkCommittable> committables,
                                                AttemptNumber current_attempt) {
  FileSinkRecoveryStats stats;
  for (const FileSinkCommittable& c : committables) {
    CHECK(restored && c.checkpoint <= *restored)
        << "committable of checkpoint " << c.checkpoint << " is newer than the restored one";
  }
  struct stat st;
  if (committables.empty() && ::stat(directory.c_str(), &st) != 0 && errno == ENOENT) {
    return stats;  // nothing was ever written
  }

  // 1. Commit the restored checkpoint's committables, after checking their content.
  for (const FileSinkCommittable& c : committables) {
    std::string path = JoinPath(directory, c.pending_name);
    if (::stat(path.c_str(), &st) != 0) path = JoinPath(directory, c.final_name);
    uint64_t size = 0, checksum = 0;
    Status read = ChecksumFile(path, &size, &checksum);
    if (read.ok() && (size != c.size || checksum != c.checksum)) {
      return Corruption("output file '" + path + "' of checkpoint " +
                        std::to_string(c.checkpoint.value()) + " has " + std::to_string(size) +
                        " bytes" + (size == c.size ? " with another checksum" : "") +
                        "; the checkpoint recorded " + std::to_string(c.size) +
                        " bytes; it was modified outside keyflow");
    }
    bool already = false;
    RETURN_IF_ERROR(CommitImpl(directory, c, &already));  // also reports missing files
    ++(already ? stats.already_committed : stats.committed);
  }

  // 2. Delete what earlier attempts left that the restored checkpoint does not contain.
  const int64_t restored_id = restored ? restored->value() : 0;
  std::vector<std::string> doomed;
  {
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(directory.c_str()), &::closedir);
    if (!d) return ErrnoError("cannot list output directory '" + directory + "'", errno);
    errno = 0;
    while (struct dirent* e = ::readdir(d.get())) {
      std::optional<SinkFileName> f = ParseSinkFileName(e->d_name, prefix);
      errno = 0;
      if (!f || f->attempt >= current_attempt.value()) continue;
      if (f->kind == SinkFileName::kCommitted && f->checkpoint <= restored_id) continue;
      doomed.emplace_back(e->d_name);
    }
    if (errno != 0) return ErrnoError("cannot list output directory '" + directory + "'", errno);
  }
  for (const std::string& name : doomed) {
    std::string path = JoinPath(directory, name);
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) continue;  // removed by another recovering subtask
      return ErrnoError("cannot delete leftover output file '" + path + "'", errno);
    }
    ++stats.deleted;
  }
  ASSIGN_OR_RETURN(ScopedFd dir, OpenDir(directory));
  RETURN_IF_ERROR(FsyncDir(dir.get(), directory));
  return stats;
}

}  // namespace keyflow
