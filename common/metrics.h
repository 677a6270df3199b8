// Counters and gauges a task thread updates and a reporting thread (heartbeats, status) reads.
// Relaxed atomics: each value is exact, the set of values is a best-effort snapshot.
#pragma once

#include <atomic>
#include <cstdint>

namespace keyflow {

class Counter {
 public:
  void Inc(int64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

}  // namespace keyflow
