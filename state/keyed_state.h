// The keyed state handles user code sees (Flink's ValueState, ListState, MapState,
// ReducingState, AggregatingState), independent of the backend that stores the state.
//
//   KF_ASSIGN_OR_RETURN(ValueState<int64_t>* count,
//                    runtime.GetState(ValueStateDescriptor<int64_t>("count", 0)));
//   count->Update(*count->Value() + 1);            // the current key's value
//
// A handle is registered through a KeyedStateBackend (state/keyed_state_backend.h; user code
// goes through RuntimeContext) and owned by it: the pointer stays valid for the backend's
// lifetime. Every call acts on the key context's current key (set by the runtime before each
// element and timer) and the handle's namespace (kVoidNamespace until SetCurrentNamespace). Using
// a handle while there is no current key is a bug and aborts.
//
// Across the job-library boundary: the handles are thin inline templates over one non-template
// backend interface, InternalKeyedState, that passes values as `void*` of the state's stored
// type (T for value and reducing state, std::vector<T> for lists, absl::flat_hash_map<UK, UV>
// for maps, ACC for aggregating state) described by a TypeOps table (state/type_ops.h). Code that
// manipulates a T (appending to a list, reducing, aggregating) runs in the user's translation
// unit; the backend only finds, inserts, replaces and erases values. A job library therefore
// contains no backend code, and any backend (heap, RocksDB) implements InternalKeyedState.
//
// Threading: task thread only.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "state/aggregate_function.h"
#include "state/namespace.h"
#include "state/state_descriptor.h"

namespace keyflow {

// What a backend implements for one registered state. Values are `void*` to objects of the
// state's stored type (see the file comment). Pointers returned by Get() are valid until the next
// write to the state (or, for a serialising backend, the next call on it).
class InternalKeyedState {
 public:
  virtual ~InternalKeyedState() = default;

  virtual const std::string& name() const = 0;
  virtual void SetCurrentNamespace(Namespace ns) = 0;
  virtual Namespace current_namespace() const = 0;

  // The value of the current key and namespace, or nullptr if there is none.
  virtual const void* Get() const = 0;
  // Replaces the value of the current key and namespace by *value (moved from).
  virtual void Update(void* value) = 0;
  // Read-modify-write of the value of the current key and namespace: calls fn(value, created)
  // on it. If there is none: with `create_if_absent` on a default-constructed value that is
  // stored (created = true), else fn is not called. When fn returns false the entry is removed
  // (an emptied list or map). fn must not use this state.
  using ModifyFn = absl::FunctionRef<bool(void* value, bool created)>;
  virtual void Modify(bool create_if_absent, ModifyFn fn) = 0;
  // Removes the value of the current key and namespace.
  virtual void Clear() = 0;
};

// What every handle shares: its name and namespace. Owned by the backend.
class KeyedStateHandle {
 public:
  virtual ~KeyedStateHandle() = default;
  KeyedStateHandle(const KeyedStateHandle&) = delete;
  KeyedStateHandle& operator=(const KeyedStateHandle&) = delete;

  // Later calls act on namespace `ns` (e.g. the window being processed).
  void SetCurrentNamespace(Namespace ns) { impl_->SetCurrentNamespace(ns); }
  Namespace current_namespace() const { return impl_->current_namespace(); }
  // The descriptor's name.
  const std::string& name() const { return impl_->name(); }

 protected:
  explicit KeyedStateHandle(InternalKeyedState* impl) : impl_(impl) {}
  InternalKeyedState* const impl_;
};

// One value per (key, namespace); Value() is the descriptor's default (nullopt if it has none)
// when there is no value. Default values are never stored.
template <typename T>
class ValueState final : public KeyedStateHandle {
 public:
  // Built by KeyedStateBackend::GetState.
  ValueState(InternalKeyedState* impl, std::optional<T> default_value)
      : KeyedStateHandle(impl), default_(std::move(default_value)) {}

  std::optional<T> Value() const {
    const void* v = impl_->Get();
    if (v == nullptr) return default_;
    return *static_cast<const T*>(v);
  }
  // Sets the value; a later Value() returns it.
  void Update(T value) { impl_->Update(&value); }
  // Removes the value; a later Value() returns the default.
  void Clear() { impl_->Clear(); }

 private:
  const std::optional<T> default_;
};

// A list per (key, namespace). An empty list is never stored: Get() of a key without elements
// is an empty span.
template <typename T>
class ListState final : public KeyedStateHandle {
 public:
  explicit ListState(InternalKeyedState* impl) : KeyedStateHandle(impl) {}

