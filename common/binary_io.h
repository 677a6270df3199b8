// Little-endian binary encoding used by every keyflow format (snapshot files, checkpoint
// metadata, data-plane frames). Hand-rolled because it is the hot path of snapshots and
// batches: appends to a std::string, no virtual calls, no per-value allocation.
//
// BinaryReader never reads past its buffer and never allocates from an unchecked length:
// a read beyond the end (or a length larger than the remaining bytes) sets a sticky failure,
// returns zero/empty, and every later read fails too. Check ok() (or status()) after a
// group of reads.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/key.h"
#include "common/status.h"

namespace keyflow {

class BinaryWriter {
 public:
  explicit BinaryWriter(std::string* out) : out_(out) {}

  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void I32(int32_t v) { Raw(&v, 4); }
  void I64(int64_t v) { Raw(&v, 8); }
  void F64(double v) { Raw(&v, 8); }
  // Unsigned LEB128.
  void VarU64(uint64_t v) {
    char buf[10];
    int n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    out_->append(buf, static_cast<size_t>(n));
  }
  // Length-prefixed (varint) bytes.
  void Bytes(std::string_view b) {
    VarU64(b.size());
    out_->append(b.data(), b.size());
  }
  void KeyBytes(const Key& k) { Bytes(k.bytes()); }
  void Raw(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }

  size_t position() const { return out_->size(); }
  std::string* buffer() { return out_; }

 private:
  std::string* out_;
};

class BinaryReader {
 public:
  explicit BinaryReader(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}

  uint8_t U8() { return Fixed<uint8_t>(); }
  uint16_t U16() { return Fixed<uint16_t>(); }
  uint32_t U32() { return Fixed<uint32_t>(); }
  uint64_t U64() { return Fixed<uint64_t>(); }
  int32_t I32() { return Fixed<int32_t>(); }
  int64_t I64() { return Fixed<int64_t>(); }
  double F64() { return Fixed<double>(); }
  uint64_t VarU64() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return Fail();
      auto b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Fail();  // more than 10 bytes: not a varint we wrote
  }
  // A view into the underlying buffer, valid as long as the buffer is.
  std::string_view Bytes() {
    uint64_t n = VarU64();
    if (!ok_ || n > remaining()) {
      Fail();
      return {};
    }
    std::string_view v(p_, n);
    p_ += n;
    return v;
  }
  Key KeyBytes() { return Key::FromBytes(Bytes()); }
  std::string_view Raw(size_t n) {
    if (!ok_ || n > remaining()) {
      Fail();
      return {};
    }
    std::string_view v(p_, n);
    p_ += n;
    return v;
  }
  // Reads a count of elements that each take at least `min_element_bytes`; fails (returning 0)
  // when the count cannot possibly fit in the remaining bytes. Use before reserving memory.
  uint64_t Count(size_t min_element_bytes) {
    uint64_t n = VarU64();
    if (ok_ && min_element_bytes > 0 && n > remaining() / min_element_bytes) return Fail();
    return n;
  }

  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  // Corruption("<what>: truncated or malformed") if a read failed, OK otherwise.
  Status status(std::string_view what) const {
    if (ok_) return Status::Ok();
    return Corruption(std::string(what) + ": data is truncated or malformed");
  }

 private:
  template <typename T>
  T Fixed() {
    if (!ok_ || remaining() < sizeof(T)) return static_cast<T>(Fail());
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }

  const char* p_;
  const char* end_;
  bool ok_ = true;
};

}  // namespace keyflow
