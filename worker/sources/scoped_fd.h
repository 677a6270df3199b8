// ScopedFd: owns one POSIX file descriptor and closes it exactly once (RAII).
//
// Used by the file split reader (worker/sources) and the file sink (worker/sinks) so that no
// error path can leak a descriptor. Move-only. Not thread-safe (one owner at a time).
#pragma once

#include <unistd.h>

#include <utility>

namespace keyflow {

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Closes the descriptor now. Returns close()'s result (0 or -1 with errno set); 0 if none.
  int Reset() {
    if (fd_ < 0) return 0;
    return ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

}  // namespace keyflow