  // The elements in insertion order; valid until the next write to this state.
  std::span<const T> Get() const {
    const auto* list = static_cast<const std::vector<T>*>(impl_->Get());
    if (list == nullptr) return {};
    return std::span<const T>(*list);
  }
  // Appends one element.
  void Add(T value) {
    impl_->Modify(true, [&](void* list, bool) {
      static_cast<std::vector<T>*>(list)->push_back(std::move(value));
      return true;
    });
  }
  // Appends every element of `values` (nothing if empty).
  void AddAll(std::span<const T> values) {
    if (values.empty()) return;
    impl_->Modify(true, [&](void* list, bool) {
      auto* l = static_cast<std::vector<T>*>(list);
      l->insert(l->end(), values.begin(), values.end());
      return true;
    });
  }
  // Replaces the list by `values`; an empty `values` clears it.
  void Update(std::vector<T> values) {
    if (values.empty()) {
      impl_->Clear();
    } else {
      impl_->Update(&values);
    }
  }
  void Clear() { impl_->Clear(); }
};

// A map per (key, namespace). An empty map is never stored: removing the last entry removes it.
template <typename UK, typename UV>
class MapState final : public KeyedStateHandle {
 public:
  using UserMap = absl::flat_hash_map<UK, UV>;

  explicit MapState(InternalKeyedState* impl) : KeyedStateHandle(impl) {}

  // The value under `user_key`, or nullptr; valid until the next write to this state.
  const UV* Get(const UK& user_key) const {
    const UserMap* m = Find();
    if (m == nullptr) return nullptr;
    auto it = m->find(user_key);
    return it == m->end() ? nullptr : &it->second;
  }
  bool Contains(const UK& user_key) const { return Get(user_key) != nullptr; }
  bool IsEmpty() const { return Find() == nullptr; }
  // All entries (an empty map if none), in unspecified order; valid until the next write.
  const UserMap& Entries() const {
    static const UserMap kEmpty;
    const UserMap* m = Find();
    return m == nullptr ? kEmpty : *m;
  }

  // Inserts or overwrites the value under `user_key`.
  void Put(UK user_key, UV value) {
    impl_->Modify(true, [&](void* m, bool) {
      static_cast<UserMap*>(m)->insert_or_assign(std::move(user_key), std::move(value));
      return true;
    });
  }
  // Removes `user_key` (nothing if absent).
  void Remove(const UK& user_key) {
    impl_->Modify(false, [&](void* m, bool) {
      auto* map = static_cast<UserMap*>(m);
      map->erase(user_key);
      return !map->empty();
    });
  }
  void Clear() { impl_->Clear(); }

 private:
  const UserMap* Find() const { return static_cast<const UserMap*>(impl_->Get()); }
};

// One value per (key, namespace) that every Add folds in with the descriptor's reduce function.
template <typename T>
class ReducingState final : public KeyedStateHandle {
 public:
  using ReduceFunction = typename ReducingStateDescriptor<T>::ReduceFunction;
  ReducingState(InternalKeyedState* impl, ReduceFunction reduce)
      : KeyedStateHandle(impl), reduce_(std::move(reduce)) {}

  // The reduced value; nullopt if nothing was added.
  std::optional<T> Get() const {
    const void* v = impl_->Get();
    if (v == nullptr) return std::nullopt;
    return *static_cast<const T*>(v);
  }
  // The first value is stored as is; later ones become reduce(stored, value).
  void Add(T value) {
    impl_->Modify(true, [&](void* stored, bool created) {
      T* s = static_cast<T*>(stored);
      *s = created ? std::move(value) : reduce_(*s, value);
      return true;
    });
  }
  void Clear() { impl_->Clear(); }

 private:
  const ReduceFunction reduce_;
};

// An accumulator per (key, namespace) that every Add folds an input into; Get returns the
// AggregateFunction's result. The accumulator type is hidden from users of the handle, so the
// calls are virtual (AggregatingStateImpl implements them).
template <typename IN, typename OUT>
class AggregatingState : public KeyedStateHandle {
 public:
  // GetResult(accumulator); nullopt if nothing was added.
  virtual std::optional<OUT> Get() const = 0;
  // Folds `value` into the accumulator, creating it with CreateAccumulator() first if needed.
  virtual void Add(const IN& value) = 0;
  // Drops the accumulator.
  void Clear() { impl_->Clear(); }

 protected:
  using KeyedStateHandle::KeyedStateHandle;
};

template <typename IN, typename ACC, typename OUT>
class AggregatingStateImpl final : public AggregatingState<IN, OUT> {
 public:
  using Function = AggregateFunction<IN, ACC, OUT>;
  AggregatingStateImpl(InternalKeyedState* impl, std::shared_ptr<const Function> function)
      : AggregatingState<IN, OUT>(impl), function_(std::move(function)) {}

  std::optional<OUT> Get() const override {
    const void* acc = this->impl_->Get();
    if (acc == nullptr) return std::nullopt;
    return function_->GetResult(*static_cast<const ACC*>(acc));
  }
  void Add(const IN& value) override {
    this->impl_->Modify(true, [&](void* stored, bool created) {
      ACC* acc = static_cast<ACC*>(stored);
      if (created) *acc = function_->CreateAccumulator();
      function_->Add(value, *acc);
      return true;
    });
  }

 private:
  const std::shared_ptr<const Function> function_;
};

}  // namespace keyflow
