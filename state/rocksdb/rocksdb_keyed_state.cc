#include "state/rocksdb/rocksdb_keyed_state.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "state/heap/heap_keyed_state.h"
#include "state/rocksdb/rocksdb_key_layout.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"

namespace keyflow {

RocksDbKeyedState::RocksDbKeyedState(RocksDbKeyedStateBackend* backend,
                                     const KeyContext* key_context, RocksDbStateInfo* info)
    : backend_(backend),
      key_context_(key_context),
      info_(info),
      cached_(backend->write_cache_enabled() && info->kind != StateKind::kList &&
              info->kind != StateKind::kMap),
      value_(*info->value_ops) {}

int32_t RocksDbKeyedState::PrepareKey() const {
  if (!key_context_->has_current_key()) [[unlikely]] {
    FailNoCurrentKey(name());
  }
  if (cached_) return key_context_->current_key_group_index();
  prefix_.clear();
  rocksdb_layout::AppendEntryPrefix(&prefix_, key_context_->current_key_group().value(),
                                    backend_->prefix_bytes_, key_context_->current_key().bytes(),
                                    ns_.value());
  return key_context_->current_key_group_index();
}

void RocksDbKeyedState::Remember(bool exists) const {
  cached_prefix_ = prefix_;
  cached_epoch_ = backend_->epoch_;
  cached_exists_ = exists;
}

bool RocksDbKeyedState::ReadMapRows() const {
  map_rows_.clear();
  std::unique_ptr<rocksdb::Iterator> it(
      backend_->db_->NewIterator(rocksdb::ReadOptions(), info_->column_family));
  for (it->Seek(prefix_); it->Valid() && it->key().starts_with(prefix_); it->Next()) {
    rocksdb::Slice k = it->key();
    k.remove_prefix(prefix_.size());
    map_rows_.emplace_back(k.ToString(), it->value().ToString());
  }
  backend_->Check(it->status(), "reading map state '" + name() + "'");
  return !map_rows_.empty();
}

bool RocksDbKeyedState::Exists() const {
  if (cached_) return backend_->CachedRow(*info_, Lookup(), KeyGroup()).present;
  if (cached_epoch_ == backend_->epoch_ && cached_prefix_ == prefix_) return cached_exists_;
  bool exists;
  if (info_->kind == StateKind::kMap) {
    std::unique_ptr<rocksdb::Iterator> it(
        backend_->db_->NewIterator(rocksdb::ReadOptions(), info_->column_family));
    it->Seek(prefix_);
    exists = it->Valid() && it->key().starts_with(prefix_);
    backend_->Check(it->status(), "reading map state '" + name() + "'");
  } else {
    rocksdb::PinnableSlice v;
    rocksdb::Status s =
        backend_->db_->Get(rocksdb::ReadOptions(), info_->column_family, prefix_, &v);
    exists = s.ok();
    if (!s.IsNotFound()) backend_->Check(s, "reading state '" + name() + "'");
  }
  Remember(exists);
  return exists;
}

const void* RocksDbKeyedState::Get() const {
  PrepareKey();
  if (info_->kind == StateKind::kMap) {
    if (!ReadMapRows()) {
      Remember(false);
      return nullptr;
    }
    std::string raw;
    for (const auto& [k, v] : map_rows_) raw.append(k).append(v);
    scratch_.clear();
    BinaryWriter out(&scratch_);
    KF_CHECK(
        rocksdb_format::RowsToCanonicalMap(map_rows_.size(), raw, value_, *info_->value_ops, out))
        << "map state '" << name() << "' holds rows this backend did not write";
    Remember(true);
    return value_.get();
  }
  if (cached_) {
    const RocksDbCachedRow& row = backend_->CachedRow(*info_, Lookup(), KeyGroup());
    if (!row.present) return nullptr;
    BinaryReader in(row.value);
    KF_CHECK(value_.ReadFrom(in)) << "state '" << name()
                                  << "' holds a value this backend did not write";
    return value_.get();
  }
  rocksdb::PinnableSlice v;
  rocksdb::Status s = backend_->db_->Get(rocksdb::ReadOptions(), info_->column_family, prefix_, &v);
  if (!s.ok()) {
    if (!s.IsNotFound()) backend_->Check(s, "reading state '" + name() + "'");
    Remember(false);
    return nullptr;
  }
  std::string_view bytes(v.data(), v.size());
  if (info_->kind == StateKind::kList) {
    scratch_.clear();
    BinaryWriter out(&scratch_);
    KF_CHECK(rocksdb_format::StoredListToCanonical(bytes, out))
        << "list state '" << name() << "' holds a value this backend did not write";
    bytes = scratch_;
  }
  BinaryReader in(bytes);
  KF_CHECK(value_.ReadFrom(in)) << "state '" << name()
                                << "' holds a value this backend did not write";
  Remember(true);
  return value_.get();
}

void RocksDbKeyedState::Write(const void* value, bool existed) {
  const int32_t index = key_context_->current_key_group_index();
  std::string encoded;
  BinaryWriter out(&encoded);
  info_->value_ops->write(out, value);
  if (cached_) {
    backend_->CachePut(*info_, Lookup(), KeyGroup(), index, std::move(encoded));
    if (!existed) Count(index, +1);
    return;
  }
  rocksdb::WriteBatch batch;
  if (info_->kind == StateKind::kList) {
    std::string stored;
    BinaryReader in(encoded);
    KF_CHECK(rocksdb_format::CanonicalListToStored(in, *info_->element_ops, &stored));
    batch.Put(info_->column_family, prefix_, stored);
  } else if (info_->kind == StateKind::kMap) {
    // Rows that changed: Put; rows no longer present: Delete. Both sides ascending by UK bytes.
    if (!existed) map_rows_.clear();
    BinaryReader in(encoded);
    std::vector<std::pair<std::string_view, std::string_view>> rows;
    KF_CHECK(
        rocksdb_format::CanonicalMapToRows(in, *info_->element_ops, *info_->map_value_ops, &rows));
    std::sort(rows.begin(), rows.end());
    size_t o = 0;
    std::string key;
    auto row_key = [&](std::string_view uk) -> const std::string& {
      key.assign(prefix_).append(uk);
      return key;
    };
    for (const auto& [uk, uv] : rows) {
      while (o < map_rows_.size() && std::string_view(map_rows_[o].first) < uk) {
        batch.Delete(info_->column_family, row_key(map_rows_[o++].first));
      }
      if (o < map_rows_.size() && map_rows_[o].first == uk) {
        if (map_rows_[o].second != uv) batch.Put(info_->column_family, row_key(uk), uv);
        ++o;
      } else {
        batch.Put(info_->column_family, row_key(uk), uv);
      }
    }
    while (o < map_rows_.size()) batch.Delete(info_->column_family, row_key(map_rows_[o++].first));
    map_rows_.clear();
  } else {
    batch.Put(info_->column_family, prefix_, encoded);
  }
  backend_->Apply(batch, "writing state '" + name() + "'");
  if (!existed) Count(index, +1);
  Remember(true);
}

void RocksDbKeyedState::Erase(bool existed) {
  if (!existed) return;
  if (cached_) {
    const int32_t index = key_context_->current_key_group_index();
    backend_->CacheDelete(*info_, Lookup(), KeyGroup(), index);
    Count(index, -1);
    return;
  }
  rocksdb::WriteBatch batch;
  if (info_->kind == StateKind::kMap) {
    ReadMapRows();
    std::string key;
    for (const auto& row : map_rows_) {
      key.assign(prefix_).append(row.first);
      batch.Delete(info_->column_family, key);
    }
    map_rows_.clear();
  } else {
    batch.Delete(info_->column_family, prefix_);
  }
  backend_->Apply(batch, "clearing state '" + name() + "'");
  Count(key_context_->current_key_group_index(), -1);
  Remember(false);
}

void RocksDbKeyedState::Update(void* value) {
  const int32_t index = PrepareKey();
  const bool existed = Exists();
  if (info_->kind == StateKind::kMap && existed) ReadMapRows();
  backend_->BeforeWrite(index);
  const bool empty = info_->value_ops->empty != nullptr && info_->value_ops->empty(value);
  if (empty && (info_->kind == StateKind::kList || info_->kind == StateKind::kMap)) {
    Erase(existed);  // collections are never stored empty
  } else {
    Write(value, existed);
  }
}

void RocksDbKeyedState::Modify(bool create_if_absent, ModifyFn fn) {
  if (info_->kind == StateKind::kList) {
    // ListState::Add/AddAll: fn appends to the list it is given; given an empty one, what it
    // holds afterwards is exactly what to append.
    const int32_t index = PrepareKey();
    const bool existed = Exists();
    if (!existed && !create_if_absent) return;
    value_.Reset();
    backend_->BeforeWrite(index);
    const bool keep = fn(value_.get(), !existed);
    KF_CHECK(keep) << "list state '" << name() << "': Modify may only append";
    std::string encoded;
    BinaryWriter out(&encoded);
    info_->value_ops->write(out, value_.get());
    std::string operand;
    uint64_t added = 0;
    BinaryReader in(encoded);
    KF_CHECK(rocksdb_format::CanonicalListToStored(in, *info_->element_ops, &operand, &added));
    if (added == 0) return;
    rocksdb::WriteBatch batch;
    batch.Merge(info_->column_family, prefix_, operand);
    backend_->Apply(batch, "appending to list state '" + name() + "'");
    if (!existed) Count(index, +1);
    Remember(true);
    return;
  }
  const void* current = Get();  // prepares prefix_, reads map_rows_ for maps
  const int32_t index = key_context_->current_key_group_index();
  const bool existed = current != nullptr;
  if (!existed) {
    if (!create_if_absent) return;
    value_.Reset();
  }
  backend_->BeforeWrite(index);
  const bool keep = fn(value_.get(), !existed);
  const bool empty = info_->kind == StateKind::kMap && info_->value_ops->empty(value_.get());
  if (!keep || empty) {
    Erase(existed);
  } else {
    Write(value_.get(), existed);
  }
}

void RocksDbKeyedState::Clear() {
  const int32_t index = PrepareKey();
  if (!Exists()) return;
  backend_->BeforeWrite(index);
  Erase(true);
}

}  // namespace keyflow
