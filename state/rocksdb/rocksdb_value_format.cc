#include "state/rocksdb/rocksdb_value_format.h"

#include <algorithm>

namespace keyflow::rocksdb_format {

bool ReadValueSlice(BinaryReader& in, TypedBuffer& scratch, std::string_view* slice) {
  const size_t before = in.remaining();
  BinaryReader probe = in;
  if (!scratch.ReadFrom(probe)) return false;
  *slice = in.Raw(before - probe.remaining());
  return in.ok();
}

bool CanonicalListToStored(BinaryReader& in, const TypeOps& element_ops, std::string* stored,
                           uint64_t* elements) {
  const uint64_t n = in.Count(std::max<size_t>(1, element_ops.min_serialized_bytes));
  if (!in.ok()) return false;
  TypedBuffer scratch(element_ops);
  BinaryWriter out(stored);
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view element;
    if (!ReadValueSlice(in, scratch, &element)) return false;
    out.Bytes(element);
  }
  if (elements != nullptr) *elements = n;
  return true;
}

bool StoredListToCanonical(std::string_view stored, BinaryWriter& out) {
  uint64_t n = 0;
  BinaryReader count(stored);
  while (!count.at_end()) {
    count.Bytes();
    if (!count.ok()) return false;
    ++n;
  }
  out.VarU64(n);
  BinaryReader in(stored);
  while (!in.at_end()) {
    std::string_view element = in.Bytes();
    out.Raw(element.data(), element.size());
  }
  return true;
}

bool CanonicalMapToRows(BinaryReader& in, const TypeOps& key_ops, const TypeOps& value_ops,
                        std::vector<std::pair<std::string_view, std::string_view>>* rows) {
  const uint64_t n =
      in.Count(std::max<size_t>(1, key_ops.min_serialized_bytes + value_ops.min_serialized_bytes));
  if (!in.ok()) return false;
  TypedBuffer key(key_ops);
  TypedBuffer value(value_ops);
  rows->clear();
  rows->reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view k;
    std::string_view v;
    if (!ReadValueSlice(in, key, &k) || !ReadValueSlice(in, value, &v)) return false;
    rows->emplace_back(k, v);
  }
  return true;
}

bool RowsToCanonicalMap(uint64_t n, std::string_view raw_pairs, TypedBuffer& map,
                        const TypeOps& map_ops, BinaryWriter& out) {
  std::string canonical;
  BinaryWriter w(&canonical);
  w.VarU64(n);
  w.Raw(raw_pairs.data(), raw_pairs.size());
  BinaryReader in(canonical);
  if (!map.ReadFrom(in) || !in.at_end()) return false;
  map_ops.write(out, map.get());
  return true;
}

}  // namespace keyflow::rocksdb_format
