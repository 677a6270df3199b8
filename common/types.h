// Strong types for the IDs and times that cross module boundaries.
//
// A KeyGroupId is not a SubtaskIndex is not a CheckpointId: mixing them up fails to compile.
// `.value()` reaches the underlying integer where arithmetic is the point (range formulas,
// array indexing, serialization).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>

namespace keyflow {

template <typename Tag, typename Rep>
class StrongId {
 public:
  using rep_type = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  constexpr auto operator<=>(const StrongId&) const = default;
  friend std::ostream& operator<<(std::ostream& os, StrongId id) { return os << +id.v_; }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(v_);
  }

 private:
  Rep v_{};
};

struct KeyGroupIdTag {};
struct SubtaskIndexTag {};
struct CheckpointIdTag {};
struct WorkerIdTag {};
struct AttemptNumberTag {};

using KeyGroupId = StrongId<KeyGroupIdTag, int32_t>;        // [0, max parallelism)
using SubtaskIndex = StrongId<SubtaskIndexTag, int32_t>;    // [0, parallelism)
using CheckpointId = StrongId<CheckpointIdTag, int64_t>;    // >= 1, increasing
using WorkerId = StrongId<WorkerIdTag, int64_t>;            // assigned by the coordinator
using AttemptNumber = StrongId<AttemptNumberTag, int64_t>;  // deployment attempt of a job

// Milliseconds, as an interval.
class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration Millis(int64_t ms) { return Duration(ms); }
  static constexpr Duration Seconds(int64_t s) { return Duration(s * 1000); }
  constexpr int64_t millis() const { return ms_; }
  constexpr auto operator<=>(const Duration&) const = default;
  friend std::ostream& operator<<(std::ostream& os, Duration d) { return os << d.ms_ << "ms"; }

 private:
  constexpr explicit Duration(int64_t ms) : ms_(ms) {}
  int64_t ms_ = 0;
};

// A point in (event or processing) time: milliseconds since the epoch.
// kMin is the initial watermark (Long.MIN_VALUE in Flink), kMax the end-of-input watermark.
class Timestamp {
 public:
  constexpr Timestamp() = default;
  constexpr explicit Timestamp(int64_t ms) : ms_(ms) {}
  static constexpr Timestamp Min() { return Timestamp(std::numeric_limits<int64_t>::min()); }
  static constexpr Timestamp Max() { return Timestamp(std::numeric_limits<int64_t>::max()); }
  constexpr int64_t millis() const { return ms_; }
  constexpr auto operator<=>(const Timestamp&) const = default;

  // Saturating: adding to kMax stays kMax, subtracting from kMin stays kMin.
  friend constexpr Timestamp operator+(Timestamp t, Duration d) {
    int64_t r;
    if (__builtin_add_overflow(t.ms_, d.millis(), &r)) {
      return d.millis() > 0 ? Max() : Min();
    }
    return Timestamp(r);
  }
  friend constexpr Timestamp operator-(Timestamp t, Duration d) {
    int64_t r;
    if (__builtin_sub_overflow(t.ms_, d.millis(), &r)) {
      return d.millis() > 0 ? Min() : Max();
    }
    return Timestamp(r);
  }
  friend std::ostream& operator<<(std::ostream& os, Timestamp t) { return os << t.ms_; }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(ms_);
  }

 private:
  int64_t ms_ = 0;
};

inline constexpr Timestamp kMinWatermark = Timestamp::Min();
inline constexpr Timestamp kMaxWatermark = Timestamp::Max();

}  // namespace keyflow

template <typename Tag, typename Rep>
struct std::hash<keyflow::StrongId<Tag, Rep>> {
  size_t operator()(keyflow::StrongId<Tag, Rep> id) const { return std::hash<Rep>()(id.value()); }
};
