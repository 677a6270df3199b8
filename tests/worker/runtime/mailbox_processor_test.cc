#include "worker/runtime/mailbox_processor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/runtime/notification.h"

namespace keyflow {
namespace {

using test::Notification;
using ::testing::ElementsAre;

std::unique_ptr<TaskMailbox> NewMailbox() {
  auto mailbox = TaskMailbox::Create();
  KF_CHECK(mailbox.ok()) << mailbox.status().ToString();
  return std::move(mailbox).value();
}

std::string Millis(Timestamp t) {
  return std::to_string(t.millis());
}

// Records the timeouts the loop blocks with; `on_wait` simulates what happens
// meanwhile.
class FakeInputWaiter final : public InputWaiter {
 public:
  Status Wait(std::optional<Duration> timeout, int /*mailbox_fd*/) override {
    timeouts.push_back(timeout.has_value() ? std::to_string(timeout->millis()) + "ms" : "none");
    if (on_wait) on_wait();
    return Status::Ok();
  }
  std::vector<std::string> timeouts;
  std::function<void()> on_wait;
};

// Runs a processor's loop on its own thread; the test waits for it with a
// timeout.
class LoopThread {
 public:
  explicit LoopThread(MailboxProcessor& processor, TaskMailbox& mailbox) : mailbox_(mailbox) {
    thread_ = std::thread([this, &processor] {
      loop_thread_id_ = std::this_thread::get_id();
      status_ = processor.RunMailboxLoop();
      done_.Notify();
    });
  }
  ~LoopThread() {
    if (!done_.HasBeenNotified()) mailbox_.Close();  // a failed test must not hang: force exit
    thread_.join();
  }
  // True once the loop returned; then status() and loop_thread_id() may be
  // read.
  bool WaitDone() { return done_.WaitFor(); }
  const Status& status() const { return status_; }
  std::thread::id loop_thread_id() const { return loop_thread_id_; }

 private:
  TaskMailbox& mailbox_;
  Notification done_;
  Status status_;
  std::thread::id loop_thread_id_;
  std::thread thread_;
};

class MailboxProcessorTest : public ::testing::Test {
 protected:
  std::unique_ptr<TaskMailbox> mailbox = NewMailbox();
  ManualClock clock{Timestamp(0)};
  SystemProcessingTimeService timers{clock};
  std::vector<std::string> log;  // touched only on the loop thread until it has ended

  void PutOrDie(std::function<void()> action, std::string description) {
    Status s = mailbox->Put(std::move(action), std::move(description));
    ASSERT_OK(s);
  }
};

TEST_F(MailboxProcessorTest, RunsQueuedMailInFifoOrderBeforeTheDefaultAction) {
  int calls = 0;
  MailboxProcessor* self = nullptr;
  MailboxProcessor processor(*mailbox, timers, [&]() -> Result<InputStatus> {
    ++calls;
    log.push_back("input" + std::to_string(calls));
    if (calls == 1) PutOrDie([&] { log.push_back("m4"); }, "m4");
    if (calls == 2) self->AllActionsCompleted();
    return InputStatus::kMoreAvailable;
  });
  self = &processor;
  for (const char* name : {"m1", "m2", "m3"}) PutOrDie([&, name] { log.push_back(name); }, name);
  ASSERT_OK(processor.RunMailboxLoop());
  EXPECT_THAT(log, ElementsAre("m1", "m2", "m3", "input1", "m4", "input2"));
}

TEST_F(MailboxProcessorTest, MailPutByRunningMailWaitsForTheNextIterationSoInputIsNotStarved) {
  int calls = 0;
  MailboxProcessor* self = nullptr;
  MailboxProcessor processor(*mailbox, timers, [&]() -> Result<InputStatus> {
    log.push_back("input" + std::to_string(++calls));
    if (calls == 3) self->AllActionsCompleted();
    return InputStatus::kMoreAvailable;
  });
  self = &processor;
  PutOrDie(
      [&] {
        log.push_back("m1");
        PutOrDie(
            [&] {
              log.push_back("m2");
              PutOrDie([&] { log.push_back("m3"); }, "m3");
            },
            "m2");
      },
      "m1");
  ASSERT_OK(processor.RunMailboxLoop());
  EXPECT_THAT(log, ElementsAre("m1", "input1", "m2", "input2", "m3", "input3"));
}

TEST_F(MailboxProcessorTest, MailFromFourProducerThreadsRunsExactlyOnceOnTheLoopThread) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 5000;
  std::vector<std::vector<int>> seen(kProducers);  // loop thread only
  std::vector<std::thread::id> ran_on;             // loop thread only
  MailboxProcessor processor(*mailbox, timers, /*default_action=*/nullptr);
  LoopThread loop(processor, *mailbox);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        Status s = mailbox->Put(
            [&seen, &ran_on, p, i] {
              seen[p].push_back(i);
              ran_on.push_back(std::this_thread::get_id());
            },
            "producer mail");
        ASSERT_OK(s);
      }
    });
  }
  for (auto& t : producers) t.join();
  // FIFO: this mail runs after every producer's mail.
  PutOrDie([&] { processor.AllActionsCompleted(); }, "finish");
  ASSERT_TRUE(loop.WaitDone());
  ASSERT_OK(loop.status());
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(kPerProducer));
    for (int i = 0; i < kPerProducer; ++i) ASSERT_EQ(seen[p][i], i) << "producer " << p;
  }
  ASSERT_EQ(ran_on.size(), static_cast<size_t>(kProducers * kPerProducer));
  for (const std::thread::id& id : ran_on) ASSERT_EQ(id, loop.loop_thread_id());
  EXPECT_NE(loop.loop_thread_id(), std::this_thread::get_id());
}

