#include "worker/runtime/task_mailbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "common/check.h"

namespace keyflow {

Result<std::unique_ptr<TaskMailbox>> TaskMailbox::Create() {
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    return ErrnoError(
        "cannot create the eventfd of a task mailbox (raise the "
        "open-file limit, ulimit -n)",
        errno);
  }
  return std::unique_ptr<TaskMailbox>(new TaskMailbox(fd));
}

TaskMailbox::~TaskMailbox() {
  ::close(event_fd_);
}

Status TaskMailbox::Closed(const Mail& mail) const {
  return FailedPrecondition(
      "the task mailbox is closed (the task is finishing or cancelled); "
      "mail '" +
      mail.description + "' was not accepted");
}

Status TaskMailbox::Put(Mail mail) {
  KF_CHECK(mail.action) << "mail '" << mail.description << "' has no action";
  MutexLock lock(&mu_);
  if (closed_.load(std::memory_order_relaxed)) return Closed(mail);
  queue_.push_back(std::move(mail));
  size_.store(queue_.size(), std::memory_order_release);
  if (queue_.size() == 1) SignalLocked();
  return Status::Ok();
}

Status TaskMailbox::PutFirst(Mail mail) {
  KF_CHECK(mail.action) << "mail '" << mail.description << "' has no action";
  MutexLock lock(&mu_);
  if (closed_.load(std::memory_order_relaxed)) return Closed(mail);
  queue_.push_front(std::move(mail));
  size_.store(queue_.size(), std::memory_order_release);
  if (queue_.size() == 1) SignalLocked();
  return Status::Ok();
}

std::optional<Mail> TaskMailbox::TryTake() {
  MutexLock lock(&mu_);
  if (queue_.empty()) return std::nullopt;
  Mail mail = std::move(queue_.front());
  queue_.pop_front();
  size_.store(queue_.size(), std::memory_order_release);
  if (queue_.empty()) ClearSignalLocked();
  return mail;
}

std::vector<Mail> TaskMailbox::Close() {
  std::vector<Mail> remaining;
  MutexLock lock(&mu_);
  if (closed_.load(std::memory_order_relaxed)) return remaining;
  remaining.reserve(queue_.size());
  for (Mail& mail : queue_) remaining.push_back(std::move(mail));
  const bool was_signalled = !queue_.empty();
  queue_.clear();
  size_.store(0, std::memory_order_release);
  closed_.store(true, std::memory_order_release);
  // Stay readable from now on, so a loop blocked on the fd wakes and sees the
  // mailbox closed.
  if (!was_signalled) SignalLocked();
  return remaining;
}

// The eventfd counter is 1 while the queue is non-empty (or closed) and 0
// otherwise; mu_ makes the queue transition and the counter change atomic.
void TaskMailbox::SignalLocked() {
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = ::write(event_fd_, &one, sizeof(one));
  } while (n < 0 && errno == EINTR);
  KF_CHECK_EQ(n, static_cast<ssize_t>(sizeof(one)))
      << "write to the mailbox eventfd failed, errno " << errno;
}

void TaskMailbox::ClearSignalLocked() {
  uint64_t value = 0;
  ssize_t n;
  do {
    n = ::read(event_fd_, &value, sizeof(value));
  } while (n < 0 && errno == EINTR);
  KF_CHECK_EQ(n, static_cast<ssize_t>(sizeof(value)))
      << "read from the mailbox eventfd failed, errno " << errno;
}

}  // namespace keyflow
