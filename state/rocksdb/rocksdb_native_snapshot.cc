#include "state/rocksdb/rocksdb_native_snapshot.h"

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "common/binary_io.h"
#include "common/format_version.h"
#include "common/hashing.h"

namespace keyflow::rocksdb_native {

namespace {

constexpr uint32_t kStatesMagic = 0x5453524b;  // "KRST"
constexpr size_t kCopyChunk = size_t{1} << 20;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Parent(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

// An IoError of writing `path`, as a sentence a user can act on.
Status WriteError(const std::string& path, const Status& cause) {
  const std::string why(cause.message());
  if (why.find("No space left") != std::string::npos) {
    return IoError("cannot write the RocksDB snapshot file " + path + " (" + why +
                   "): the disk of " + Parent(path) +
                   " is full; free space there (the previous completed checkpoint stays usable)");
  }
  return IoError("cannot write the RocksDB snapshot file " + path + " (" + why +
                 "): check that the checkpoint storage is writable (the previous completed "
                 "checkpoint stays usable)");
}

class RocksDbSnapshotPart final : public NativeSnapshotPart {
 public:
  RocksDbSnapshotPart(LocalSnapshot local, FileSystem& fs, std::shared_ptr<UploadedFiles> uploaded,
                      std::shared_ptr<DeferredSync> deferred)
      : local_(std::move(local)),
        fs_(fs),
        uploaded_(std::move(uploaded)),
        deferred_(std::move(deferred)) {}
  ~RocksDbSnapshotPart() override {
    deferred_->Run();  // a no-op once run; unrun, the barrier's rows still go to RocksDB
    fs_.RemoveAll(local_.local_dir).IgnoreError();
  }

  Result<IncrementalKeyedStateHandle> Write(uint64_t* written_bytes) override {
    *written_bytes = 0;
    if (Status synced = deferred_->Run().snapshot; !synced.ok()) return synced;
    std::vector<std::string> created;
    Result<IncrementalKeyedStateHandle> handle = WriteFiles(written_bytes, &created);
    if (!handle.ok()) {
      for (const std::string& path : created) fs_.RemoveFile(path).IgnoreError();
      *written_bytes = 0;
    }
    fs_.RemoveAll(local_.local_dir).IgnoreError();
    return handle;
  }

  const std::vector<uint64_t>& EntriesPerKeyGroup() const override {
    return local_.entries_per_key_group;
  }

 private:
  Result<IncrementalKeyedStateHandle> WriteFiles(uint64_t* written_bytes,
                                                 std::vector<std::string>* created) {
    const NativeSnapshotTarget& t = local_.target;
    IncrementalKeyedStateHandle handle;
    handle.backend = kBackend;
    handle.format_version = kFormatVersion;
    handle.backend_id = local_.backend_id;
    handle.range = local_.range;
    handle.total_keys = local_.total_keys;

    const std::string private_dir = t.checkpoint_dir + "/" + t.private_prefix;
    if (Status s = fs_.CreateDirectories(private_dir); !s.ok()) return WriteError(private_dir, s);
    KF_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDirectory(local_.local_dir));
    SstFiles uploaded;
    for (const std::string& name : names) {
      const std::string from = local_.local_dir + "/" + name;
      uint64_t number = 0;
      if (EndsWith(name, ".sst") && SstNumber(name, &number)) {
        if (auto it = local_.base.find(number); it != local_.base.end()) {
          handle.shared_files.push_back(it->second);  // referenced, not written again
          uploaded.emplace(number, it->second);
          continue;
        }
        SharedStateFile file;
        file.name = local_.backend_id + "-" + std::to_string(t.checkpoint.value()) + "-" +
                    std::to_string(number) + ".sst";
        const std::string to = t.shared_dir + "/" + file.name;
        if (fs_.Exists(to)) {
          return FailedPrecondition("cannot write the RocksDB snapshot file " + to +
                                    ": a shared file of that name exists already (shared files "
                                    "are never overwritten); remove the stale checkpoint data");
        }
        created->push_back(to);
        Result<FileDigest> digest = CopyFile(fs_, from, to);
        if (!digest.ok()) return digest.status();
        file.size = digest->size;
        file.checksum = digest->checksum;
        *written_bytes += file.size;
        handle.shared_files.push_back(file);
        uploaded.emplace(number, std::move(file));
        continue;
      }
      const std::string to = private_dir + name;
      created->push_back(to);
      KF_ASSIGN_OR_RETURN(FileDigest digest, CopyFile(fs_, from, to));
      *written_bytes += digest.size;
      handle.private_files.push_back(
          PrivateStateFile{t.private_prefix + name, digest.size, digest.checksum});
    }
    // The states and their counts.
    const std::string states = private_dir + kStatesFile;
    created->push_back(states);
    if (Status s = fs_.WriteFileAtomically(states, local_.states_bytes); !s.ok()) {
      return WriteError(states, s);
    }
    *written_bytes += local_.states_bytes.size();
    handle.private_files.push_back(PrivateStateFile{std::string(t.private_prefix) + kStatesFile,
                                                    local_.states_bytes.size(),
                                                    Checksum64(local_.states_bytes)});
    if (Status s = fs_.SyncDirectory(t.shared_dir); !s.ok()) return WriteError(t.shared_dir, s);
    if (Status s = fs_.SyncDirectory(private_dir); !s.ok()) return WriteError(private_dir, s);
    uploaded_->AddPending(t.checkpoint, std::move(uploaded));
    return handle;
  }

  LocalSnapshot local_;
  FileSystem& fs_;
  std::shared_ptr<UploadedFiles> uploaded_;
  std::shared_ptr<DeferredSync> deferred_;
};

}  // namespace

DeferredSync::Outcome DeferredSync::Run() {
  MutexLock lock(&mu_);  // held while the work runs: a second caller waits for its outcome
  if (!ran_) {
    outcome_ = work_();
    work_ = nullptr;
    ran_ = true;
  }
  return outcome_;
}

bool DeferredSync::ran() const {
  MutexLock lock(&mu_);
  return ran_;
}

std::string EncodeStates(const std::vector<SnapshotState>& states) {
  std::string out;
  BinaryWriter w(&out);
  w.U32(kStatesMagic);
  w.U32(kFormatVersion);
  w.VarU64(states.size());
  for (const SnapshotState& s : states) {
    w.Bytes(s.name);
    w.U8(static_cast<uint8_t>(s.kind));
    w.Bytes(s.type_description);
    w.VarU64(s.counts.size());
    for (int64_t c : s.counts) w.VarU64(static_cast<uint64_t>(c));
  }
  return out;
}

Result<std::vector<SnapshotState>> DecodeStates(std::string_view bytes, int32_t num_key_groups,
                                                const std::string& file) {
  BinaryReader in(bytes);
  const uint32_t magic = in.U32();
  const uint32_t version = in.U32();
  const uint64_t n = in.Count(4);
  std::vector<SnapshotState> states;
  auto malformed = [&] {
    return Corruption("the RocksDB snapshot file " + file +
                      " is malformed (truncated or not written by keyflow): restore from an "
                      "earlier checkpoint");
  };
  if (!in.ok() || magic != kStatesMagic) return malformed();
  // The file passed its checksum (recorded in _metadata) before it is decoded.
  if (version != kFormatVersion) {
    return UnreadableFormatVersion("the RocksDB snapshot file " + file, version, kFormatVersion,
                                   kFormatVersion);
  }
  for (uint64_t i = 0; i < n; ++i) {
    SnapshotState s;
    s.name = std::string(in.Bytes());
    const uint8_t kind = in.U8();
    s.type_description = std::string(in.Bytes());
    const uint64_t groups = in.Count(1);
    if (!in.ok() || kind > kMaxStateKind || groups != static_cast<uint64_t>(num_key_groups)) {
      return malformed();
    }
    s.kind = static_cast<StateKind>(kind);
    s.counts.resize(groups);
    for (int64_t& c : s.counts) c = static_cast<int64_t>(in.VarU64());
    states.push_back(std::move(s));
  }
  if (!in.ok() || !in.at_end()) return malformed();
  return states;
}

SstFiles UploadedFiles::Base() const {
  MutexLock lock(&mu_);
  return base_;
}

void UploadedFiles::AddPending(CheckpointId id, SstFiles files) {
  MutexLock lock(&mu_);
  pending_[id] = std::move(files);
}

void UploadedFiles::Complete(CheckpointId id) {
  MutexLock lock(&mu_);
  auto it = pending_.find(id);
  if (it != pending_.end()) base_ = std::move(it->second);
  pending_.erase(pending_.begin(), pending_.upper_bound(id));
}

void UploadedFiles::Abort(CheckpointId id) {
  MutexLock lock(&mu_);
  pending_.erase(id);
}

void UploadedFiles::Reset() {
  MutexLock lock(&mu_);
  base_.clear();
  pending_.clear();
}

size_t UploadedFiles::pending() const {
  MutexLock lock(&mu_);
  return pending_.size();
}

std::unique_ptr<NativeSnapshotPart> MakeSnapshotPart(LocalSnapshot local, FileSystem& fs,
                                                     std::shared_ptr<UploadedFiles> uploaded,
                                                     std::shared_ptr<DeferredSync> deferred) {
  return std::make_unique<RocksDbSnapshotPart>(std::move(local), fs, std::move(uploaded),
                                               std::move(deferred));
}

bool SstNumber(std::string_view name, uint64_t* number) {
  if (!EndsWith(name, ".sst")) return false;
  name.remove_suffix(4);
  if (const size_t dash = name.rfind('-'); dash != std::string_view::npos) {
    name.remove_prefix(dash + 1);
  }
  if (name.empty() || name.size() > 19) return false;
  uint64_t n = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  *number = n;
  return true;
}

std::string LocalSstName(uint64_t number) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%06llu.sst", static_cast<unsigned long long>(number));
  return buf;
}

