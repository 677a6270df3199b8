// State descriptors: the name, kind and types of one keyed state, as an operator declares it
// (Flink's StateDescriptor family). A backend hands out one state handle per descriptor name.
//
//   ValueStateDescriptor<int64_t> count("count", 0);            // with a default value
//   ListStateDescriptor<Event> buffer("buffer");
//   MapStateDescriptor<std::string, int64_t> per_page("per-page");
//   ReducingStateDescriptor<int64_t> sum("sum", [](const int64_t& a, const int64_t& b) {
//     return a + b; });
//   AggregatingStateDescriptor<int64_t, AvgAcc, double> avg("avg", std::make_shared<Avg>());
//
// Names are unique per backend: registering a name again with another kind or other types is
// an error, registering the same descriptor again returns the same state (the first
// registration's default value / function is kept). Every value type needs a
// TypeSerializer (state/type_serializer.h); map keys also need operator< (snapshots sort them)
// and absl hashing.
//
// Threading: descriptors are plain values; build them anywhere, register on the task thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "state/aggregate_function.h"
#include "state/type_ops.h"
#include "state/type_serializer.h"

namespace keyflow {

// The kind of a keyed state. The numeric values are written into snapshots: never renumber.
enum class StateKind : uint8_t {
  kValue = 0,
  kList = 1,
  kMap = 2,
  kReducing = 3,
  kAggregating = 4,
};
inline constexpr uint8_t kMaxStateKind = 4;

// "ValueState", "ListState", "MapState", "ReducingState", "AggregatingState".
std::string_view StateKindName(StateKind kind);

template <typename T>
class ValueStateDescriptor {
 public:
  static_assert(Serializable<T>, "ValueState<T> needs a TypeSerializer<T>");
  static constexpr StateKind kKind = StateKind::kValue;

  // Value() of a key without a value is nullopt.
  explicit ValueStateDescriptor(std::string name) : name_(std::move(name)) {}
  // Value() of a key without a value is `default_value`.
  ValueStateDescriptor(std::string name, T default_value)
      : name_(std::move(name)), default_(std::move(default_value)) {}

  const std::string& name() const { return name_; }
  const std::optional<T>& default_value() const { return default_; }
  // "ValueState<long>"
  static std::string TypeDescription() { return "ValueState<" + StateTypeName<T>() + ">"; }

 private:
  std::string name_;
  std::optional<T> default_;
};

template <typename T>
class ListStateDescriptor {
 public:
  static_assert(Serializable<T>, "ListState<T> needs a TypeSerializer<T>");
  static_assert(!std::is_same_v<T, bool>, "ListState<bool> cannot hand out a span; use uint8_t");
  static constexpr StateKind kKind = StateKind::kList;

  explicit ListStateDescriptor(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  static std::string TypeDescription() { return "ListState<" + StateTypeName<T>() + ">"; }

 private:
  std::string name_;
};

template <typename UK, typename UV>
class MapStateDescriptor {
 public:
  static_assert(Serializable<UK> && Serializable<UV>, "MapState<UK, UV> needs TypeSerializers");
  static constexpr StateKind kKind = StateKind::kMap;

  explicit MapStateDescriptor(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  static std::string TypeDescription() {
    return "MapState<" + StateTypeName<UK>() + ", " + StateTypeName<UV>() + ">";
  }

 private:
  std::string name_;
};

template <typename T>
class ReducingStateDescriptor {
 public:
  static_assert(Serializable<T>, "ReducingState<T> needs a TypeSerializer<T>");
  static constexpr StateKind kKind = StateKind::kReducing;
  // Combines the stored value (first) with an added one (second). Must be deterministic.
  using ReduceFunction = std::function<T(const T&, const T&)>;

  // Precondition checked at registration: `reduce` is not empty.
  ReducingStateDescriptor(std::string name, ReduceFunction reduce)
      : name_(std::move(name)), reduce_(std::move(reduce)) {}
  const std::string& name() const { return name_; }
  const ReduceFunction& reduce_function() const { return reduce_; }
  static std::string TypeDescription() { return "ReducingState<" + StateTypeName<T>() + ">"; }

 private:
  std::string name_;
  ReduceFunction reduce_;
};

template <typename IN, typename ACC, typename OUT>
class AggregatingStateDescriptor {
 public:
  static_assert(Serializable<ACC>, "AggregatingState needs a TypeSerializer<ACC>");
  static constexpr StateKind kKind = StateKind::kAggregating;
  using Function = AggregateFunction<IN, ACC, OUT>;

  // Precondition checked at registration: `function` is not null.
  AggregatingStateDescriptor(std::string name, std::shared_ptr<const Function> function)
      : name_(std::move(name)), function_(std::move(function)) {}
  const std::string& name() const { return name_; }
  const std::shared_ptr<const Function>& aggregate_function() const { return function_; }
  static std::string TypeDescription() {
    return "AggregatingState<" + StateTypeName<IN>() + ", " + StateTypeName<ACC>() + ", " +
           StateTypeName<OUT>() + ">";
  }

 private:
  std::string name_;
  std::shared_ptr<const Function> function_;
};

}  // namespace keyflow