TEST_F(MailboxProcessorTest, MailTimersAndInputRunOneAtATimeOnTheLoopThread) {
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread::id> ran_on;  // loop thread only
  auto action = [&] {
    if (running.fetch_add(1) != 0) overlaps.fetch_add(1);
    ran_on.push_back(std::this_thread::get_id());
    running.fetch_sub(1);
  };
  int calls = 0;
  MailboxProcessor* self = nullptr;
  MailboxProcessor processor(*mailbox, timers, [&]() -> Result<InputStatus> {
    action();
    if (++calls < 200) {
      timers.Schedule(Timestamp(-1), [&](Timestamp) { action(); });  // due at once
      return InputStatus::kMoreAvailable;
    }
    self->AllActionsCompleted();
    return InputStatus::kNothingAvailable;
  });
  self = &processor;
  LoopThread loop(processor, *mailbox);
  for (int i = 0; i < 200; ++i) PutOrDie(action, "mail");
  ASSERT_TRUE(loop.WaitDone());
  ASSERT_OK(loop.status());
  EXPECT_EQ(overlaps.load(), 0);
  // Every input call, every timer and the mails that arrived before the loop
  // ended.
  EXPECT_GE(ran_on.size(), 200u + 199u);
  for (const std::thread::id& id : ran_on) ASSERT_EQ(id, loop.loop_thread_id());
}

TEST_F(MailboxProcessorTest, NothingAvailableBlocksInTheInputWaiterUntilTheNextTimerIsDue) {
  FakeInputWaiter waiter;
  clock.Set(Timestamp(40));
  MailboxProcessor* self = nullptr;
  MailboxProcessor processor(
      *mailbox, timers,
      [&]() -> Result<InputStatus> {
        log.push_back("input@" + Millis(clock.Now()));
        return InputStatus::kNothingAvailable;
      },
      &waiter);
  self = &processor;
  timers.Schedule(Timestamp(100), [&](Timestamp ts) {
    log.push_back("timer:" + Millis(ts) + "@" + Millis(clock.Now()));
    self->AllActionsCompleted();
  });
  waiter.on_wait = [&] { clock.Set(Timestamp(101)); };  // time passes while blocked
  ASSERT_OK(processor.RunMailboxLoop());
  EXPECT_THAT(waiter.timeouts, ElementsAre("61ms"));  // due at 100 + 1, now 40
  EXPECT_THAT(log, ElementsAre("input@40", "timer:100@101"));
}

