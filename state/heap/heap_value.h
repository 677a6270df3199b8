// How the heap backend stores a value whose type it knows only through its TypeOps
// (state/type_ops.h): the `V` of StateMap<V> / StateTable<V>.
//
//   InlineValue<N>  the object itself, in N bytes of the hash-table slot, for trivially copyable
//                   types of at most N bytes and alignment <= 8 (int64_t in a 32-byte slot as
//                   before; count-window's 24-byte struct in a 48-byte slot): no indirection,
//                   copies are memcpy.
//   InlineObject<N> the object itself in N bytes of the slot, with its TypeOps pointer, for
//                   other types of at most N bytes (std::vector, absl::flat_hash_map,
//                   std::string): moved, copied and destroyed through the TypeOps, so a list or
//                   map costs no more pointer chasing than when the heap knew the type.
//   BoxedValue      a pointer to a heap object built and destroyed through its TypeOps, for
//                   larger types.
//
// Both have the same interface: constructed from (ops) = T(), or from (ops, void* from) = T moved
// from *from; get() is the T*; Assign(ops, from) moves *from into it. Value types; not
// synchronised.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <utility>

#include "state/type_ops.h"

namespace keyflow {

template <size_t N>
struct InlineValue {
  static constexpr size_t kCapacity = N;
  // Whether values of `ops` fit.
  static bool Fits(const TypeOps& ops) {
    return ops.trivially_copyable && ops.size <= N && ops.alignment <= alignof(InlineValue);
  }

  explicit InlineValue(const TypeOps& ops) { ops.construct(bytes); }
  InlineValue(const TypeOps& ops, void* from) { Copy(ops, from); }

  void* get() { return bytes; }
  const void* get() const { return bytes; }
  void Assign(const TypeOps& ops, void* from) { Copy(ops, from); }

  // A type of exactly N bytes (the common case: int64_t, a struct of three int64_t) is copied
  // with a fixed-size memcpy the compiler inlines.
  void Copy(const TypeOps& ops, const void* from) {
    if (ops.size == N) [[likely]] {
      std::memcpy(bytes, from, N);
    } else {
      std::memcpy(bytes, from, ops.size);
    }
  }

  alignas(8) unsigned char bytes[N];
};

template <size_t N>
class InlineObject {
 public:
  static constexpr size_t kCapacity = N;
  // Whether values of `ops` fit (any type whose moves do not throw: std::vector, flat maps and
  // std::string do not).
  static bool Fits(const TypeOps& ops) { return ops.size <= N && ops.alignment <= 8; }

  explicit InlineObject(const TypeOps& ops) : ops_(&ops) { ops.construct(bytes_); }
  InlineObject(const TypeOps& ops, void* from) : ops_(&ops) { ops.move_construct(bytes_, from); }
  InlineObject(const InlineObject& o) : ops_(o.ops_) { ops_->copy_construct(bytes_, o.bytes_); }
  InlineObject(InlineObject&& o) noexcept : ops_(o.ops_) { ops_->move_construct(bytes_, o.bytes_); }
  InlineObject& operator=(InlineObject&& o) noexcept {
    if (this != &o) {
      ops_->destroy(bytes_);
      ops_ = o.ops_;
      ops_->move_construct(bytes_, o.bytes_);
    }
    return *this;
  }
  InlineObject& operator=(const InlineObject&) = delete;
  ~InlineObject() { ops_->destroy(bytes_); }

  void* get() { return bytes_; }
  const void* get() const { return bytes_; }
  void Assign(const TypeOps& ops, void* from) { ops.move_assign(bytes_, from); }

 private:
  const TypeOps* ops_;
  alignas(8) unsigned char bytes_[N];
};

class BoxedValue {
 public:
  explicit BoxedValue(const TypeOps& ops) : ops_(&ops), object_(Allocate(ops)) {
    ops.construct(object_);
  }
  BoxedValue(const TypeOps& ops, void* from) : ops_(&ops), object_(Allocate(ops)) {
    ops.move_construct(object_, from);
  }
  BoxedValue(const BoxedValue& o) : ops_(o.ops_), object_(Allocate(*o.ops_)) {
    ops_->copy_construct(object_, o.object_);
  }
  BoxedValue(BoxedValue&& o) noexcept : ops_(o.ops_), object_(std::exchange(o.object_, nullptr)) {}
  BoxedValue& operator=(BoxedValue&& o) noexcept {
    if (this != &o) {
      Free();
      ops_ = o.ops_;
      object_ = std::exchange(o.object_, nullptr);
    }
    return *this;
  }
  BoxedValue& operator=(const BoxedValue&) = delete;
  ~BoxedValue() { Free(); }

  void* get() { return object_; }
  const void* get() const { return object_; }
  void Assign(const TypeOps& ops, void* from) { ops.move_assign(object_, from); }

 private:
  static void* Allocate(const TypeOps& ops) {
    return ::operator new(ops.size, std::align_val_t(ops.alignment));
  }
  void Free() {
    if (object_ == nullptr) return;
    ops_->destroy(object_);
    ::operator delete(object_, std::align_val_t(ops_->alignment));
    object_ = nullptr;
  }

  const TypeOps* ops_;
  void* object_;
};

}  // namespace keyflow
