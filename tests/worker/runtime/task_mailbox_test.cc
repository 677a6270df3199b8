#include "worker/runtime/task_mailbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/status_matchers.h"
#include "tests/worker/runtime/notification.h"

namespace keyflow {
namespace {

using ::testing::ElementsAre;

bool Readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
}

std::unique_ptr<TaskMailbox> NewMailbox() {
  auto mailbox = TaskMailbox::Create();
  KF_CHECK(mailbox.ok()) << mailbox.status().ToString();
  return std::move(mailbox).value();
}

// Takes every queued mail, running it, and returns the descriptions in order.
std::vector<std::string> TakeAll(TaskMailbox& mailbox) {
  std::vector<std::string> taken;
  while (std::optional<Mail> mail = mailbox.TryTake()) {
    mail->action();
    taken.push_back(mail->description);
  }
  return taken;
}

TEST(TaskMailbox, TakesMailInFifoOrder) {
  auto mailbox = NewMailbox();
  std::vector<int> ran;
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(mailbox->Put([&ran, i] { ran.push_back(i); }, "mail " + std::to_string(i)));
  }
  EXPECT_EQ(mailbox->size(), 5u);
  EXPECT_THAT(TakeAll(*mailbox), ElementsAre("mail 0", "mail 1", "mail 2", "mail 3", "mail 4"));
  EXPECT_THAT(ran, ElementsAre(0, 1, 2, 3, 4));
  EXPECT_FALSE(mailbox->TryTake().has_value());
  EXPECT_FALSE(mailbox->HasMail());
}

TEST(TaskMailbox, PutFirstJumpsTheQueue) {
  auto mailbox = NewMailbox();
  ASSERT_OK(mailbox->Put([] {}, "a"));
  ASSERT_OK(mailbox->Put([] {}, "b"));
  ASSERT_OK(mailbox->PutFirst(Mail{[] {}, "urgent"}));
  EXPECT_THAT(TakeAll(*mailbox), ElementsAre("urgent", "a", "b"));
}

TEST(TaskMailbox, FdIsReadableExactlyWhileMailIsPending) {
  auto mailbox = NewMailbox();
  EXPECT_FALSE(Readable(mailbox->fd()));
  ASSERT_OK(mailbox->Put([] {}, "a"));
  EXPECT_TRUE(Readable(mailbox->fd()));
  ASSERT_OK(mailbox->Put([] {}, "b"));
  EXPECT_TRUE(Readable(mailbox->fd()));
  ASSERT_TRUE(mailbox->TryTake().has_value());
  EXPECT_TRUE(Readable(mailbox->fd()));  // "b" still pending
  ASSERT_TRUE(mailbox->TryTake().has_value());
  EXPECT_FALSE(Readable(mailbox->fd()));
  ASSERT_OK(mailbox->PutFirst(Mail{[] {}, "c"}));
  EXPECT_TRUE(Readable(mailbox->fd()));
  ASSERT_TRUE(mailbox->TryTake().has_value());
  EXPECT_FALSE(Readable(mailbox->fd()));
}

TEST(TaskMailbox, CloseHandsOutQueuedMailAndRejectsLaterPuts) {
  auto mailbox = NewMailbox();
  ASSERT_OK(mailbox->Put([] {}, "first"));
  ASSERT_OK(mailbox->Put([] {}, "second"));
  std::vector<Mail> remaining = mailbox->Close();
  ASSERT_EQ(remaining.size(), 2u);
  EXPECT_EQ(remaining[0].description, "first");
  EXPECT_EQ(remaining[1].description, "second");
  EXPECT_TRUE(mailbox->is_closed());
  EXPECT_FALSE(mailbox->HasMail());
  EXPECT_FALSE(mailbox->TryTake().has_value());

  Status put = mailbox->Put([] {}, "late snapshot ack");
  EXPECT_EQ(put.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(put.message(),
            "the task mailbox is closed (the task is finishing "
            "or cancelled); mail 'late snapshot "
            "ack' was not accepted");
  EXPECT_EQ(mailbox->PutFirst(Mail{[] {}, "x"}).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Readable(mailbox->fd()));  // stays readable: a blocked loop wakes and ends
  EXPECT_TRUE(mailbox->Close().empty());
}

TEST(TaskMailbox, CloseOfAnEmptyMailboxMakesTheFdReadable) {
  auto mailbox = NewMailbox();
  EXPECT_TRUE(mailbox->Close().empty());
  EXPECT_TRUE(Readable(mailbox->fd()));
}

TEST(TaskMailbox, ConcurrentProducersLoseNothingAndKeepTheirOwnOrder) {
  auto mailbox = NewMailbox();
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 10000;
  std::vector<std::vector<int>> seen(kProducers);  // touched by the consumer only
  std::thread consumer([&] {
    int taken = 0;
    while (taken < kProducers * kPerProducer) {
      pollfd pfd{mailbox->fd(), POLLIN, 0};
      const int rc = ::poll(&pfd, 1, 20000);  // blocks until a producer signals
      if (rc <= 0) {
        ADD_FAILURE() << "mail lost: the fd never became readable, taken " << taken;
        return;
      }
      while (std::optional<Mail> mail = mailbox->TryTake()) {
        mail->action();
        ++taken;
      }
    }
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        ASSERT_OK(mailbox->Put([&seen, p, i] { seen[p].push_back(i); }, "m"));
      }
    });
  }
  for (auto& t : producers) t.join();
  consumer.join();
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(kPerProducer));
    for (int i = 0; i < kPerProducer; ++i) ASSERT_EQ(seen[p][i], i) << "producer " << p;
  }
  EXPECT_FALSE(Readable(mailbox->fd()));
}

}  // namespace
}  // namespace keyflow
