// The RocksDB backend's key layout (state/README.md "RocksDB backend"): how a (key group, key,
// namespace[, user key]) becomes a RocksDB key whose byte order is the canonical snapshot order.
//
//   rocks key := key group   1 byte if max parallelism <= 128, else 2 bytes; big-endian (Flink's
//                            keyGroupPrefixBytes), so a key-group range is a contiguous key range
//                escaped key the Key's bytes with 0x00 written as 00 FF, then the terminator
//                            00 01: order-preserving and prefix-free, so byte order of rocks
//                            keys is byte order of the keys ("ab" < "abc" < "b")
//                namespace   8 bytes big-endian of the i64 with its sign bit flipped, so byte
//                            order is numeric order (kVoidNamespace = INT64_MIN sorts first)
//                [user key]  map state only: TypeSerializer<UK> bytes of the map's key
//
// Within a key group, rows therefore come in ascending (key bytes, namespace) order: the order
// of the per-key-group snapshot format, so SerializeKeyGroup streams entries as RocksDB returns
// them.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keyflow::rocksdb_layout {

// Bytes of the key-group prefix for a job of max parallelism `max_parallelism`.
inline int KeyGroupPrefixBytes(int32_t max_parallelism) {
  return max_parallelism > 128 ? 2 : 1;
}

inline void AppendKeyGroup(std::string* out, int32_t g, int prefix_bytes) {
  if (prefix_bytes == 2) out->push_back(static_cast<char>((g >> 8) & 0xFF));
  out->push_back(static_cast<char>(g & 0xFF));
}

inline void AppendEscapedKey(std::string* out, std::string_view key) {
  for (char c : key) {
    out->push_back(c);
    if (c == '\0') out->push_back(static_cast<char>(0xFF));
  }
  out->push_back('\0');
  out->push_back('\x01');
}

inline void AppendNamespace(std::string* out, int64_t ns) {
  const uint64_t u = static_cast<uint64_t>(ns) ^ (uint64_t{1} << 63);
  for (int shift = 56; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((u >> shift) & 0xFF));
}

// kg | escaped key | namespace: the whole rocks key of a value/list entry, the prefix of a map's.
inline void AppendEntryPrefix(std::string* out, int32_t g, int prefix_bytes, std::string_view key,
                              int64_t ns) {
  AppendKeyGroup(out, g, prefix_bytes);
  AppendEscapedKey(out, key);
  AppendNamespace(out, ns);
}

// A rocks key taken apart. `rest` is what follows the namespace (a map's user key).
struct DecodedKey {
  int32_t key_group = 0;
  std::string key;
  int64_t ns = 0;
  std::string_view rest;
  size_t prefix_length = 0;  // bytes of kg | escaped key | namespace
};

// False when `rocks_key` is not in this layout (it was not written by this backend).
inline bool DecodeKey(std::string_view rocks_key, int prefix_bytes, DecodedKey* out) {
  size_t p = 0;
  if (rocks_key.size() < static_cast<size_t>(prefix_bytes)) return false;
  out->key_group = static_cast<uint8_t>(rocks_key[p++]);
  if (prefix_bytes == 2)
    out->key_group = (out->key_group << 8) | static_cast<uint8_t>(rocks_key[p++]);
  out->key.clear();
  for (;;) {
    if (p >= rocks_key.size()) return false;
    char c = rocks_key[p++];
    if (c != '\0') {
      out->key.push_back(c);
      continue;
    }
    if (p >= rocks_key.size()) return false;
    char next = rocks_key[p++];
    if (next == '\x01') break;
    if (next != static_cast<char>(0xFF)) return false;
    out->key.push_back('\0');
  }
  if (rocks_key.size() - p < 8) return false;
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<uint8_t>(rocks_key[p++]);
  out->ns = static_cast<int64_t>(u ^ (uint64_t{1} << 63));
  out->prefix_length = p;
  out->rest = rocks_key.substr(p);
  return true;
}

// The first rocks key of key group g and the first one after it: [begin, end) holds exactly
// key group g's rows. g + 1 always fits the prefix: a 1-byte prefix means g < 128, a 2-byte one
// g < 32768 (the largest max parallelism).
inline std::string KeyGroupBegin(int32_t g, int prefix_bytes) {
  std::string s;
  AppendKeyGroup(&s, g, prefix_bytes);
  return s;
}
inline std::string KeyGroupEnd(int32_t g, int prefix_bytes) {
  return KeyGroupBegin(g + 1, prefix_bytes);
}

}  // namespace keyflow::rocksdb_layout
