// Mutex, MutexLock, CondVar: std::mutex and std::condition_variable with Clang's thread-safety
// annotations (absl/base/thread_annotations.h), so that members declared
// `ABSL_GUARDED_BY(mu_)` and functions declared `ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_)` are
// checked at compile time by `clang -Wthread-safety` (the KEYFLOW_THREAD_SAFETY_ANALYSIS build,
// run by scripts/test.sh). Every mutex in keyflow is one of these.
//
// Why not absl::Mutex: Debian's Abseil is not compiled with -fsanitize=thread, so ThreadSanitizer
// would not see the happens-before edges of its (uninstrumented) lock and would report false
// races on everything it guards. std::mutex goes through pthread, which TSan intercepts.
//
// Who uses it: the few structures shared between threads (the rest is confined to one thread):
// the task mailbox, the mailbox processor's error, the task executor's completion count, the
// source task's final positions, the asynchronous keyed snapshot.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <absl/base/thread_annotations.h>

namespace keyflow {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the analysis the caller holds the lock (where it cannot see it, e.g. in a callback
  // that is only invoked under the lock). Checks nothing at run time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `*mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with a Mutex. Waits may wake spuriously: wait in a loop on the
// condition (`while (!ready_) cv_.Wait(&mu_);`), which the analysis can check, unlike a
// predicate lambda.
class CondVar {
 public:
  // Releases `*mu` while waiting and holds it again on return.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's MutexLock unlocks it
  }
  // As Wait, but returns at `deadline` at the latest: false if the deadline has passed.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace keyflow
