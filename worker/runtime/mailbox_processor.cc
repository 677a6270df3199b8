#include "worker/runtime/mailbox_processor.h"

#include <poll.h>

#include <cerrno>
#include <climits>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace keyflow {
namespace {

// Runs `fn`, turning an exception into an Internal status that names the action
// (built by `describe`, only on failure): exceptions must not escape the task
// thread.
template <typename Fn, typename Describe>
Status RunGuarded(Fn&& fn, Describe&& describe) {
  try {
    fn();
    return Status::Ok();
  } catch (const std::exception& e) {
    return Internal(describe() + " threw an exception: " + e.what());
  } catch (...) {
    return Internal(describe() + " threw a non-standard exception");
  }
}

int PollTimeoutMillis(std::optional<Duration> timeout) {
  if (!timeout.has_value()) return -1;
  if (timeout->millis() <= 0) return 0;
  if (timeout->millis() > INT_MAX) return INT_MAX;
  return static_cast<int>(timeout->millis());
}

}  // namespace

Status MailboxOnlyInputWaiter::Wait(std::optional<Duration> timeout, int mailbox_fd) {
  pollfd pfd{};
  pfd.fd = mailbox_fd;
  pfd.events = POLLIN;
  const int rc = ::poll(&pfd, 1, PollTimeoutMillis(timeout));
  if (rc < 0 && errno != EINTR) {
    return ErrnoError("waiting on the task mailbox (poll) failed", errno);
  }
  return Status::Ok();  // readable, timed out or interrupted: the loop re-checks
}

MailboxProcessor::MailboxProcessor(TaskMailbox& mailbox, SystemProcessingTimeService& time_service,
                                   MailboxDefaultAction default_action, InputWaiter* input_waiter)
    : mailbox_(mailbox),
      time_service_(time_service),
      default_action_(std::move(default_action)),
      input_waiter_(input_waiter != nullptr ? input_waiter : &mailbox_only_waiter_) {}

void MailboxProcessor::RequestExit(uint8_t reason) {
  exit_requested_.fetch_or(reason, std::memory_order_acq_rel);
  // Wake a loop blocked in its waiter. If the mailbox is closed the loop wakes
  // anyway.
  mailbox_.PutFirst(Mail{[] {}, "wake up the mailbox loop"}).IgnoreError();
}

void MailboxProcessor::AllActionsCompleted() {
  RequestExit(kExitCompleted);
}

void MailboxProcessor::Stop() {
  RequestExit(kExitStop);
}

void MailboxProcessor::ReportError(Status error) {
  KF_CHECK(!error.ok()) << "ReportError needs an error";
  {
    MutexLock lock(&error_mu_);
    if (error_.ok()) error_ = std::move(error);
  }
  RequestExit(kExitError);
}

Status MailboxProcessor::RunMailboxLoop() {
  Status status = RunLoop();
  const uint8_t exit = exit_requested_.load(std::memory_order_acquire);
  if (exit & kExitError) {
    MutexLock lock(&error_mu_);
    return error_;
  }
  if (!status.ok()) return status;
  // A Stop ends this run only; completion and errors are final.
  exit_requested_.fetch_and(static_cast<uint8_t>(~kExitStop), std::memory_order_acq_rel);
  return Status::Ok();
}

Status MailboxProcessor::RunLoop() {
  while (!ExitRequested()) {
    KF_RETURN_IF_ERROR(RunMailStep());
    if (ExitRequested()) break;
    KF_RETURN_IF_ERROR(RunDueCallbacks());
    if (ExitRequested()) break;
    bool more_available = false;
    KF_RETURN_IF_ERROR(RunDefaultAction(more_available));
    if (more_available || ExitRequested()) continue;
    KF_RETURN_IF_ERROR(WaitForWork());
  }
  return Status::Ok();
}

Status MailboxProcessor::RunMailStep() {
  // Only the mail queued now: mail put while these run waits for the next
  // iteration.
  for (size_t n = mailbox_.size(); n > 0 && !ExitRequested(); --n) {
    std::optional<Mail> mail = mailbox_.TryTake();
    if (!mail.has_value()) break;
    KF_RETURN_IF_ERROR(
        RunGuarded(mail->action, [&] { return "mail '" + mail->description + "'"; }));
  }
  return Status::Ok();
}

Status MailboxProcessor::RunDueCallbacks() {
  const Timestamp now = time_service_.CurrentProcessingTime();
  while (!ExitRequested()) {
    bool ran = false;
    KF_RETURN_IF_ERROR(RunGuarded([&] { ran = time_service_.RunNextDueCallback(now); },
                                  [] { return std::string("a processing-time callback"); }));
    if (!ran) break;
  }
  return Status::Ok();
}

Status MailboxProcessor::RunDefaultAction(bool& more_available) {
  more_available = false;
  if (!default_action_ || default_action_suspended_) return Status::Ok();
  std::optional<Result<InputStatus>> result;
  KF_RETURN_IF_ERROR(
      RunGuarded([&] { result.emplace(default_action_()); },
                 [] { return std::string("the default action (input processing)"); }));
  if (!result->ok()) return result->status();
  switch (**result) {
    case InputStatus::kMoreAvailable:
      more_available = true;
      break;
    case InputStatus::kNothingAvailable:
      break;
    case InputStatus::kEndOfInput:
      default_action_suspended_ = true;
      break;
  }
  return Status::Ok();
}

Status MailboxProcessor::WaitForWork() {
  if (mailbox_.HasMail()) return Status::Ok();
  if (mailbox_.is_closed()) {
    return Aborted("the task mailbox was closed while its mailbox loop was running");
  }
  std::optional<Duration> timeout;
  if (std::optional<Timestamp> due = time_service_.NextDueTime(); due.has_value()) {
    const Timestamp now = time_service_.CurrentProcessingTime();
    if (*due <= now) return Status::Ok();
    int64_t millis;
    if (__builtin_sub_overflow(due->millis(), now.millis(), &millis)) millis = INT64_MAX;
    timeout = Duration::Millis(millis);
  }
  const bool input_may_matter = default_action_ && !default_action_suspended_;
  InputWaiter& waiter = input_may_matter ? *input_waiter_ : mailbox_only_waiter_;
  return waiter.Wait(timeout, mailbox_.fd());
}

}  // namespace keyflow