TEST_F(MailboxProcessorTest, WaiterHasNoTimeoutWithoutTimersAndInputResumesTheDefaultAction) {
  FakeInputWaiter waiter;
  bool input_arrived = false;
  MailboxProcessor* self = nullptr;
  MailboxProcessor processor(
      *mailbox, timers,
      [&]() -> Result<InputStatus> {
        if (!input_arrived) {
          log.push_back("no input");
          return InputStatus::kNothingAvailable;
        }
        log.push_back("got input");
        self->AllActionsCompleted();
        return InputStatus::kMoreAvailable;
      },
      &waiter);
  self = &processor;
  waiter.on_wait = [&] { input_arrived = true; };  // a channel became readable
  ASSERT_OK(processor.RunMailboxLoop());
  EXPECT_THAT(waiter.timeouts, ElementsAre("none"));
  EXPECT_THAT(log, ElementsAre("no input", "got input"));
}

TEST_F(MailboxProcessorTest, SuspendedDefaultActionIsNotCalledUntilResumed) {
  FakeInputWaiter input_waiter;  // must not be used while suspended (mail-only wait)
  std::atomic<int> calls{0};
  Notification suspended;
  Notification probed;
  int calls_seen_by_probe = -1;
  MailboxProcessor* self = nullptr;
  MailboxProcessor processor(
      *mailbox, timers,
      [&]() -> Result<InputStatus> {
        const int n = calls.fetch_add(1) + 1;
        if (n == 3) {
          self->SuspendDefaultAction();
          suspended.Notify();
        }
        if (n == 5) self->AllActionsCompleted();
        return InputStatus::kMoreAvailable;  // even "more input" does not
                                             // override suspension
      },
      &input_waiter);
  self = &processor;
  LoopThread loop(processor, *mailbox);
  ASSERT_TRUE(suspended.WaitFor());
  PutOrDie(
      [&] {
        calls_seen_by_probe = calls.load();
        EXPECT_TRUE(self->is_default_action_suspended());
        probed.Notify();
      },
      "probe");
  ASSERT_TRUE(probed.WaitFor());
  PutOrDie([&] { self->ResumeDefaultAction(); }, "resume");
  ASSERT_TRUE(loop.WaitDone());
  ASSERT_OK(loop.status());
  EXPECT_EQ(calls_seen_by_probe, 3);
  EXPECT_EQ(calls.load(), 5);
  EXPECT_TRUE(input_waiter.timeouts.empty());
}

TEST_F(MailboxProcessorTest, EndOfInputSuspendsTheDefaultAction) {
  int calls = 0;
  bool suspended_after_end = false;
  MailboxProcessor* self = nullptr;
  MailboxProcessor processor(*mailbox, timers, [&]() -> Result<InputStatus> {
    ++calls;
    PutOrDie(
        [&] {
          suspended_after_end = self->is_default_action_suspended();
          self->AllActionsCompleted();
        },
        "check");
    return InputStatus::kEndOfInput;
  });
  self = &processor;
  ASSERT_OK(processor.RunMailboxLoop());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(suspended_after_end);
}

TEST_F(MailboxProcessorTest, ProcessingTimeCallbacksFireInOrderOneMilliAfterTheirTimestamp) {
  int calls = 0;
  MailboxProcessor* self = nullptr;
  auto timer = [&](std::string name) {
    return [&, name](Timestamp ts) {
      log.push_back(name + ":" + Millis(ts) + "@" + Millis(clock.Now()));
    };
  };
  MailboxProcessor processor(*mailbox, timers, [&]() -> Result<InputStatus> {
    ++calls;
    log.push_back("input" + std::to_string(calls) + "@" + Millis(clock.Now()));
    if (calls == 1) {
      timers.Schedule(Timestamp(100), timer("a"));
      timers.Schedule(Timestamp(50), timer("b"));
      timers.Schedule(Timestamp(100), timer("c"));
      auto d = timers.Schedule(Timestamp(70), timer("d"));
      timers.Cancel(d);
      clock.Set(Timestamp(100));
    } else if (calls == 2) {
      clock.Set(Timestamp(101));
    } else {
      self->AllActionsCompleted();
    }
    return InputStatus::kMoreAvailable;
  });
  self = &processor;
  ASSERT_OK(processor.RunMailboxLoop());
  EXPECT_THAT(log, ElementsAre("input1@0", "b:50@100", "input2@100", "a:100@101", "c:100@101",
                               "input3@101"));
}

