#include "common/testing/fault_injection_file_system.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace keyflow {
namespace {

std::string Parent(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

bool Matches(const std::string& path, const std::string& pattern) {
  return path.find(pattern) != std::string::npos;
}

}  // namespace

// A file written through the fault-injecting file system: the real file plus bookkeeping.
class FaultInjectionFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectionFileSystem* fs, std::unique_ptr<WritableFile> base, uint64_t epoch)
      : fs_(fs), base_(std::move(base)), epoch_(epoch) {}

  Status Append(std::string_view data) override {
    size_t allowed = data.size();
    Status fault = fs_->BeforeAppend(path(), epoch_, data.size(), &allowed);
    if (allowed > 0) {
      KF_RETURN_IF_ERROR(base_->Append(data.substr(0, allowed)));
      fs_->AfterAppend(path(), allowed);
    }
    return fault;
  }
  Status Sync() override {
    KF_RETURN_IF_ERROR(fs_->OnSync(path(), epoch_));
    return base_->Sync();
  }
  Status Close() override { return base_->Close(); }
  uint64_t size() const override { return base_->size(); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionFileSystem* fs_;
  std::unique_ptr<WritableFile> base_;
  uint64_t epoch_;
};

void FaultInjectionFileSystem::FailWritesAfter(uint64_t bytes, int err) {
  MutexLock lock(&mu_);
  write_budget_ = bytes;
  budget_errno_ = err;
}

void FaultInjectionFileSystem::FailWritesTo(std::string pattern, int err) {
  MutexLock lock(&mu_);
  write_faults_.emplace_back(std::move(pattern), err);
}

void FaultInjectionFileSystem::FailSyncs(std::string pattern, int err) {
  MutexLock lock(&mu_);
  sync_faults_.emplace_back(std::move(pattern), err);
}

void FaultInjectionFileSystem::ClearFaults() {
  MutexLock lock(&mu_);
  write_budget_.reset();
  write_faults_.clear();
  sync_faults_.clear();
}

int64_t FaultInjectionFileSystem::file_syncs() const {
  MutexLock lock(&mu_);
  return file_syncs_;
}

int64_t FaultInjectionFileSystem::directory_syncs() const {
  MutexLock lock(&mu_);
  return directory_syncs_;
}

std::vector<std::thread::id> FaultInjectionFileSystem::sync_threads() const {
  MutexLock lock(&mu_);
  return sync_threads_;
}

Status FaultInjectionFileSystem::CheckEpoch(const std::string& path, uint64_t epoch) const {
  if (epoch != epoch_) {
    return IoError("cannot use " + path + ": the file was open at a simulated crash");
  }
  return Status::Ok();
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(
    const std::string& path, WriteMode mode) {
  const bool existed = base_->Exists(path);
  KF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, base_->NewWritableFile(path, mode));
  MutexLock lock(&mu_);
  FileState& st = files_[path];
  if (mode == WriteMode::kAppend && existed) {
    // What was there before is as durable as it was; only new appends are at risk.
    st.size = f->size();
    st.synced = st.size;
    st.entry_durable = true;
  } else {
    st = FileState{};
    st.entry_durable = existed;  // truncating keeps the directory entry
  }
  return std::unique_ptr<WritableFile>(new File(this, std::move(f), epoch_));
}

Status FaultInjectionFileSystem::BeforeAppend(const std::string& path, uint64_t epoch, size_t n,
                                              size_t* allowed) {
  MutexLock lock(&mu_);
  *allowed = 0;
  KF_RETURN_IF_ERROR(CheckEpoch(path, epoch));
  for (const auto& [pattern, err] : write_faults_) {
    if (Matches(path, pattern)) return ErrnoError("cannot write " + path, err);
  }
  *allowed = n;
  if (write_budget_) {
    if (*write_budget_ < n) {
      *allowed = static_cast<size_t>(*write_budget_);
      *write_budget_ = 0;
      return ErrnoError("cannot write " + path, budget_errno_);
    }
    *write_budget_ -= n;
  }
  return Status::Ok();
}

void FaultInjectionFileSystem::AfterAppend(const std::string& path, uint64_t n) {
  MutexLock lock(&mu_);
  files_[path].size += n;
}

Status FaultInjectionFileSystem::OnSync(const std::string& path, uint64_t epoch) {
  MutexLock lock(&mu_);
  KF_RETURN_IF_ERROR(CheckEpoch(path, epoch));
  ++file_syncs_;
  sync_threads_.push_back(std::this_thread::get_id());
  for (const auto& [pattern, err] : sync_faults_) {
    if (Matches(path, pattern)) return ErrnoError("cannot sync " + path, err);
  }
  FileState& st = files_[path];
  st.synced = st.size;
  return Status::Ok();
}

Status FaultInjectionFileSystem::SyncDirectory(const std::string& dir) {
  {
    MutexLock lock(&mu_);
    ++directory_syncs_;
    sync_threads_.push_back(std::this_thread::get_id());
    for (const auto& [pattern, err] : sync_faults_) {
      if (Matches(dir, pattern)) return ErrnoError("cannot sync directory " + dir, err);
    }
  }
  KF_RETURN_IF_ERROR(base_->SyncDirectory(dir));
  MutexLock lock(&mu_);
  const std::string d = std::filesystem::path(dir).lexically_normal().string();
  auto in_dir = [&](const std::string& p) {
    std::string parent = std::filesystem::path(Parent(p)).lexically_normal().string();
    return parent == d || parent + "/" == d || parent == d + "/";
  };
  for (auto& [path, st] : files_) {
    if (in_dir(path)) st.entry_durable = true;
  }
  std::erase_if(renames_, [&](const PendingRename& r) { return in_dir(r.to); });
  return Status::Ok();
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  KF_RETURN_IF_ERROR(base_->Rename(from, to));
  MutexLock lock(&mu_);
  auto it = files_.find(from);
  if (it != files_.end()) {
    FileState st = it->second;
    files_.erase(it);
    const bool was_durable = st.entry_durable;
    st.entry_durable = false;  // the new name is not durable until its directory is synced
    files_[to] = st;
    if (was_durable) renames_.push_back(PendingRename{from, to});
  } else {
    renames_.push_back(PendingRename{from, to});
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  KF_RETURN_IF_ERROR(base_->RemoveFile(path));
  MutexLock lock(&mu_);
  files_.erase(path);
  return Status::Ok();
}

Status FaultInjectionFileSystem::SimulateCrash() {
  MutexLock lock(&mu_);
  ++epoch_;
  // Undo renames whose directory was never synced, newest first: the old name comes back.
  for (auto it = renames_.rbegin(); it != renames_.rend(); ++it) {
    if (!base_->Exists(it->to)) continue;
    KF_RETURN_IF_ERROR(base_->Rename(it->to, it->from));
    auto st = files_.find(it->to);
    if (st != files_.end()) {
      FileState moved = st->second;
      moved.entry_durable = true;
      files_.erase(st);
      files_[it->from] = moved;
    }
  }
  renames_.clear();
  for (const auto& [path, st] : files_) {
    if (!base_->Exists(path)) continue;
    if (!st.entry_durable) {
      KF_RETURN_IF_ERROR(base_->RemoveFile(path));
      continue;
    }
    if (st.synced < st.size) {
      std::error_code ec;
      std::filesystem::resize_file(path, st.synced, ec);
      if (ec) return IoError("cannot drop the unsynced data of " + path + ": " + ec.message());
    }
  }
  files_.clear();
  return Status::Ok();
}

}  // namespace keyflow
