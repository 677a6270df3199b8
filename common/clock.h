// Clock: the source of processing time, injectable so tests never sleep.
// SystemClock reads the wall clock (and steady_clock for durations); ManualClock is advanced by
// the test.
#pragma once

#include <atomic>
#include <chrono>

#include "common/types.h"

namespace keyflow {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the epoch.
  virtual Timestamp Now() const = 0;
  // Monotonic microseconds, for durations (never for timestamps). Default: steady_clock.
  virtual int64_t MonotonicMicros() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t MonotonicMillis() const { return MonotonicMicros() / 1000; }
  // Microseconds since the epoch (latency markers: comparable across processes, and across
  // hosts as far as their clocks agree). Default: Now() in microseconds.
  virtual int64_t EpochMicros() const { return Now().millis() * 1000; }
};

class SystemClock final : public Clock {
 public:
  Timestamp Now() const override {
    return Timestamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
  }
  int64_t EpochMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// Thread-safe: tests may read it from a task thread and set it from the test thread.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = Timestamp(0)) : now_(start.millis()) {}
  Timestamp Now() const override { return Timestamp(now_.load(std::memory_order_acquire)); }
  // Durations follow the manual time too, so they are exact in tests.
  int64_t MonotonicMicros() const override { return now_.load(std::memory_order_acquire) * 1000; }
  void Set(Timestamp t) { now_.store(t.millis(), std::memory_order_release); }
  void Advance(Duration d) { now_.fetch_add(d.millis(), std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

// Monotonic milliseconds, for timeouts and rates (never for timestamps).
inline int64_t MonotonicMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace keyflow
