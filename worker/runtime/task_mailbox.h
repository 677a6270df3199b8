// TaskMailbox: the thread-safe FIFO of mails of one task (Flink's TaskMailbox).
//
// A mail is an action to run on the task thread plus a short description for
// diagnostics. Any thread may Put mail (checkpoint triggers, async snapshot
// completions, control messages, timers from other threads); only the task
// thread takes it, inside MailboxProcessor's loop — that is how other threads
// talk to a task's state without locks.
//
// The mailbox owns a Linux eventfd that is readable exactly while mail is
// pending (and forever once closed), so the task thread can block on it
// together with other fds: the data plane zmq_poll()s its channel sockets plus
// fd(). The fd is written only when the mailbox goes from empty to non-empty
// and read only when it goes back to empty: one syscall per burst, not per
// mail.
//
// Lifecycle: open -> Close(). Close() rejects further Put/PutFirst and hands
// the mails still queued to the caller (who runs or drops them). Close it after
// the loop has ended; closing while the loop runs makes RunMailboxLoop return
// Aborted.
//
// Threading: Put, PutFirst, Close, HasMail, size, is_closed: any thread.
// TryTake: the task thread (any single consumer).
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace keyflow {

struct Mail {
  std::function<void()> action;  // must not be empty
  std::string description;       // e.g. "trigger checkpoint 7"; for errors and logs
};

class TaskMailbox {
 public:
  // Fails with IoError when the eventfd cannot be created (fd limit reached).
  static Result<std::unique_ptr<TaskMailbox>> Create();
  ~TaskMailbox();  // closes the eventfd; queued mails are destroyed without
                   // running
  TaskMailbox(const TaskMailbox&) = delete;
  TaskMailbox& operator=(const TaskMailbox&) = delete;

  // Appends a mail. Fails with FailedPrecondition after Close() (the mail is
  // dropped). Precondition: mail.action is not empty.
  [[nodiscard]] Status Put(Mail mail);
  [[nodiscard]] Status Put(std::function<void()> action, std::string description) {
    return Put(Mail{std::move(action), std::move(description)});
  }
  // Inserts a mail before all queued mail (control mail that must not wait,
  // e.g. stop).
  [[nodiscard]] Status PutFirst(Mail mail);

  // The oldest mail, or nullopt when none is queued. Task thread only.
  std::optional<Mail> TryTake();

  // Lock-free snapshots; a concurrent Put may make them stale immediately.
  bool HasMail() const { return size_.load(std::memory_order_acquire) > 0; }
  size_t size() const { return size_.load(std::memory_order_acquire); }
  bool is_closed() const { return closed_.load(std::memory_order_acquire); }

  // Readable (POLLIN) while mail is queued or the mailbox is closed. Owned by
  // the mailbox: never read, write or close it; only poll it.
  int fd() const { return event_fd_; }

  // Rejects all later Put/PutFirst and returns the queued mails in FIFO order.
  // Idempotent (later calls return nothing).
  std::vector<Mail> Close();

 private:
  explicit TaskMailbox(int event_fd) : event_fd_(event_fd) {}
  Status Closed(const Mail& mail) const;
  void SignalLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClearSignalLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int event_fd_;
  Mutex mu_;
  std::deque<Mail> queue_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> size_{0};      // == queue_.size(), written under mu_
  std::atomic<bool> closed_{false};  // written under mu_
};

}  // namespace keyflow
