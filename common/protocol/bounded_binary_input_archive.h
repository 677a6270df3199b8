// BoundedBinaryInputArchive: a cereal input archive for bytes that come from outside the
// process (control messages; the JobSpec blob of checkpoint metadata and job records). It
// reads exactly what cereal::BinaryOutputArchive writes, from a string_view (no stream, no
// copy), and never trusts a length field:
//   * a read past the end throws cereal::Exception;
//   * a container's element count must fit in the bytes that remain (every element takes at
//     least one byte) — checked before anything is allocated;
//   * strings and vectors of numbers are allocated only once their bytes are known to be there;
//     vectors of other types grow as their elements decode, so memory stays proportional to the
//     bytes actually read, never to a claimed count;
//   * a bool must be 0 or 1 (cereal's own archive copies any byte into a bool: undefined
//     behaviour).
// Callers catch cereal::Exception at their module edge and turn it into a Status (see
// DecodeControlMessage). Threading: one archive per thread, like any cereal archive.
#pragma once

#include <cereal/archives/binary.hpp>
#include <cereal/cereal.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace keyflow {

class BoundedBinaryInputArchive
    : public cereal::InputArchive<BoundedBinaryInputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit BoundedBinaryInputArchive(std::string_view bytes)
      : InputArchive(this), p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  // Copies the next `size` bytes into `data`; throws if fewer remain.
  void loadBinary(void* data, std::size_t size) {
    if (size > remaining()) {
      throw cereal::Exception("input ends early: " + std::to_string(size) + " bytes needed, " +
                              std::to_string(remaining()) + " left");
    }
    if (size == 0) return;  // `data` may be null (an empty vector's data())
    std::memcpy(data, p_, size);
    p_ += size;
  }

  // Throws unless `count` elements of at least `min_element_bytes` each fit in what remains.
  void CheckCount(uint64_t count, std::size_t min_element_bytes) const {
    if (count > remaining() / min_element_bytes) {
      throw cereal::Exception("a length field claims " + std::to_string(count) +
                              " elements but only " + std::to_string(remaining()) +
                              " bytes are left");
    }
  }

  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

// ---- how cereal's primitives load from it (found by argument-dependent lookup) ----

template <class T>
inline std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>
CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, T& t) {
  ar.loadBinary(&t, sizeof(t));
}

inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, bool& b) {
  uint8_t v = 0;
  ar.loadBinary(&v, 1);
  if (v > 1) throw cereal::Exception("a bool holds " + std::to_string(v) + ", not 0 or 1");
  b = v == 1;
}

template <class T>
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, cereal::SizeTag<T>& tag) {
  ar(tag.size);
  ar.CheckCount(tag.size, 1);
}

template <class T>
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, cereal::BinaryData<T>& bd) {
  ar.loadBinary(bd.data, static_cast<std::size_t>(bd.size));
}

// ---- containers whose cereal loaders allocate from the count (more specialised overloads) ----

template <class CharT, class Traits, class Alloc>
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar,
                                      std::basic_string<CharT, Traits, Alloc>& s) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  ar.CheckCount(n, sizeof(CharT));
  s.resize(static_cast<std::size_t>(n));
  ar.loadBinary(s.data(), static_cast<std::size_t>(n) * sizeof(CharT));
}

template <class T, class A>
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, std::vector<T, A>& v) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    ar.CheckCount(n, sizeof(T));
    v.resize(static_cast<std::size_t>(n));
    ar.loadBinary(v.data(), static_cast<std::size_t>(n) * sizeof(T));
  } else {
    v.clear();
    for (cereal::size_type i = 0; i < n; ++i) {
      T element{};
      ar(element);
      v.push_back(std::move(element));
    }
  }
}

template <class A>
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, std::vector<bool, A>& v) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  v.clear();
  for (cereal::size_type i = 0; i < n; ++i) {
    bool b = false;
    ar(b);
    v.push_back(b);
  }
}

}  // namespace keyflow

// Loads need the matching output archive to check save/load_minimal pairs (enums).
namespace cereal::traits::detail {
template <>
struct get_output_from_input<keyflow::BoundedBinaryInputArchive> {
  using type = cereal::BinaryOutputArchive;
};
}  // namespace cereal::traits::detail
