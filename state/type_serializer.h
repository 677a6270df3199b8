// TypeSerializer<T>: how a value of keyed state is written into a snapshot and read back.
//
// Used by the state backends for every value, list element, map entry and accumulator they
// snapshot. Encodings (compact, little-endian; see state/README.md):
//   arithmetic types   fixed width (1/2/4/8 bytes), enums as their underlying type
//   bool               one byte, 0 or 1 (anything else is malformed)
//   std::string, Key   varint length + bytes
//   Timestamp          8 bytes (millis); StrongId<Tag, Rep> as Rep
//   std::vector<T>     varint count + elements
//   std::pair<A, B>    A then B
//   absl::flat_hash_map<K, V>  varint count + (K, V) pairs in ascending K order (K needs
//                      operator<), so equal maps give equal bytes
//   user structs       their own members `void Write(BinaryWriter&) const` and
//                      `bool Read(BinaryReader&)` (false = malformed). Such a struct must write
//                      at least one byte, or declare `static constexpr size_t
//                      kMinSerializedBytes` (used to bound counts read from untrusted bytes).
//
// Read(in, &v) returns false when the bytes are truncated or malformed; `v` is then
// unspecified. Counts are checked with BinaryReader::Count before anything is reserved, so
// corrupt bytes never make us allocate more than the input could hold. Read types must be
// default-constructible. Writes and reads allocate only what the value itself holds.
//
// Threading: stateless; safe from any thread.
#pragma once

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/binary_io.h"
#include "common/key.h"
#include "common/types.h"

namespace keyflow {

static_assert(std::endian::native == std::endian::little,
              "keyflow's binary formats assume a little-endian host");

template <typename T, typename Enable = void>
struct TypeSerializer;  // Not defined for unsupported types: a compile error names T.

// A user struct that serializes itself.
template <typename T>
concept SelfSerializable = requires(const T& c, T& m, BinaryWriter& w, BinaryReader& r) {
  { c.Write(w) } -> std::same_as<void>;
  { m.Read(r) } -> std::same_as<bool>;
};

// True when TypeSerializer<T> is defined.
template <typename T>
concept Serializable = requires(BinaryWriter& w, BinaryReader& r, const T& c, T* m) {
  TypeSerializer<T>::Write(w, c);
  { TypeSerializer<T>::Read(r, m) } -> std::same_as<bool>;
};

// ---- numbers ----

template <typename T>
struct TypeSerializer<T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>> {
  static_assert(sizeof(T) <= 8, "long double has no portable encoding; use double");
  static constexpr size_t kMinBytes = sizeof(T);
  static void Write(BinaryWriter& out, const T& v) { out.Raw(&v, sizeof(T)); }
  static bool Read(BinaryReader& in, T* v) {
    std::string_view b = in.Raw(sizeof(T));
    if (!in.ok()) return false;
    std::memcpy(v, b.data(), sizeof(T));
    return true;
  }
};

template <>
struct TypeSerializer<bool> {
  static constexpr size_t kMinBytes = 1;
  static void Write(BinaryWriter& out, const bool& v) { out.U8(v ? 1 : 0); }
  static bool Read(BinaryReader& in, bool* v) {
    uint8_t b = in.U8();
    *v = b == 1;
    return in.ok() && b <= 1;
  }
};

template <typename T>
struct TypeSerializer<T, std::enable_if_t<std::is_enum_v<T>>> {
  using U = std::underlying_type_t<T>;
  static constexpr size_t kMinBytes = sizeof(U);
  static void Write(BinaryWriter& out, const T& v) {
    TypeSerializer<U>::Write(out, static_cast<U>(v));
  }
  static bool Read(BinaryReader& in, T* v) {
    U u{};
    if (!TypeSerializer<U>::Read(in, &u)) return false;
    *v = static_cast<T>(u);
    return true;
  }
};

// ---- byte strings ----

template <>
struct TypeSerializer<std::string> {
  static constexpr size_t kMinBytes = 1;
  static void Write(BinaryWriter& out, const std::string& v) { out.Bytes(v); }
  static bool Read(BinaryReader& in, std::string* v) {
    std::string_view b = in.Bytes();
    if (!in.ok()) return false;
    v->assign(b.data(), b.size());
    return true;
  }
};

template <>
struct TypeSerializer<Key> {
  static constexpr size_t kMinBytes = 1;
  static void Write(BinaryWriter& out, const Key& v) { out.KeyBytes(v); }
  static bool Read(BinaryReader& in, Key* v) {
    std::string_view b = in.Bytes();
    if (!in.ok()) return false;
    *v = Key::FromBytes(b);
    return true;
  }
};

// ---- keyflow's strong types ----

template <>
struct TypeSerializer<Timestamp> {
  static constexpr size_t kMinBytes = 8;
  static void Write(BinaryWriter& out, const Timestamp& v) { out.I64(v.millis()); }
  static bool Read(BinaryReader& in, Timestamp* v) {
    *v = Timestamp(in.I64());
    return in.ok();
  }
};

template <typename Tag, typename Rep>
struct TypeSerializer<StrongId<Tag, Rep>> {
  static constexpr size_t kMinBytes = TypeSerializer<Rep>::kMinBytes;
  static void Write(BinaryWriter& out, const StrongId<Tag, Rep>& v) {
    TypeSerializer<Rep>::Write(out, v.value());
  }
  static bool Read(BinaryReader& in, StrongId<Tag, Rep>* v) {
    Rep r{};
    if (!TypeSerializer<Rep>::Read(in, &r)) return false;
    *v = StrongId<Tag, Rep>(r);
    return true;
  }
};

// ---- composites ----

template <typename A, typename B>
struct TypeSerializer<std::pair<A, B>> {
  static constexpr size_t kMinBytes = TypeSerializer<A>::kMinBytes + TypeSerializer<B>::kMinBytes;
  static void Write(BinaryWriter& out, const std::pair<A, B>& v) {
    TypeSerializer<A>::Write(out, v.first);
    TypeSerializer<B>::Write(out, v.second);
  }
  static bool Read(BinaryReader& in, std::pair<A, B>* v) {
    return TypeSerializer<A>::Read(in, &v->first) && TypeSerializer<B>::Read(in, &v->second);
  }
};

template <typename T>
struct TypeSerializer<std::vector<T>> {
  static constexpr size_t kMinBytes = 1;
  static void Write(BinaryWriter& out, const std::vector<T>& v) {
    out.VarU64(v.size());
    for (const T& e : v) TypeSerializer<T>::Write(out, e);
  }
  static bool Read(BinaryReader& in, std::vector<T>* v) {
    uint64_t n = in.Count(std::max<size_t>(1, TypeSerializer<T>::kMinBytes));
    if (!in.ok()) return false;
    v->clear();
    v->reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      T e{};
      if (!TypeSerializer<T>::Read(in, &e)) return false;
      v->push_back(std::move(e));
    }
    return true;
  }
};

