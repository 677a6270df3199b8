// Notification: a one-shot event a test thread waits on with a timeout (never a
// sleep).
#pragma once

#include <chrono>

#include "common/mutex.h"

namespace keyflow::test {

class Notification {
 public:
  void Notify() {
    MutexLock lock(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  // True if notified within `timeout`.
  bool WaitFor(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu_);
    while (!notified_) {
      if (!cv_.WaitUntil(&mu_, deadline)) return notified_;
    }
    return true;
  }
  bool HasBeenNotified() {
    MutexLock lock(&mu_);
    return notified_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace keyflow::test
