// KeyGroupWriteGuard: the hook through which an asynchronous snapshot keeps its copy of a key
// group consistent while the task thread goes on (copy-on-write at key-group granularity).
//
// While a snapshot is being written, the keyed state backend and the timer service call
// BeforeWrite(index) before they change key group `range.start() + index`. The guard makes sure
// that key group has been serialised for the snapshot first — by the writer thread, or, if the
// writer has not reached it yet, right here on the task thread. Key groups that are only read
// cost nothing; a key group that is written costs one atomic load once it is serialised.
//
// Threading: BeforeWrite on the task thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace keyflow {

class KeyGroupWriteGuard {
 public:
  virtual ~KeyGroupWriteGuard() = default;

  void BeforeWrite(int32_t index) {
    if (state_[index].load(std::memory_order_acquire) != kSerialized) [[unlikely]] {
      SerializeBeforeWrite(index);
    }
  }

 protected:
  static constexpr uint8_t kPending = 0;      // not serialised yet
  static constexpr uint8_t kSerializing = 1;  // claimed by one thread, in progress
  static constexpr uint8_t kSerialized = 2;   // in the snapshot; free to change

  explicit KeyGroupWriteGuard(int32_t num_key_groups)
      : state_(new std::atomic<uint8_t>[static_cast<size_t>(num_key_groups)]) {
    for (int32_t i = 0; i < num_key_groups; ++i)
      state_[i].store(kPending, std::memory_order_relaxed);
  }
  // Returns once key group `index` is kSerialized.
  virtual void SerializeBeforeWrite(int32_t index) = 0;

  std::unique_ptr<std::atomic<uint8_t>[]> state_;
};

}  // namespace keyflow
