// SourceTask's teardown order: a reader may call its context's wake_up from threads of its own
// (the Kafka consumer's callback does) until the reader is destroyed, so the task destroys the
// reader while its mailbox still exists. Under ASan a wrong order is a heap-use-after-free
// here; in a release build it was a worker hanging on a freed mutex during a rescale.
#include "worker/task/source_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

// Calls wake_up once more from its destructor, as a client thread still running then would.
class WakingReader final : public SourceReader {
 public:
  WakingReader(std::function<void()> wake_up, std::atomic<int>* destroyed)
      : wake_up_(std::move(wake_up)), destroyed_(destroyed) {}
  ~WakingReader() override {
    wake_up_();
    destroyed_->fetch_add(1);
  }
  Status AddSplits(std::vector<SourceSplitState>) override { return Status::Ok(); }
  void NotifyNoMoreSplits() override {}
  Result<PollResult> PollNext(ReaderOutput&) override { return PollResult::End(); }
  std::vector<SourceSplitState> SnapshotState(std::optional<CheckpointId>) override { return {}; }

 private:
  std::function<void()> wake_up_;
  std::atomic<int>* destroyed_;
};

TEST(SourceTaskTest, AReaderMayWakeTheTaskUntilTheReaderIsDestroyed) {
  DeployTask deployment;
  deployment.spec.parallelism = 1;
  ManualClock clock(Timestamp(0));
  TaskMetrics metrics;
  std::atomic<int> destroyed{0};
  SourceReaderFactory create = [&](const SourceReaderContext& context) {
    context.wake_up();  // a wake-up before the first poll is fine too
    return Result<std::unique_ptr<SourceReader>>(
        std::make_unique<WakingReader>(context.wake_up, &destroyed));
  };
  Result<std::unique_ptr<SourceTask>> task = SourceTask::Create(
      deployment, create, {}, /*no_more_splits=*/true, nullptr, &clock, &metrics);
  ASSERT_OK(task);
  task->reset();
  EXPECT_EQ(destroyed.load(), 1);
}

}  // namespace
}  // namespace keyflow
