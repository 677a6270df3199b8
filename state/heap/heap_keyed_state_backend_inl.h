// Template definitions of HeapKeyedStateBackend: registration and every write to keyed state.
// Included at the end of heap_keyed_state_backend.h; do not include directly.
//
// Every function below that changes state gets the key group's table from
// HeapKeyedStateBackend::MutableTable() — keep it that way: the copy-on-write of asynchronous
// snapshots relies on it.
#pragma once

#include <utility>
#include <vector>

#include "state/heap/heap_keyed_state_backend.h"

namespace keyflow {

// ---- registration ----

template <typename Handle>
Handle* HeapKeyedStateBackend::Register(std::unique_ptr<StateTableBase> table,
                                        std::unique_ptr<Handle> handle,
                                        const std::type_info& signature,
                                        std::string type_description) {
  Handle* result = handle.get();
  tables_.push_back(table.get());
  std::string name = table->name();
  states_.emplace(std::move(name),
                  RegisteredState{std::type_index(signature), std::move(type_description),
                                  std::move(table), std::move(handle)});
  return result;
}

template <typename T>
Result<ValueState<T>*> HeapKeyedStateBackend::GetState(const ValueStateDescriptor<T>& d) {
  using D = ValueStateDescriptor<T>;
  ASSIGN_OR_RETURN(RegisteredState * existing,
                   FindRegistered(d.name(), typeid(D), &D::TypeDescription));
  if (existing != nullptr) return static_cast<ValueState<T>*>(existing->handle.get());
  auto table = std::make_unique<StateTable<T>>(d.name(), D::kKind, range().size());
  std::unique_ptr<ValueState<T>> handle(
      new ValueState<T>(this, &key_context_, table.get(), d.default_value()));
  return Register(std::move(table), std::move(handle), typeid(D), D::TypeDescription());
}

template <typename T>
Result<ListState<T>*> HeapKeyedStateBackend::GetListState(const ListStateDescriptor<T>& d) {
  using D = ListStateDescriptor<T>;
  ASSIGN_OR_RETURN(RegisteredState * existing,
                   FindRegistered(d.name(), typeid(D), &D::TypeDescription));
  if (existing != nullptr) return static_cast<ListState<T>*>(existing->handle.get());
  auto table = std::make_unique<StateTable<std::vector<T>>>(d.name(), D::kKind, range().size());
  std::unique_ptr<ListState<T>> handle(new ListState<T>(this, &key_context_, table.get()));
  return Register(std::move(table), std::move(handle), typeid(D), D::TypeDescription());
}

template <typename UK, typename UV>
Result<MapState<UK, UV>*> HeapKeyedStateBackend::GetMapState(const MapStateDescriptor<UK, UV>& d) {
  using D = MapStateDescriptor<UK, UV>;
  using UserMap = typename MapState<UK, UV>::UserMap;
  ASSIGN_OR_RETURN(RegisteredState * existing,
                   FindRegistered(d.name(), typeid(D), &D::TypeDescription));
  if (existing != nullptr) return static_cast<MapState<UK, UV>*>(existing->handle.get());
  auto table = std::make_unique<StateTable<UserMap>>(d.name(), D::kKind, range().size());
  std::unique_ptr<MapState<UK, UV>> handle(new MapState<UK, UV>(this, &key_context_, table.get()));
  return Register(std::move(table), std::move(handle), typeid(D), D::TypeDescription());
}

template <typename T>
Result<ReducingState<T>*> HeapKeyedStateBackend::GetReducingState(
    const ReducingStateDescriptor<T>& d) {
  using D = ReducingStateDescriptor<T>;
  ASSIGN_OR_RETURN(RegisteredState * existing,
                   FindRegistered(d.name(), typeid(D), &D::TypeDescription));
  if (existing != nullptr) return static_cast<ReducingState<T>*>(existing->handle.get());
  if (!d.reduce_function()) {
    return InvalidArgument("ReducingState '" + d.name() + "' needs a reduce function");
  }
  auto table = std::make_unique<StateTable<T>>(d.name(), D::kKind, range().size());
  std::unique_ptr<ReducingState<T>> handle(
      new ReducingState<T>(this, &key_context_, table.get(), d.reduce_function()));
  return Register(std::move(table), std::move(handle), typeid(D), D::TypeDescription());
}

template <typename IN, typename ACC, typename OUT>
Result<AggregatingState<IN, OUT>*> HeapKeyedStateBackend::GetAggregatingState(
    const AggregatingStateDescriptor<IN, ACC, OUT>& d) {
  using D = AggregatingStateDescriptor<IN, ACC, OUT>;
  using Handle = HeapAggregatingState<IN, ACC, OUT>;
  ASSIGN_OR_RETURN(RegisteredState * existing,
                   FindRegistered(d.name(), typeid(D), &D::TypeDescription));
  if (existing != nullptr) return static_cast<Handle*>(existing->handle.get());
  if (d.aggregate_function() == nullptr) {
    return InvalidArgument("AggregatingState '" + d.name() + "' needs an aggregate function");
  }
  auto table = std::make_unique<StateTable<ACC>>(d.name(), D::kKind, range().size());
  std::unique_ptr<Handle> handle(
      new Handle(this, &key_context_, table.get(), d.aggregate_function()));
  AggregatingState<IN, OUT>* result =
      Register(std::move(table), std::move(handle), typeid(D), D::TypeDescription());
  return result;
}

// ---- table-wide writes (ClearAll, RestoreKeyGroup) ----

template <typename V>
void StateTable<V>::ClearKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index) {
  backend.MutableTable(*this, kg_index).Clear();
}

