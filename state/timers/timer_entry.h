// TimerEntry: one timer, (timestamp, key, namespace) — Flink's TimerHeapInternalTimer without
// the heap slot index (the queue keeps that next to the entry, see timer_priority_queue_set.h).
//
// Identity (dedup, delete): all three fields equal.
// Order: TimerLess — timestamp, then key bytes (unsigned lexicographic, a prefix first), then
// namespace (signed). Inside one key group that is a total order over distinct timers, so the
// firing order never depends on insertion history (unlike Flink's heap, which orders only by
// timestamp). Across key groups KeyGroupPartitionedTimerQueue breaks timestamp ties by key
// group first: the global order is (timestamp, key group, key bytes, namespace).
//
// 32 bytes, no allocation for keys of up to 15 bytes (every int/long key).
#pragma once

#include <cstdint>
#include <ostream>

#include "common/hashing.h"
#include "common/key.h"
#include "common/types.h"
#include "state/namespace.h"

namespace keyflow {

struct TimerEntry {
  Timestamp timestamp;
  Key key;
  Namespace ns;

  friend bool operator==(const TimerEntry& a, const TimerEntry& b) {
    return a.timestamp == b.timestamp && a.ns == b.ns && a.key == b.key;
  }
};

static_assert(sizeof(TimerEntry) == 32);

// For test failures and KF_CHECK messages: Timer{ts=5, key=0x0700000000000000, ns=0}.
inline std::ostream& operator<<(std::ostream& os, const TimerEntry& t) {
  static constexpr char kHex[] = "0123456789abcdef";
  os << "Timer{ts=" << t.timestamp << ", key=0x";
  for (unsigned char c : t.key.bytes()) os << kHex[c >> 4] << kHex[c & 15];
  return os << ", ns=" << t.ns << "}";
}

// Strict weak (indeed total) order: (timestamp, key bytes, namespace).
inline bool TimerLess(const TimerEntry& a, const TimerEntry& b) {
  if (a.timestamp != b.timestamp) return a.timestamp < b.timestamp;
  if (a.key != b.key) return a.key < b.key;
  return a.ns < b.ns;
}

// In-process hash for the dedup table (not stable across versions, never persisted).
inline uint64_t TimerHash(const TimerEntry& e) {
  const uint64_t ns_mixed = static_cast<uint64_t>(e.ns.value()) * 0x9E3779B97F4A7C15ull;
  return Mix64(e.key.Hash() ^ ns_mixed, static_cast<uint64_t>(e.timestamp.millis()));
}

}  // namespace keyflow