Result<FileDigest> CopyFile(FileSystem& fs, const std::string& from, const std::string& to) {
  Result<std::unique_ptr<RandomAccessFile>> in = fs.NewRandomAccessFile(from);
  if (!in.ok()) {
    return IoError("cannot read " + from + " for a RocksDB snapshot (" +
                   std::string(in.status().message()) +
                   "): check that --state-dir is readable and was not cleaned up");
  }
  const std::string tmp = to + ".tmp";
  Result<std::unique_ptr<WritableFile>> out = fs.NewWritableFile(tmp, WriteMode::kTruncate);
  if (!out.ok()) return WriteError(to, out.status());
  FileDigest digest;
  StreamingChecksum checksum;
  std::string chunk;
  const uint64_t size = (*in)->size();
  Status s;
  for (uint64_t offset = 0; offset < size && s.ok(); offset += chunk.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kCopyChunk, size - offset));
    s = (*in)->ReadAt(offset, n, &chunk);
    if (!s.ok()) {
      fs.RemoveFile(tmp).IgnoreError();
      return IoError("cannot read " + from + " for a RocksDB snapshot (" +
                     std::string(s.message()) + "): check the disk of --state-dir");
    }
    checksum.Update(chunk.data(), chunk.size());
    s = (*out)->Append(chunk);
  }
  if (s.ok()) s = (*out)->Sync();
  if (s.ok()) s = (*out)->Close();
  if (s.ok()) s = fs.Rename(tmp, to);
  if (!s.ok()) {
    out->reset();
    fs.RemoveFile(tmp).IgnoreError();
    return WriteError(to, s);
  }
  digest.size = size;
  digest.checksum = checksum.Digest();
  return digest;
}

