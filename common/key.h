// Key: the partitioning key of a record, as compact bytes.
//
// Every key is a byte string plus a job-wide KeyType that says how to read it:
//   kString — UTF-8 text (hashed like Java's String.hashCode over its UTF-16 code units);
//   kInt    — an int32, stored as 8 little-endian bytes of the sign-extended value;
//   kLong   — an int64, stored as 8 little-endian bytes.
// Keys of up to 15 bytes live inline in the 16-byte object (no allocation): the state backend
// and the timer queues store millions of them. Longer keys own a heap buffer.
// Equality is byte equality; Hash() is a fast non-cryptographic hash for in-process tables
// (never used for partitioning — that is KeyGroupAssigner's job, see key_group_assignment.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/hashing.h"
#include "common/status.h"

namespace keyflow {

enum class KeyType : uint8_t { kString = 0, kInt = 1, kLong = 2 };

std::string_view KeyTypeName(KeyType t);
Result<KeyType> ParseKeyType(std::string_view name);  // "string" | "int" | "long"

class Key {
 public:
  static constexpr size_t kInlineCapacity = 15;

  Key() { std::memset(buf_, 0, sizeof(buf_)); }
  static Key FromBytes(std::string_view bytes);
  static Key FromInt64(int64_t v);  // for kInt and kLong keys

  Key(const Key& other) {
    if (other.is_heap()) [[unlikely]] {
      AssignBytes(other.bytes());
    } else {
      std::memcpy(buf_, other.buf_, sizeof(buf_));
    }
  }
  Key(Key&& other) noexcept {
    std::memcpy(buf_, other.buf_, sizeof(buf_));
    std::memset(other.buf_, 0, sizeof(other.buf_));
  }
  Key& operator=(const Key& other) {
    if (this == &other) return *this;
    if (is_heap()) [[unlikely]]
      FreeHeap();
    if (other.is_heap()) [[unlikely]] {
      AssignBytes(other.bytes());
    } else {
      std::memcpy(buf_, other.buf_, sizeof(buf_));
    }
    return *this;
  }
  Key& operator=(Key&& other) noexcept {
    if (this == &other) return *this;
    if (is_heap()) [[unlikely]]
      FreeHeap();
    std::memcpy(buf_, other.buf_, sizeof(buf_));
    std::memset(other.buf_, 0, sizeof(other.buf_));
    return *this;
  }
  ~Key() {
    if (is_heap()) FreeHeap();
  }

  size_t size() const { return is_heap() ? heap_size() : buf_[15]; }
  const char* data() const { return is_heap() ? heap_ptr() : buf_; }
  std::string_view bytes() const { return {data(), size()}; }

  // The int64 value of a kInt/kLong key. Precondition: size() == 8.
  int64_t AsInt64() const;

  uint64_t Hash() const {
    if (!is_heap()) [[likely]] {
      uint64_t w0, w1;
      std::memcpy(&w0, buf_, 8);
      std::memcpy(&w1, buf_ + 8, 8);
      return Mix64(w0, w1);
    }
    return HashBytes(bytes());
  }
  // Key::FromBytes(bytes).Hash() without building the key (e.g. to prefetch state for a
  // record still in its network buffer).
  static uint64_t HashOf(std::string_view bytes) {
    if (bytes.size() <= kInlineCapacity) [[likely]] {
      char buf[16] = {};
      std::memcpy(buf, bytes.data(), bytes.size());
      buf[15] = static_cast<char>(bytes.size());
      uint64_t w0, w1;
      std::memcpy(&w0, buf, 8);
      std::memcpy(&w1, buf + 8, 8);
      return Mix64(w0, w1);
    }
    return HashBytes(bytes);
  }

  friend bool operator==(const Key& a, const Key& b) {
    if (!a.is_heap() && !b.is_heap()) {
      // Inline keys keep unused bytes zero, so two 8-byte compares decide equality.
      return std::memcmp(a.buf_, b.buf_, 16) == 0;
    }
    return a.bytes() == b.bytes();
  }
  friend bool operator!=(const Key& a, const Key& b) { return !(a == b); }
  // Byte-wise order (unsigned), then length: used for deterministic tie-breaks.
  friend bool operator<(const Key& a, const Key& b) { return a.bytes() < b.bytes(); }

  template <typename H>
  friend H AbslHashValue(H h, const Key& k) {
    return H::combine(std::move(h), k.Hash());
  }

 private:
  static constexpr uint8_t kHeapTag = 0xFF;
  bool is_heap() const { return static_cast<uint8_t>(buf_[15]) == kHeapTag; }
  const char* heap_ptr() const {
    const char* p;
    std::memcpy(&p, buf_, sizeof(p));
    return p;
  }
  uint32_t heap_size() const {
    uint32_t n;
    std::memcpy(&n, buf_ + 8, sizeof(n));
    return n;
  }
  void AssignBytes(std::string_view bytes);
  void FreeHeap();

  // Inline: bytes [0, 15) data (zero padded), byte 15 = length (0..15).
  // Heap:   bytes [0, 8) pointer, [8, 12) length, byte 15 = 0xFF.
  alignas(8) char buf_[16];
};

static_assert(sizeof(Key) == 16);

// Renders a key for humans and JSON output: the text for kString, the number for kInt/kLong.
std::string KeyToString(const Key& key, KeyType type);

// Parses the textual form of a key (as given on a command line) into a Key of `type`.
// kInt/kLong reject non-numeric text and values outside the type's range.
Result<Key> ParseKey(std::string_view text, KeyType type);

}  // namespace keyflow
