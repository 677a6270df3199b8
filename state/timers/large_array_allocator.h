// LargeArrayAllocator: the allocator of the timer queues' flat arrays (heap, run, dedup table).
//
// Arrays of at least kMapThreshold bytes get their own anonymous memory mapping, released to
// the kernel as soon as the array is freed; smaller ones use malloc. Why: a timer array grows
// by allocating a larger buffer, copying and freeing the old one. With malloc, freed buffers
// below its (dynamic, up to 32 MiB) mmap threshold stay resident in the heap, so the resident
// memory per timer depended on what the process had allocated before (47 vs 60 bytes per
// timer in timer_bench). With a mapping per large array, resident memory is the pages the
// live arrays touched: unused capacity costs address space only.
//
// Stateless; all instances are equal. Threading: like malloc.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <vector>

#include "common/check.h"

namespace keyflow {

template <typename T>
class LargeArrayAllocator {
 public:
  using value_type = T;
  static constexpr size_t kMapThreshold = 64 * 1024;

  LargeArrayAllocator() = default;
  template <typename U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p;
    if (bytes < kMapThreshold) {
      p = std::malloc(bytes);
      KF_CHECK(p != nullptr) << "out of memory allocating " << bytes << " bytes for timers";
    } else {
      p = mmap(nullptr, MappedBytes(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
               0);
      KF_CHECK(p != MAP_FAILED) << "out of memory mapping " << bytes << " bytes for timers";
    }
    return static_cast<T*>(p);
  }

  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kMapThreshold) {
      std::free(p);
    } else {
      KF_CHECK(munmap(p, MappedBytes(bytes)) == 0) << "munmap failed";
    }
  }

  friend bool operator==(const LargeArrayAllocator&, const LargeArrayAllocator&) { return true; }

 private:
  static size_t MappedBytes(size_t bytes) {
    static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
  }
};

// A std::vector whose buffer comes from LargeArrayAllocator.
template <typename T>
using LargeArray = std::vector<T, LargeArrayAllocator<T>>;

}  // namespace keyflow
