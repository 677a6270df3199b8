// KeyOrderPrefix: a key's position in the byte order of Key::operator< as one 128-bit unsigned
// number, so that sorting keys (snapshots write state in key order) compares integers instead
// of calling memcmp through a pointer. Used by StateMap::SortedEntries.
//
// The number is bytes 0..14 of the key, zero padded, then the length (0xFF for a key longer
// than 15 bytes), big endian. Comparing two prefixes orders the keys as operator< does — a
// prefix first, since the padding is zero and the length comes last — except for two long keys
// with equal first 15 bytes, whose prefixes are equal although the keys may differ: is_long()
// says when to compare the bytes. Value type; no threading concerns.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/key.h"

namespace keyflow {

struct KeyOrderPrefix {
  uint64_t hi = 0;
  uint64_t lo = 0;

  static KeyOrderPrefix Of(const Key& key) {
    unsigned char b[16] = {};
    const size_t n = key.size();
    std::memcpy(b, key.data(), n < 15 ? n : 15);
    b[15] = n <= 15 ? static_cast<unsigned char>(n) : 0xFF;
    uint64_t hi, lo;
    std::memcpy(&hi, b, 8);
    std::memcpy(&lo, b + 8, 8);
    return {__builtin_bswap64(hi), __builtin_bswap64(lo)};
  }
  // True for a key longer than 15 bytes: an equal prefix does not mean an equal key.
  bool is_long() const { return (lo & 0xFF) == 0xFF; }
};

}  // namespace keyflow