template <typename K, typename V, typename H, typename E, typename A>
struct TypeSerializer<absl::flat_hash_map<K, V, H, E, A>> {
  using Map = absl::flat_hash_map<K, V, H, E, A>;
  static constexpr size_t kMinBytes = 1;
  static void Write(BinaryWriter& out, const Map& m) {
    std::vector<const typename Map::value_type*> sorted;
    sorted.reserve(m.size());
    for (const auto& e : m) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    out.VarU64(sorted.size());
    for (const auto* e : sorted) {
      TypeSerializer<K>::Write(out, e->first);
      TypeSerializer<V>::Write(out, e->second);
    }
  }
  // Fails on a repeated key (a map never writes one).
  static bool Read(BinaryReader& in, Map* m) {
    constexpr size_t kEntry = TypeSerializer<K>::kMinBytes + TypeSerializer<V>::kMinBytes;
    uint64_t n = in.Count(std::max<size_t>(1, kEntry));
    if (!in.ok()) return false;
    m->clear();
    m->reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      K k{};
      V v{};
      if (!TypeSerializer<K>::Read(in, &k) || !TypeSerializer<V>::Read(in, &v)) return false;
      if (!m->emplace(std::move(k), std::move(v)).second) return false;
    }
    return true;
  }
};

// ---- user structs ----

namespace internal {
template <typename T>
constexpr size_t SelfSerializableMinBytes() {
  if constexpr (requires { T::kMinSerializedBytes; }) {
    return T::kMinSerializedBytes;
  } else {
    return 1;
  }
}
}  // namespace internal

template <typename T>
struct TypeSerializer<T, std::enable_if_t<SelfSerializable<T>>> {
  static constexpr size_t kMinBytes = internal::SelfSerializableMinBytes<T>();
  static void Write(BinaryWriter& out, const T& v) { v.Write(out); }
  static bool Read(BinaryReader& in, T* v) { return v->Read(in) && in.ok(); }
};

}  // namespace keyflow
