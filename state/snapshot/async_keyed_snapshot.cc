#include "state/snapshot/async_keyed_snapshot.h"

#include <algorithm>

#include "common/check.h"

namespace keyflow {

AsyncKeyedSnapshot::AsyncKeyedSnapshot(int32_t max_parallelism, KeyType key_type,
                                       KeyGroupRange range,
                                       std::vector<const SnapshotSection*> sections,
                                       std::vector<bool> include)
    : KeyGroupWriteGuard(range.size()),
      max_parallelism_(max_parallelism),
      key_type_(key_type),
      range_(range),
      sections_(std::move(sections)),
      include_(std::move(include)),
      copyable_(std::all_of(sections_.begin(), sections_.end(),
                            [](const SnapshotSection* s) { return s->copy != nullptr; })),
      blocks_(static_cast<size_t>(range.size())),
      copies_(static_cast<size_t>(range.size())),
      counts_(static_cast<size_t>(range.size())) {
  KF_CHECK(include_.empty() || include_.size() == static_cast<size_t>(range.size()))
      << include_.size() << " flags for " << range.ToString();
  // Key groups the snapshot does not hold are free to change from the start.
  for (size_t i = 0; i < include_.size(); ++i) {
    if (!include_[i]) state_[i].store(kSerialized, std::memory_order_relaxed);
  }
}

bool AsyncKeyedSnapshot::TryClaim(int32_t index, bool copy) {
  uint8_t expected = kPending;
  if (!state_[index].compare_exchange_strong(expected, kSerializing, std::memory_order_acq_rel)) {
    return false;
  }
  KeyGroupId g(range_.start() + index);
  if (copy) {
    // The writer serialises the copies and counts when it reaches this key group.
    for (const SnapshotSection* s : sections_) {
      copies_[static_cast<size_t>(index)].push_back(s->copy(g));
    }
  } else {
    SerializeKeyGroupBlock(g, sections_, &blocks_[static_cast<size_t>(index)]);
    std::vector<uint64_t>& counts = counts_[static_cast<size_t>(index)];
    for (const SnapshotSection* s : sections_) counts.push_back(s->count(g));
  }
  {
    MutexLock lock(&mu_);
    state_[index].store(kSerialized, std::memory_order_release);
  }
  serialized_.SignalAll();
  return true;
}

void AsyncKeyedSnapshot::WaitSerialized(int32_t index) {
  MutexLock lock(&mu_);
  while (state_[index].load(std::memory_order_acquire) != kSerialized) serialized_.Wait(&mu_);
}

void AsyncKeyedSnapshot::SerializeBeforeWrite(int32_t index) {
  if (TryClaim(index, /*copy=*/copyable_)) {
    by_task_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  WaitSerialized(index);  // the writer is on it right now
}

Result<KeyedSnapshotInfo> AsyncKeyedSnapshot::WriteTo(KeyedSnapshotWriter::Sink sink) {
  KeyedSnapshotWriter writer(max_parallelism_, key_type_, range_, sections_, std::move(sink));
  KF_RETURN_IF_ERROR(writer.Begin());
  for (int32_t i = 0; i < range_.size(); ++i) {
    if (!include_.empty() && !include_[static_cast<size_t>(i)]) continue;
    if (!TryClaim(i, /*copy=*/false)) WaitSerialized(i);
    std::string& block = blocks_[static_cast<size_t>(i)];
    std::vector<std::unique_ptr<KeyGroupCopy>>& copies = copies_[static_cast<size_t>(i)];
    if (!copies.empty()) {  // copied by the task thread
      SerializeKeyGroupBlock(KeyGroupId(range_.start() + i), sections_, copies, &block);
      for (const auto& c : copies) counts_[static_cast<size_t>(i)].push_back(c->Count());
      copies.clear();
    }
    KF_RETURN_IF_ERROR(writer.AppendKeyGroup(KeyGroupId(range_.start() + i), block,
                                             std::move(counts_[static_cast<size_t>(i)])));
    std::string().swap(block);  // free the copy as soon as it is written
  }
  return writer.Finish();
}

Result<KeyedSnapshotInfo> AsyncKeyedSnapshot::WriteToFile(FileSystem& fs, const std::string& path,
                                                          size_t buffer_bytes) {
  Result<KeyedSnapshotInfo> info = [&]() -> Result<KeyedSnapshotInfo> {
    KF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                        fs.NewWritableFile(path, WriteMode::kTruncate));
    std::string buffer;
    buffer.reserve(buffer_bytes);
    KF_ASSIGN_OR_RETURN(KeyedSnapshotInfo written, WriteTo([&](std::string_view bytes) -> Status {
                          buffer.append(bytes);
                          if (buffer.size() >= buffer_bytes) {
                            KF_RETURN_IF_ERROR(file->Append(buffer));
                            buffer.clear();
                          }
                          return Status::Ok();
                        }));
    KF_RETURN_IF_ERROR(file->Append(buffer));
    KF_RETURN_IF_ERROR(file->Sync());
    KF_RETURN_IF_ERROR(file->Close());
    return written;
  }();
  if (!info.ok()) {
    fs.RemoveFile(path).IgnoreError();  // a partial snapshot is of no use to anyone
    return info.status().WithContext("cannot write the state snapshot " + path);
  }
  return info;
}

}  // namespace keyflow