Status VerifyFile(FileSystem& fs, const std::string& path, uint64_t size, uint64_t checksum) {
  Result<std::unique_ptr<RandomAccessFile>> in = fs.NewRandomAccessFile(path);
  if (!in.ok()) {
    return Corruption("the RocksDB snapshot file " + path + " is missing or unreadable (" +
                      std::string(in.status().message()) +
                      "): restore from an earlier checkpoint whose files are intact");
  }
  if ((*in)->size() != size) {
    return Corruption("the RocksDB snapshot file " + path + " has " +
                      std::to_string((*in)->size()) + " bytes instead of " + std::to_string(size) +
                      " (truncated or replaced): restore from an earlier checkpoint whose "
                      "files are intact");
  }
  StreamingChecksum digest;
  std::string chunk;
  for (uint64_t offset = 0; offset < size; offset += chunk.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kCopyChunk, size - offset));
    if (Status s = (*in)->ReadAt(offset, n, &chunk); !s.ok()) {
      return Corruption("the RocksDB snapshot file " + path + " cannot be read (" +
                        std::string(s.message()) +
                        "): restore from an earlier checkpoint whose files are intact");
    }
    digest.Update(chunk.data(), chunk.size());
  }
  if (digest.Digest() != checksum) {
    return Corruption("the RocksDB snapshot file " + path +
                      " fails its checksum (corrupted): restore from an earlier checkpoint "
                      "whose files are intact");
  }
  return Status::Ok();
}

}  // namespace keyflow::rocksdb_native
