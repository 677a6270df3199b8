// TypeOps: everything a keyed state backend needs to know about a user's state type T, as a
// table of plain function pointers that the user's own translation unit instantiates
// (TypeOpsOf<T>()). It is how values cross the boundary between a job library (which knows T
// but contains no backend code) and the runtime's backends (which contain no user types): the
// backends store and move values as `void*` + TypeOps.
//
//   const TypeOps& ops = TypeOpsOf<CountWindow>();
//   ops.write(out, &window);            // TypeSerializer<CountWindow>::Write
//
// Backend-neutral: the heap backend uses the object operations (size, alignment, construct,
// copy, move, destroy) to keep objects in memory, and the serializer only for snapshots; a
// serialising backend (RocksDB) needs exactly `write`/`read`. `type_name` is the readable name
// recorded in snapshots ("long", "std::string", "CountWindow") so that a job upgrade that changes
// a state's type is refused by name.
//
// Threading: immutable tables; use from any thread.
#pragma once

#include <cstddef>
#include <new>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "common/binary_io.h"
#include "state/type_serializer.h"

namespace keyflow {

// A readable C++ name of a type, for error messages and snapshots (state_descriptor.cc): the
// demangled name without "keyflow::" and "(anonymous namespace)::" qualifiers, so that it does
// not change when a job moves into a library or namespace: "long", "std::string", "CountWindow".
std::string TypeNameOf(const std::type_info& type);

// The name a state type is recorded under in snapshots (and shown in errors): T::kStateTypeName
// if T declares one (`static constexpr std::string_view kStateTypeName = "Session";`, which keeps
// checkpoints restorable when the C++ type is renamed), else TypeNameOf(typeid(T)).
template <typename T>
std::string StateTypeName() {
  if constexpr (requires { T::kStateTypeName; }) {
    return std::string(T::kStateTypeName);
  } else {
    return TypeNameOf(typeid(T));
  }
}

struct TypeOps {
  size_t size;
  size_t alignment;
  // memcpy copies a value, and destroying one is a no-op (backends may keep such values inline).
  bool trivially_copyable;
  // The fewest bytes `write` produces (bounds counts read from untrusted bytes).
  size_t min_serialized_bytes;

  void (*construct)(void* at);  // T() at `at`
  void (*copy_construct)(void* at, const void* from);
  void (*move_construct)(void* at, void* from);
  void (*move_assign)(void* to, void* from);
  void (*destroy)(void* value);
  // TypeSerializer<T>; read returns false for truncated or malformed bytes.
  void (*write)(BinaryWriter& out, const void* value);
  bool (*read)(BinaryReader& in, void* value);
  // For containers (std::vector, maps): true if the value holds no element. nullptr otherwise.
  bool (*empty)(const void* value);
  // StateTypeName<T>().
  std::string (*type_name)();
};

namespace internal {

template <typename T>
struct TypeOpsFor {
  static void Construct(void* at) { ::new (at) T(); }
  static void CopyConstruct(void* at, const void* from) {
    ::new (at) T(*static_cast<const T*>(from));
  }
  static void MoveConstruct(void* at, void* from) {
    ::new (at) T(std::move(*static_cast<T*>(from)));
  }
  static void MoveAssign(void* to, void* from) {
    *static_cast<T*>(to) = std::move(*static_cast<T*>(from));
  }
  static void Destroy(void* value) { static_cast<T*>(value)->~T(); }
  static void Write(BinaryWriter& out, const void* value) {
    TypeSerializer<T>::Write(out, *static_cast<const T*>(value));
  }
  static bool Read(BinaryReader& in, void* value) {
    return TypeSerializer<T>::Read(in, static_cast<T*>(value));
  }
  static bool Empty(const void* value) requires requires(const T& v) { v.empty(); }
  { return static_cast<const T*>(value)->empty(); }
  static std::string Name() { return StateTypeName<T>(); }

  static constexpr bool kHasEmpty = requires(const T& v) {
    { v.empty() } -> std::convertible_to<bool>;
  };
  static constexpr bool (*EmptyFn())(const void*) {
    if constexpr (kHasEmpty) {
      return &Empty;
    } else {
      return nullptr;
    }
  }
  static constexpr TypeOps kOps = {
      sizeof(T),
      alignof(T),
      std::is_trivially_copyable_v<T>&& std::is_trivially_destructible_v<T>,
      TypeSerializer<T>::kMinBytes,
      &Construct,
      &CopyConstruct,
      &MoveConstruct,
      &MoveAssign,
      &Destroy,
      &Write,
      &Read,
      EmptyFn(),
      &Name,
  };
};

}  // namespace internal

// The TypeOps of T. T needs a TypeSerializer (state/type_serializer.h) and a default
// constructor. The reference is valid for the program's lifetime.
template <typename T>
const TypeOps& TypeOpsOf() {
  static_assert(Serializable<T>, "a state type needs a TypeSerializer<T>");
  static_assert(std::is_default_constructible_v<T>, "a state type must be default-constructible");
  return internal::TypeOpsFor<T>::kOps;
}

}  // namespace keyflow
