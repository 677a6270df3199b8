// AggregateFunction<IN, ACC, OUT>: the incremental aggregation behind an AggregatingState
// (Flink's AggregateFunction). The state keeps one accumulator per (key, namespace); each
// Add folds one input into it and Get turns it into a result.
//
// Implementations must be deterministic and must not touch keyed state. The accumulator is
// snapshotted with TypeSerializer<ACC>. Threading: called on the task thread only; an
// instance may be shared by several descriptors, so the methods are const.
#pragma once

#include <optional>

namespace keyflow {

template <typename IN, typename ACC, typename OUT>
class AggregateFunction {
 public:
  virtual ~AggregateFunction() = default;

  // A fresh, empty accumulator (called on the first Add for a key and namespace).
  virtual ACC CreateAccumulator() const = 0;
  // Folds `value` into `accumulator` in place.
  virtual void Add(const IN& value, ACC& accumulator) const = 0;
  virtual OUT GetResult(const ACC& accumulator) const = 0;
  // Merges two accumulators (needed only for merging windows). Optional: the default says
  // "not supported" by returning nullopt.
  virtual std::optional<ACC> Merge(const ACC& /*a*/, const ACC& /*b*/) const {
    return std::nullopt;
  }
};

}  // namespace keyflow
