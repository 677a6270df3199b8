// KeyedTask and the end-of-input protocol (issue 9, "a job can hang in FINISHING"): after its
// input ended, a subtask commits and finishes only when a checkpoint the coordinator designated
// final (CheckpointType::kFinal) completes; a periodic checkpoint taken after the end only
// commits. Driven through the public mail methods with a real loopback gate and a manual clock;
// every wait is on a condition with a timeout.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "common/file_io.h"
#include "tests/worker/shuffle/shuffle_test_util.h"
#include "worker/job_library/job_library.h"
#include "worker/task/keyed_task.h"

namespace keyflow {
namespace {

constexpr auto kWait = std::chrono::seconds(10);

class KeyedTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    zmq_ = ZmqContext::Create().value();
    DeployTask d;
    d.attempt = AttemptNumber(1);
    d.job_id = "job-1";
    d.spec.job_name = "count-window";
    auto library = LoadDefaultJobLibrary().value();
    d.spec.params = ResolveJobParams(*library->FindJob(d.spec.job_name).value(), {})->values();
    d.spec.parallelism = 1;
    d.spec.max_parallelism = testing::kMaxParallelism;
    d.spec.key_type = KeyType::kLong;
    d.spec.checkpoint_interval_ms = 500;  // checkpointing on: the task waits for the final one
    d.subtask = SubtaskIndex(0);
    d.key_groups = KeyGroupRange::Of(0, testing::kMaxParallelism - 1);
    InputGateOptions go = testing::GateOptions(SubtaskIndex(0), 1);
    go.key_groups = d.key_groups;
    go.clock = &clock_;
    auto gate = InputGate::Create(*zmq_, go).value();
    InputGate* gate_ptr = gate.get();
    writer_ =
        RecordWriter::Create(*zmq_, testing::WriterOptions(SubtaskIndex(0), {gate_ptr})).value();
    KeyedTask::Callbacks cb;
    cb.checkpoint_done = [this](CheckpointId id, Result<KeyedCheckpointPart> part) {
      std::lock_guard<std::mutex> lock(mu_);
      EXPECT_TRUE(part.ok()) << part.status().ToString();
      done_.insert(id.value());
      if (part.ok()) sync_us_[id.value()] = part->sync_duration_us;
      cv_.notify_all();
    };
    cb.input_ended = [this] {
      std::lock_guard<std::mutex> lock(mu_);
      input_ended_ = true;
      cv_.notify_all();
    };
    task_ = KeyedTask::Create(d, std::move(gate),
                              CreateBuiltInJobFunction(d.spec.job_name, d.spec.params).value(),
                              std::nullopt, &clock_, &metrics_, std::move(cb))
                .value();
    run_ = std::async(std::launch::async, [this] { return task_->Run(); });
  }

  void TearDown() override {
    task_->Cancel();
    run_.wait();
  }

  void EndInput() {
    ASSERT_TRUE(writer_->BroadcastEvent(ChannelEvent::EndOfInput()).ok());
    ASSERT_TRUE(writer_->Close().ok());
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kWait, [&] { return input_ended_; })) << "input never ended";
  }

  // Announces checkpoint `id` of `type` and waits until the subtask's snapshot is written.
  void Checkpoint(int64_t id, CheckpointType type) {
    const std::string dir = tmp_.path() + "/chk-" + std::to_string(id);
    ASSERT_TRUE(CreateDirectories(dir).ok());
    ASSERT_TRUE(task_
                    ->AnnounceCheckpoint(
                        TriggerCheckpoint{AttemptNumber(1), CheckpointId(id), 0, type, dir})
                    .ok());
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kWait, [&] { return done_.count(id) != 0; }))
        << "checkpoint " << id << " was never snapshotted (did the subtask end?)";
  }

  bool Finished() { return run_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

  TempDir tmp_{"keyed-task-test"};
  ManualClock clock_{Timestamp(1'000'000)};
  TaskMetrics metrics_;
  std::unique_ptr<ZmqContext> zmq_;
  std::unique_ptr<RecordWriter> writer_;
  std::unique_ptr<KeyedTask> task_;
  std::future<Status> run_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int64_t> done_;
  std::map<int64_t, int64_t> sync_us_;
  bool input_ended_ = false;
};

TEST_F(KeyedTaskTest, APeriodicCheckpointAfterTheEndOfInputDoesNotFinishTheSubtask) {
  EndInput();
  Checkpoint(1, CheckpointType::kCheckpoint);
  ASSERT_TRUE(task_->NotifyCheckpointComplete(CheckpointId(1)).ok());
  // The subtask is still there: it snapshots the final checkpoint triggered later (the old
  // code had finished and the worker answered the final trigger with a decline of subtask -1).
  Checkpoint(2, CheckpointType::kFinal);
  EXPECT_FALSE(Finished());
  ASSERT_TRUE(task_->NotifyCheckpointComplete(CheckpointId(2)).ok());
  ASSERT_EQ(run_.wait_for(kWait), std::future_status::ready) << "the final checkpoint's "
                                                                "completion did not finish it";
  Status s = run_.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
  run_ = std::async(std::launch::deferred, [] { return Status::Ok(); });
}

TEST_F(KeyedTaskTest, TheFinalCheckpointFinishesTheSubtaskOnlyWhenItCompletes) {
  EndInput();
  Checkpoint(1, CheckpointType::kFinal);
  ASSERT_TRUE(task_->NotifyCheckpointAborted(CheckpointId(1), "declined elsewhere").ok());
  Checkpoint(2, CheckpointType::kFinal);  // the coordinator triggers the final one again
  EXPECT_FALSE(Finished());
  ASSERT_TRUE(task_->NotifyCheckpointComplete(CheckpointId(2)).ok());
  ASSERT_EQ(run_.wait_for(kWait), std::future_status::ready);
  Status s = run_.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
  run_ = std::async(std::launch::deferred, [] { return Status::Ok(); });
}

TEST_F(KeyedTaskTest, DurationsComeFromTheInjectedClock) {
  // The manual clock does not move, so the synchronous pause measured with it is exactly 0
  // (with steady_clock it was a few microseconds).
  EndInput();
  Checkpoint(1, CheckpointType::kCheckpoint);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(sync_us_.at(1), 0);
}

TEST_F(KeyedTaskTest, ALatencyMarkerIsRecordedWithTheInjectedClockAfterTheRecordsBeforeIt) {
  // Five records, then a marker made 7 ms before the (manual, unmoving) clock's now, then the
  // end of input: the channel delivers the batch of five, then the marker; when the task reaches
  // it, now - marked time = 7000 us exactly.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(writer_->Emit(testing::LongKeyRecord(i, Timestamp(1'000'000)), clock_.Now()).ok());
  }
  ASSERT_TRUE(writer_->AddLatencyMarker(clock_.EpochMicros() - 7'000, clock_.Now()).ok());
  EndInput();
  EXPECT_EQ(metrics_.records_processed.value(), 5);
  LatencySummary l = metrics_.latency.Summarize(clock_.Now());
  EXPECT_EQ(l.count, 1u);
  EXPECT_EQ(l.sum_us, 7'000);
  EXPECT_EQ(l.p50_us, 7'000);
  EXPECT_EQ(l.p999_us, 7'000);
  EXPECT_EQ(metrics_.Snapshot(clock_.Now()).latency.p99_us, 7'000);
}

}  // namespace
}  // namespace keyflow
