// AggregatingState<IN, OUT>: an accumulator per (key, namespace) that every Add folds an input
// into; Get returns the AggregateFunction's result (Flink's AggregatingState), from
// HeapKeyedStateBackend::GetAggregatingState(AggregatingStateDescriptor<IN, ACC, OUT>).
//
// The accumulator type is hidden from users of the handle, so the calls are virtual
// (HeapAggregatingState implements them; the aggregate function is a virtual call anyway).
// Include state/heap/heap_keyed_state_backend.h, which defines the writes.
// Threading: task thread only (see keyed_state_handle.h).
#pragma once

#include <memory>
#include <optional>

#include "state/aggregate_function.h"
#include "state/heap/keyed_state_handle.h"

namespace keyflow {

template <typename IN, typename OUT>
class AggregatingState : public KeyedStateHandle {
 public:
  // GetResult(accumulator) of the current key and namespace; nullopt if nothing was added.
  virtual std::optional<OUT> Get() const = 0;
  // Folds `value` into the accumulator, creating it with CreateAccumulator() first if needed.
  virtual void Add(const IN& value) = 0;
  // Drops the accumulator.
  virtual void Clear() = 0;

 protected:
  using KeyedStateHandle::KeyedStateHandle;
};

template <typename IN, typename ACC, typename OUT>
class HeapAggregatingState final : public AggregatingState<IN, OUT> {
 public:
  using Function = AggregateFunction<IN, ACC, OUT>;

  std::optional<OUT> Get() const override {
    const auto* entry = this->FindForRead(table_->KeyGroup(this->KeyGroupIndex()));
    if (entry == nullptr) return std::nullopt;
    return function_->GetResult(entry->value);
  }
  void Add(const IN& value) override;
  void Clear() override;

 private:
  friend class HeapKeyedStateBackend;
  HeapAggregatingState(HeapKeyedStateBackend* backend, const KeyContext* key_context,
                       StateTable<ACC>* table, std::shared_ptr<const Function> function)
      : AggregatingState<IN, OUT>(backend, key_context, table),
        table_(table),
        function_(std::move(function)) {}

  StateTable<ACC>* const table_;
  const std::shared_ptr<const Function> function_;
};

}  // namespace keyflow
