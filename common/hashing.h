// Hash functions with fixed, documented results.
//
// Partitioning hashes (identical to Flink, so keys land in the same key groups as in a Flink
// job, on every host, compiler and version):
//   FlinkMurmurHash        — MathUtils.murmurHash(int)
//   JavaStringHashUtf8     — String.hashCode over the UTF-16 code units of UTF-8 text
//   JavaLongHash           — Long.hashCode
// In-process hashes (hash tables only; may change between versions): Mix64, HashBytes.
// Checksums for files and frames: Checksum64 (XXH3-64, stable by XXH3's spec).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/status.h"

namespace keyflow {

inline uint32_t Rotl32(uint32_t x, int r) {
  return (x << r) | (x >> (32 - r));
}

// Flink's MathUtils.murmurHash(int): murmur3_32 of one 4-byte block (seed 0) with fmix32,
// made non-negative (Integer.MIN_VALUE maps to 0). Always in [0, 2^31).
inline int32_t FlinkMurmurHash(int32_t code) {
  uint32_t h = static_cast<uint32_t>(code);
  h *= 0xcc9e2d51u;
  h = Rotl32(h, 15);
  h *= 0x1b873593u;
  h = Rotl32(h, 13);
  h = h * 5u + 0xe6546b64u;
  h ^= 4u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  int32_t s = static_cast<int32_t>(h);
  if (s >= 0) return s;
  if (s != INT32_MIN) return -s;
  return 0;
}

// Long.hashCode(v) = (int)(v ^ (v >>> 32)).
inline int32_t JavaLongHash(int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  return static_cast<int32_t>(static_cast<uint32_t>(u ^ (u >> 32)));
}

// Java's String.hashCode of the text `utf8`, computed over its UTF-16 code units (a code point
// above U+FFFF counts as its surrogate pair). Returns false if `utf8` is not valid UTF-8
// (overlong forms, encoded surrogates, code points above U+10FFFF, truncated sequences).
bool JavaStringHashUtf8(std::string_view utf8, int32_t* hash);

// OK if `text` is valid UTF-8, otherwise an InvalidArgument naming the byte offset.
Status ValidateUtf8(std::string_view text);

// Fast 128-bit-multiply mix of two words (wyhash style). Not stable across versions.
inline uint64_t Mix64(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a ^ 0xa0761d6478bd642full) * (b ^ 0xe7037ed1a0b428dbull);
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// In-process hash of arbitrary bytes (XXH3-64).
uint64_t HashBytes(std::string_view bytes);

// Checksum of bytes stored on disk or sent over the wire: XXH3-64 with seed 0.
uint64_t Checksum64(const void* data, size_t size);
inline uint64_t Checksum64(std::string_view bytes) {
  return Checksum64(bytes.data(), bytes.size());
}

// Incremental XXH3-64 over several pieces, equal to Checksum64 of their concatenation.
class StreamingChecksum {
 public:
  StreamingChecksum();
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;
  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t
};

}  // namespace keyflow
