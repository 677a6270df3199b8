#include "checkpoint/shared_state_registry.h"

#include "common/logging/logging.h"

namespace keyflow {

SharedStateRegistry::SharedStateRegistry(std::string shared_dir, FileSystem& fs)
    : dir_(std::move(shared_dir)), fs_(&fs) {}

Status SharedStateRegistry::Register(CheckpointId id, const std::vector<SharedStateFile>& files,
                                     std::vector<std::string>* new_names) {
  for (const SharedStateFile& f : files) {
    auto it = entries_.find(f.name);
    if (it != entries_.end() &&
        (it->second.file.size != f.size || it->second.file.checksum != f.checksum)) {
      return InvalidArgument("its shared file " + f.name + " has " + std::to_string(f.size) +
                             " bytes and checksum " + std::to_string(f.checksum) +
                             ", but the registered file of that name has " +
                             std::to_string(it->second.file.size) + " bytes and checksum " +
                             std::to_string(it->second.file.checksum) +
                             " (a shared file is never overwritten: two uploads used one name)");
    }
  }
  std::vector<std::string>& mine = by_checkpoint_[id.value()];
  for (const SharedStateFile& f : files) {
    auto [it, inserted] = entries_.try_emplace(f.name, Entry{f, {}});
    if (inserted && new_names != nullptr) new_names->push_back(f.name);
    if (it->second.checkpoints.insert(id.value()).second) mine.push_back(f.name);
  }
  return Status::Ok();
}

size_t SharedStateRegistry::Unregister(CheckpointId id) {
  auto refs = by_checkpoint_.find(id.value());
  if (refs == by_checkpoint_.end()) return 0;
  size_t deleted = 0;
  for (const std::string& name : refs->second) {
    auto it = entries_.find(name);
    if (it == entries_.end()) continue;
    it->second.checkpoints.erase(id.value());
    if (!it->second.checkpoints.empty()) continue;
    entries_.erase(it);
    if (Delete(name)) ++deleted;
  }
  by_checkpoint_.erase(refs);
  return deleted;
}

bool SharedStateRegistry::DeleteIfUnregistered(const std::string& name) {
  if (entries_.count(name) != 0) return false;
  if (!fs_->Exists(dir_ + "/" + name)) return false;
  return Delete(name);
}

bool SharedStateRegistry::Delete(const std::string& name) {
  Status s = fs_->RemoveFile(dir_ + "/" + name);
  if (!s.ok()) {
    KF_LOG_WARN("cannot delete shared state file dir={} name={} reason={}", dir_, name,
                s.ToString());
    return false;
  }
  return true;
}

Result<SharedStateRegistry::Swept> SharedStateRegistry::DeleteUnreferenced() {
  Swept swept;
  if (!fs_->IsDirectory(dir_)) return swept;
  KF_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDirectory(dir_));
  for (const std::string& name : names) {
    if (entries_.count(name) != 0) continue;
    Result<FileInfo> info = fs_->Stat(dir_ + "/" + name);
    if (!info.ok() || info->is_directory) continue;  // keyflow writes only files here
    if (Delete(name)) {
      ++swept.files;
      swept.bytes += info->size;
    }
  }
  return swept;
}

const SharedStateFile* SharedStateRegistry::Find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.file;
}

std::vector<int64_t> SharedStateRegistry::ReferencesOf(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return {};
  return {it->second.checkpoints.begin(), it->second.checkpoints.end()};
}

}  // namespace keyflow