template <typename V>
void StateTable<V>::InstallKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index,
                                    StagedKeyGroup& staged) {
  backend.MutableTable(*this, kg_index) = std::move(static_cast<Staged&>(staged).table);
}

// ---- handle writes ----
// Each write gets the key group's table from MutableTable(), then finds the entry with the
// hint of the last read (FindForWrite) and inserts with InsertAbsent when it is missing.

template <typename T>
void ValueState<T>::Update(T value) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  if (auto* entry = FindForWrite(table, lookup)) {
    entry->value = std::move(value);
  } else {
    last_entry_ = table.InsertAbsent(lookup, std::move(value));
  }
}

template <typename T>
void ValueState<T>::Clear() {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  if (auto* entry = FindForWrite(table, Lookup())) table.Erase(entry);
}

template <typename T>
void ListState<T>::Add(T value) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  auto* entry = FindForWrite(table, lookup);
  if (entry == nullptr) last_entry_ = entry = table.InsertAbsent(lookup);
  entry->value.push_back(std::move(value));
}

template <typename T>
void ListState<T>::AddAll(std::span<const T> values) {
  if (values.empty()) return;
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  auto* entry = FindForWrite(table, lookup);
  if (entry == nullptr) last_entry_ = entry = table.InsertAbsent(lookup);
  entry->value.insert(entry->value.end(), values.begin(), values.end());
}

template <typename T>
void ListState<T>::Update(std::vector<T> values) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  auto* entry = FindForWrite(table, lookup);
  if (values.empty()) {
    if (entry != nullptr) table.Erase(entry);
  } else if (entry != nullptr) {
    entry->value = std::move(values);
  } else {
    last_entry_ = table.InsertAbsent(lookup, std::move(values));
  }
}

template <typename T>
void ListState<T>::Clear() {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  if (auto* entry = FindForWrite(table, Lookup())) table.Erase(entry);
}

template <typename UK, typename UV>
void MapState<UK, UV>::Put(UK user_key, UV value) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  auto* entry = FindForWrite(table, lookup);
  if (entry == nullptr) last_entry_ = entry = table.InsertAbsent(lookup);
  entry->value.insert_or_assign(std::move(user_key), std::move(value));
}

template <typename UK, typename UV>
void MapState<UK, UV>::Remove(const UK& user_key) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  auto* entry = FindForWrite(table, Lookup());
  if (entry == nullptr) return;
  entry->value.erase(user_key);
  if (entry->value.empty()) table.Erase(entry);
}

template <typename UK, typename UV>
void MapState<UK, UV>::Clear() {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  if (auto* entry = FindForWrite(table, Lookup())) table.Erase(entry);
}

template <typename T>
void ReducingState<T>::Add(T value) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  if (auto* entry = FindForWrite(table, lookup)) {
    entry->value = reduce_(entry->value, value);
  } else {
    last_entry_ = table.InsertAbsent(lookup, std::move(value));
  }
}

template <typename T>
void ReducingState<T>::Clear() {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  if (auto* entry = FindForWrite(table, Lookup())) table.Erase(entry);
}

template <typename IN, typename ACC, typename OUT>
void HeapAggregatingState<IN, ACC, OUT>::Add(const IN& value) {
  auto& table = this->backend_->MutableTable(*table_, this->KeyGroupIndex());
  const StateEntryLookup lookup = this->Lookup();
  auto* entry = this->FindForWrite(table, lookup);
  if (entry == nullptr) {
    this->last_entry_ = entry = table.InsertAbsent(lookup, function_->CreateAccumulator());
  }
  function_->Add(value, entry->value);
}

template <typename IN, typename ACC, typename OUT>
void HeapAggregatingState<IN, ACC, OUT>::Clear() {
  auto& table = this->backend_->MutableTable(*table_, this->KeyGroupIndex());
  if (auto* entry = this->FindForWrite(table, this->Lookup())) table.Erase(entry);
}

}  // namespace keyflow
