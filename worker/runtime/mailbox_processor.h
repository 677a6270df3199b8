// MailboxProcessor: the single-threaded event loop of one task (Flink's
// MailboxProcessor).
//
// Everything a task does runs here, on the thread that calls RunMailboxLoop(),
// one action at a time: mails (checkpoint triggers, snapshot completions,
// control messages), processing-time callbacks (SystemProcessingTimeService)
// and the default action ("process one batch of input"). That is the guarantee
// that processElement, onTimer and snapshots never interleave.
//
// One loop iteration:
//   1. run the mails that were queued when the iteration started, in FIFO order
//   (mail put
//      while they run waits for the next iteration, so mail cannot starve
//      input);
//   2. run the processing-time callbacks due now, in (ts, scheduling order)
//   order;
//   3. run the default action once, unless it is suspended;
//   4. if the default action reported kMoreAvailable, loop; otherwise, unless
//   mail is queued
//      or a callback is due, block in the InputWaiter until mail arrives, input
//      may be available, or the next callback is due (while the default action
//      is suspended, wait for mail and callbacks only).
// Stop(), AllActionsCompleted() and ReportError() take effect between two
// actions.
//
// Threading: RunMailboxLoop, SuspendDefaultAction, ResumeDefaultAction: the
// task thread (from mail, callbacks or the default action). Stop,
// AllActionsCompleted, ReportError: any thread. From another thread, put a mail
// to do anything else.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

#include "common/mutex.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/runtime/system_processing_time_service.h"
#include "worker/runtime/task_mailbox.h"

namespace keyflow {

// What the default action found (Flink's DataInputStatus).
enum class InputStatus : uint8_t {
  kMoreAvailable,     // call again right away
  kNothingAvailable,  // block in the InputWaiter until something happens
  kEndOfInput,        // all input consumed: the default action is suspended from now
                      // on
};

// One unit of input work, e.g. "process up to one batch of records". Errors end
// the loop.
using MailboxDefaultAction = std::function<Result<InputStatus>()>;

// Blocks the task thread while there is nothing to do. The data plane
// implements it by zmq_poll()ing its unblocked channel sockets plus
// `mailbox_fd`.
class InputWaiter {
 public:
  virtual ~InputWaiter() = default;
  // Returns when `mailbox_fd` is readable, when input may be available, or
  // after `timeout` (nullopt: no timeout; a timeout > INT_MAX ms may be
  // clamped). Returning early is allowed: the loop re-checks everything. An
  // error ends the loop with that Status.
  [[nodiscard]] virtual Status Wait(std::optional<Duration> timeout, int mailbox_fd) = 0;
};

// The default InputWaiter: poll(2) on the mailbox fd alone (a task without
// network input).
class MailboxOnlyInputWaiter final : public InputWaiter {
 public:
  [[nodiscard]] Status Wait(std::optional<Duration> timeout, int mailbox_fd) override;
};

class MailboxProcessor {
 public:
  // `mailbox` and `time_service` (and `input_waiter`, if given) must outlive
  // the processor. An empty `default_action` means a loop of mail and callbacks
  // only. A null `input_waiter` selects MailboxOnlyInputWaiter.
  MailboxProcessor(TaskMailbox& mailbox, SystemProcessingTimeService& time_service,
                   MailboxDefaultAction default_action, InputWaiter* input_waiter = nullptr);
  MailboxProcessor(const MailboxProcessor&) = delete;
  MailboxProcessor& operator=(const MailboxProcessor&) = delete;

  // Runs the loop on the calling thread until:
  //   AllActionsCompleted()    -> OK (and every later call returns OK at once);
  //   Stop()                   -> OK (a later call continues the loop);
  //   ReportError(s)           -> s (the first reported error);
  //   the default action fails -> its error;
  //   an action throws         -> Internal, naming the action;
  //   the waiter fails         -> its error;
  //   the mailbox is closed    -> Aborted.
  // Mail still queued when the loop ends stays in the mailbox
  // (TaskMailbox::Close returns it).
  [[nodiscard]] Status RunMailboxLoop();

  // The default action is not called while suspended (Flink's
  // suspendDefaultAction). Task thread only; idempotent.
  void SuspendDefaultAction() { default_action_suspended_ = true; }
  void ResumeDefaultAction() { default_action_suspended_ = false; }
  bool is_default_action_suspended() const { return default_action_suspended_; }

  // The task has nothing more to do: ends the loop for good. Any thread.
  void AllActionsCompleted();
  // Ends the running (or the next) RunMailboxLoop call; a later call continues
  // (Flink's MailboxProcessor#suspend). Any thread.
  void Stop();
  // Fails the task: the loop ends and RunMailboxLoop returns `error` (the first
  // one reported wins). The way for mails and callbacks, which return void, to
  // fail. Any thread.
  void ReportError(Status error);

 private:
  bool ExitRequested() const { return exit_requested_.load(std::memory_order_acquire) != 0; }
  void RequestExit(uint8_t reason);
  Status RunLoop();
  Status RunMailStep();
  Status RunDueCallbacks();
  Status RunDefaultAction(bool& more_available);
  Status WaitForWork();

  static constexpr uint8_t kExitStop = 1;
  static constexpr uint8_t kExitCompleted = 2;
  static constexpr uint8_t kExitError = 4;

  TaskMailbox& mailbox_;
  SystemProcessingTimeService& time_service_;
  MailboxDefaultAction default_action_;
  MailboxOnlyInputWaiter mailbox_only_waiter_;
  InputWaiter* input_waiter_;
  bool default_action_suspended_ = false;  // task thread only

  std::atomic<uint8_t> exit_requested_{0};  // bit set of kExit*
  Mutex error_mu_;
  Status error_ ABSL_GUARDED_BY(error_mu_);  // the first reported error
};

}  // namespace keyflow