TEST_F(MailboxProcessorTest, AdvancingTheClockAndSendingMailWakesTheLoopForADueTimer) {
  MailboxProcessor processor(*mailbox, timers, /*default_action=*/nullptr);
  Notification fired;
  Notification probed;
  std::string fired_at;  // loop thread until `fired`
  bool fired_before_probe = true;
  LoopThread loop(processor, *mailbox);
  PutOrDie(
      [&] {
        timers.Schedule(Timestamp(1000), [&](Timestamp ts) {
          fired_at = Millis(ts) + "@" + Millis(clock.Now());
          fired.Notify();
        });
      },
      "schedule");
  clock.Set(Timestamp(1000));  // not due yet: needs 1001
  PutOrDie(
      [&] {
        fired_before_probe = fired.HasBeenNotified();
        probed.Notify();
      },
      "probe at 1000");
  ASSERT_TRUE(probed.WaitFor());
  EXPECT_FALSE(fired_before_probe);
  clock.Set(Timestamp(1001));
  PutOrDie([] {}, "wake up");
  ASSERT_TRUE(fired.WaitFor());
  EXPECT_EQ(fired_at, "1000@1001");
  processor.AllActionsCompleted();
  ASSERT_TRUE(loop.WaitDone());
  EXPECT_OK(loop.status());
}

TEST_F(MailboxProcessorTest, WithTheSystemClockTheLoopWakesByItselfWhenATimerIsDue) {
  SystemClock system_clock;
  SystemProcessingTimeService system_timers(system_clock);
  MailboxProcessor processor(*mailbox, system_timers,
                             /*default_action=*/nullptr);
  Notification fired;
  Timestamp scheduled_for;
  Timestamp fired_at;
  LoopThread loop(processor, *mailbox);
  PutOrDie(
      [&] {
        scheduled_for = system_clock.Now() + Duration::Millis(3);
        system_timers.Schedule(scheduled_for, [&](Timestamp) {
          fired_at = system_clock.Now();
          fired.Notify();
        });
      },
      "schedule in 3ms");
  ASSERT_TRUE(fired.WaitFor());  // no mail wakes it: only the waiter's timeout
  processor.AllActionsCompleted();
  ASSERT_TRUE(loop.WaitDone());
  EXPECT_GE(fired_at, scheduled_for + Duration::Millis(1));
}

TEST_F(MailboxProcessorTest, StopFromAnotherThreadEndsTheLoopAndALaterRunContinues) {
  MailboxProcessor processor(*mailbox, timers, /*default_action=*/nullptr);
  Notification first;
  {
    LoopThread loop(processor, *mailbox);
    PutOrDie([&] { first.Notify(); }, "first");
    ASSERT_TRUE(first.WaitFor());
    processor.Stop();
    ASSERT_TRUE(loop.WaitDone());
    EXPECT_OK(loop.status());
  }
  Notification second;
  PutOrDie([&] { second.Notify(); }, "second");  // queued while no loop runs
  {
    LoopThread loop(processor, *mailbox);
    ASSERT_TRUE(second.WaitFor());
    processor.AllActionsCompleted();
    ASSERT_TRUE(loop.WaitDone());
    EXPECT_OK(loop.status());
  }
  // Completed is final: a new run returns at once.
  EXPECT_OK(processor.RunMailboxLoop());
}

TEST_F(MailboxProcessorTest, AllActionsCompletedWakesALoopBlockedWaitingForInput) {
  Notification waiting;
  MailboxProcessor processor(*mailbox, timers, [&]() -> Result<InputStatus> {
    waiting.Notify();
    return InputStatus::kNothingAvailable;  // then blocks in poll(2) on the
                                            // mailbox fd
  });
  LoopThread loop(processor, *mailbox);
  ASSERT_TRUE(waiting.WaitFor());
  processor.AllActionsCompleted();
  ASSERT_TRUE(loop.WaitDone());
  EXPECT_OK(loop.status());
}

