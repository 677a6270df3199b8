// PrefetchForRead: asks the CPU to start loading the cache line at `p`, so that a load issued
// a little later does not wait for memory. A hint: no effect on program state, never faults.
//
// Why not __builtin_prefetch directly: GCC 12's IPA pure-const pass treats a function whose
// only effect is __builtin_prefetch as `const` and deletes calls to it whose (void) result is
// unused — e.g. StateMap::Prefetch called from another function vanished entirely. A volatile
// asm statement is never deleted. Threading: none.
#pragma once

namespace keyflow {

inline void PrefetchForRead(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace keyflow
