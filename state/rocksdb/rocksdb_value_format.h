// How the RocksDB backend stores values, and the conversions to and from the canonical
// per-key-group snapshot encoding (state/README.md):
//
//   value, reducing, aggregating   TypeSerializer bytes of the value (= canonical)
//   list                           n x (varint length, TypeSerializer<T> bytes): appending is
//                                  concatenation, which the merge operator does without a read
//                                  (canonical: varint n + n x TypeSerializer<T>)
//   map                            one row per user key: rocks key ends with TypeSerializer<UK>,
//                                  the value is TypeSerializer<UV> (canonical: varint n + pairs
//                                  ascending by UK's operator<, which is not byte order: a map is
//                                  rebuilt as an object and re-serialised to get it)
//
// TypedBuffer holds one object known only by its TypeOps (the Get() results, temporaries).
//
// Threading: TypedBuffer is not shared; the functions are reentrant.
#pragma once

#include <cstddef>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/binary_io.h"
#include "state/type_ops.h"

namespace keyflow {

class TypedBuffer {
 public:
  explicit TypedBuffer(const TypeOps& ops)
      : ops_(&ops), at_(::operator new(ops.size, std::align_val_t(ops.alignment))) {
    ops_->construct(at_);
  }
  ~TypedBuffer() {
    ops_->destroy(at_);
    ::operator delete(at_, std::align_val_t(ops_->alignment));
  }
  TypedBuffer(const TypedBuffer&) = delete;
  TypedBuffer& operator=(const TypedBuffer&) = delete;

  void* get() const { return at_; }
  // Back to a default-constructed object.
  void Reset() {
    ops_->destroy(at_);
    ops_->construct(at_);
  }
  // Reset, then read one value from `in`; false if malformed.
  bool ReadFrom(BinaryReader& in) {
    Reset();
    return ops_->read(in, at_);
  }

 private:
  const TypeOps* ops_;
  void* at_;
};

namespace rocksdb_format {

// The bytes of one serialised value of `ops` at the front of `in` (parsed into `scratch`).
bool ReadValueSlice(BinaryReader& in, TypedBuffer& scratch, std::string_view* slice);

// Reads a canonical list (varint n + elements) from `in` and appends its stored form to
// `stored`; `elements` is set to n. False if malformed.
bool CanonicalListToStored(BinaryReader& in, const TypeOps& element_ops, std::string* stored,
                           uint64_t* elements = nullptr);
// Writes the canonical form of a stored list. False if `stored` is malformed.
bool StoredListToCanonical(std::string_view stored, BinaryWriter& out);

// Reads a canonical map (varint n + (UK, UV) pairs) from `in` into its rows (views into `in`).
bool CanonicalMapToRows(BinaryReader& in, const TypeOps& key_ops, const TypeOps& value_ops,
                        std::vector<std::pair<std::string_view, std::string_view>>* rows);
// Appends `n` rows' raw bytes (UK bytes then UV bytes each) as a canonical map: parsed into
// `map` (a TypedBuffer of the map type) and written again, so the pairs come out in UK order.
// False if the rows are malformed.
bool RowsToCanonicalMap(uint64_t n, std::string_view raw_pairs, TypedBuffer& map,
                        const TypeOps& map_ops, BinaryWriter& out);

}  // namespace rocksdb_format
}  // namespace keyflow