TEST_F(MailboxProcessorTest, ReportedErrorEndsTheLoopAndTheFirstOneWins) {
  MailboxProcessor processor(*mailbox, timers, /*default_action=*/nullptr);
  PutOrDie(
      [&] {
        processor.ReportError(Corruption("checkpoint 3: task file is truncated"));
        processor.ReportError(Internal("second"));
      },
      "fail");
  PutOrDie([&] { log.push_back("never runs"); }, "after");
  Status s = processor.RunMailboxLoop();
  EXPECT_EQ(s, Corruption("checkpoint 3: task file is truncated"));
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(processor.RunMailboxLoop(), Corruption("checkpoint 3: task file is truncated"));
}

TEST_F(MailboxProcessorTest, DefaultActionErrorEndsTheLoop) {
  MailboxProcessor processor(*mailbox, timers, []() -> Result<InputStatus> {
    return Unavailable("input channel 2 went away");
  });
  EXPECT_EQ(processor.RunMailboxLoop(), Unavailable("input channel 2 went away"));
}

TEST_F(MailboxProcessorTest, ExceptionsBecomeInternalErrorsNamingTheAction) {
  {
    MailboxProcessor processor(*mailbox, timers, nullptr);
    PutOrDie([] { throw std::runtime_error("boom"); }, "explode");
    EXPECT_EQ(processor.RunMailboxLoop(), Internal("mail 'explode' threw an exception: boom"));
  }
  {
    MailboxProcessor processor(*mailbox, timers, nullptr);
    timers.Schedule(Timestamp(-5), [](Timestamp) { throw 42; });
    EXPECT_EQ(processor.RunMailboxLoop(),
              Internal("a processing-time callback threw a non-standard exception"));
  }
  {
    MailboxProcessor processor(
        *mailbox, timers, []() -> Result<InputStatus> { throw std::out_of_range("bad index"); });
    EXPECT_EQ(processor.RunMailboxLoop(), Internal("the default action (input processing) threw an "
                                                   "exception: bad index"));
  }
}

TEST_F(MailboxProcessorTest, ClosingTheMailboxUnderARunningLoopEndsItWithAborted) {
  Notification waiting;
  MailboxProcessor processor(*mailbox, timers, [&]() -> Result<InputStatus> {
    waiting.Notify();
    return InputStatus::kNothingAvailable;
  });
  LoopThread loop(processor, *mailbox);
  ASSERT_TRUE(waiting.WaitFor());
  EXPECT_TRUE(mailbox->Close().empty());
  ASSERT_TRUE(loop.WaitDone());
  EXPECT_EQ(loop.status(),
            Aborted("the task mailbox was closed while its mailbox loop was running"));
}

TEST(MailboxOnlyInputWaiter, ReturnsWhenMailArrivesFromAnotherThread) {
  auto mailbox = NewMailbox();
  MailboxOnlyInputWaiter waiter;
  Notification returned;
  Status wait_status = Internal("not set");
  std::thread t([&] {
    wait_status = waiter.Wait(std::nullopt, mailbox->fd());  // no timeout
    returned.Notify();
  });
  ASSERT_OK(mailbox->Put([] {}, "wake"));
  const bool woke = returned.WaitFor();
  if (!woke) mailbox->Close();  // unblock before join
  t.join();
  ASSERT_TRUE(woke);
  EXPECT_OK(wait_status);
  EXPECT_TRUE(mailbox->HasMail());  // waiting does not consume mail
}

TEST(MailboxOnlyInputWaiter, ReturnsAtOnceWhenMailIsPendingOrTheTimeoutIsZero) {
  auto mailbox = NewMailbox();
  MailboxOnlyInputWaiter waiter;
  EXPECT_OK(waiter.Wait(Duration::Millis(0), mailbox->fd()));
  ASSERT_OK(mailbox->Put([] {}, "pending"));
  EXPECT_OK(waiter.Wait(std::nullopt, mailbox->fd()));
}

}  // namespace
}  // namespace keyflow
