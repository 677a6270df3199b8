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

#include "common/field_tape_writer.h"
#include "common/file_io.h"
#include "common/job_library/job_library.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/shuffle/shuffle_test_util.h"
#include "worker/sinks/builtin_sink.h"
#include "worker/task/keyed_task.h"

namespace keyflow {
namespace {

constexpr auto kWait = std::chrono::seconds(10);

class KeyedTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    zmq_ = ZmqContext::Create().value();
    StartTask(std::nullopt);
  }

  // A keyed task of count-window (or of `function`, with the declared `fields`) over all key
  // groups, restored from `restore` if set.
  void StartTask(std::optional<RestoreAssignment> restore,
                 std::unique_ptr<RecordFunction> function = nullptr,
                 std::vector<std::string> fields = {}) {
    DeployTask d;
    d.restore = std::move(restore);
    d.attempt = AttemptNumber(1);
    d.job_id = "job-1";
    d.spec.job_name = "count-window";
    auto library = LoadDefaultJobLibrary().value();
    d.spec.params = ResolveJobParams(*library->FindJob(d.spec.job_name).value(), {})->values();
    d.spec.parallelism = 1;
    d.spec.max_parallelism = testing::kMaxParallelism;
    d.spec.key_type = KeyType::kLong;
    d.spec.checkpoint_interval_ms = 500;  // checkpointing on: the task waits for the final one
    d.spec.reads_fields = !fields.empty();
    d.spec.fields = std::move(fields);
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
      EXPECT_OK(part);
      done_.insert(id.value());
      if (part.ok()) sync_us_[id.value()] = part->sync_duration_us;
      if (part.ok()) parts_[id.value()] = *part;
      cv_.notify_all();
    };
    cb.input_ended = [this] {
      std::lock_guard<std::mutex> lock(mu_);
      input_ended_ = true;
      cv_.notify_all();
    };
    if (!function) function = CreateBuiltInJobFunction(d.spec.job_name, d.spec.params).value();
    task_ = KeyedTask::Create(d, std::move(gate), std::move(function), PrintSinkWriter(PrintSink()),
                              &clock_, &metrics_, std::move(cb), "")
                .value();
    run_ = std::async(std::launch::async, [this] { return task_->Run(); });
  }

  void TearDown() override { StopTask(); }

  void StopTask() {
    task_->Cancel();
    run_.wait();
  }

  // Announces checkpoint `id` (incremental into shared_ if `incremental`), sends its barrier
  // after the records emitted so far, and waits for the snapshot.
  void CheckpointWithBarrier(int64_t id, bool incremental,
                             CheckpointType type = CheckpointType::kCheckpoint) {
    const std::string dir = tmp_.path() + "/chk-" + std::to_string(id);
    ASSERT_OK(CreateDirectories(dir));
    ASSERT_OK(CreateDirectories(shared_));
    TriggerCheckpoint t{AttemptNumber(1), CheckpointId(id), 0, type, dir};
    t.incremental = incremental;
    t.shared_directory = shared_;
    ASSERT_OK(task_->AnnounceCheckpoint(t));
    ASSERT_OK(writer_->BroadcastEvent(ChannelEvent::Barrier(CheckpointId(id), clock_.Now())));
    ASSERT_OK(writer_->Flush());  // a frame may wait in the writer's queue until then
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kWait, [&] { return done_.count(id) != 0; }))
        << "checkpoint " << id << " was never snapshotted";
  }

  void Emit(std::initializer_list<int64_t> keys) {
    for (int64_t k : keys) {
      ASSERT_OK(writer_->Emit(testing::LongKeyRecord(k, Timestamp(1'000'000)), clock_.Now()));
    }
  }

  // A restore of checkpoint `id` (of CheckpointWithBarrier) from its handle `h`.
  RestoreAssignment RestoreOf(int64_t id, const KeyGroupsStateHandle& h) {
    RestoreAssignment r;
    r.checkpoint = CheckpointId(id);
    r.checkpoint_dir = tmp_.path() + "/chk-" + std::to_string(id);
    r.keyed_state = {h};
    r.shared_dir = shared_;
    return r;
  }

  KeyedCheckpointPart Part(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return parts_.at(id);
  }

  void EndInput() {
    ASSERT_OK(writer_->BroadcastEvent(ChannelEvent::EndOfInput()));
    ASSERT_OK(writer_->Close());
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, kWait, [&] { return input_ended_; })) << "input never ended";
  }

  // Announces checkpoint `id` of `type` and waits until the subtask's snapshot is written.
  void Checkpoint(int64_t id, CheckpointType type) {
    const std::string dir = tmp_.path() + "/chk-" + std::to_string(id);
    ASSERT_OK(CreateDirectories(dir));
    ASSERT_OK(task_->AnnounceCheckpoint(
        TriggerCheckpoint{AttemptNumber(1), CheckpointId(id), 0, type, dir}));
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
  std::map<int64_t, KeyedCheckpointPart> parts_;
  const std::string shared_ = tmp_.path() + "/shared";
  bool input_ended_ = false;
};

// Reads the integer field `note` of every record and throws the read's error (the way a job
// fails on a record it cannot use).
class ReadsNote final : public RecordFunction {
 public:
  void ProcessElement(const Record& r, Context&, Collector<OutputRecord>&) override {
    Result<int64_t> note = r.GetInt64("note");
    if (!note.ok()) throw std::runtime_error("record 1 is bad: " + note.status().message());
  }
};

TEST_F(KeyedTaskTest, AFieldTheJobDidNotDeclareIsNamedAsDroppedByTheProjection) {
  StopTask();
  StartTask(std::nullopt, std::make_unique<ReadsNote>(), {"uid", "amount"});
  std::string tape;
  FieldTapeWriter w(&tape);
  w.BeginObject();
  w.Name("uid");
  w.Int(7);
  w.EndObject();
  Record r = testing::LongKeyRecord(7, Timestamp(1'000'000));
  r.fields = tape;
  ASSERT_OK(writer_->Emit(r, clock_.Now()));
  ASSERT_OK(writer_->Flush());
  ASSERT_EQ(run_.wait_for(kWait), std::future_status::ready) << "the task never failed";
  Status s = run_.get();
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("record 1 is bad: field 'note' is missing (the job declares the "
                             "fields it reads, JobDefinition::fields: 'uid', 'amount'; the "
                             "sources drop every other field before the shuffle: add 'note' to "
                             "the fields the job's definition returns)"),
            std::string::npos)
      << s.ToString();
  run_ = std::async(std::launch::async, [] { return Status::Ok(); });  // for TearDown
}

TEST_F(KeyedTaskTest, APeriodicCheckpointAfterTheEndOfInputDoesNotFinishTheSubtask) {
  EndInput();
  Checkpoint(1, CheckpointType::kCheckpoint);
  ASSERT_OK(task_->NotifyCheckpointComplete(CheckpointId(1)));
  // The subtask is still there: it snapshots the final checkpoint triggered later (the old
  // code had finished and the worker answered the final trigger with a decline of subtask -1).
  Checkpoint(2, CheckpointType::kFinal);
  EXPECT_FALSE(Finished());
  ASSERT_OK(task_->NotifyCheckpointComplete(CheckpointId(2)));
  ASSERT_EQ(run_.wait_for(kWait), std::future_status::ready) << "the final checkpoint's "
                                                                "completion did not finish it";
  Status s = run_.get();
  EXPECT_OK(s);
  run_ = std::async(std::launch::deferred, [] { return Status::Ok(); });
}

TEST_F(KeyedTaskTest, TheFinalCheckpointFinishesTheSubtaskOnlyWhenItCompletes) {
  EndInput();
  Checkpoint(1, CheckpointType::kFinal);
  ASSERT_OK(task_->NotifyCheckpointAborted(CheckpointId(1), "declined elsewhere"));
  Checkpoint(2, CheckpointType::kFinal);  // the coordinator triggers the final one again
  EXPECT_FALSE(Finished());
  ASSERT_OK(task_->NotifyCheckpointComplete(CheckpointId(2)));
  ASSERT_EQ(run_.wait_for(kWait), std::future_status::ready);
  Status s = run_.get();
  EXPECT_OK(s);
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
    ASSERT_OK(writer_->Emit(testing::LongKeyRecord(i, Timestamp(1'000'000)), clock_.Now()));
  }
  ASSERT_OK(writer_->AddLatencyMarker(clock_.EpochMicros() - 7'000, clock_.Now()));
  EndInput();
  EXPECT_EQ(metrics_.records_processed.value(), 5);
  LatencySummary l = metrics_.latency.Summarize(clock_.Now());
  EXPECT_EQ(l.count, 1u);
  EXPECT_EQ(l.sum_us, 7'000);
  EXPECT_EQ(l.p50_us, 7'000);
  EXPECT_EQ(l.p999_us, 7'000);
  EXPECT_EQ(metrics_.Snapshot(clock_.Now()).latency.p99_us, 7'000);
}

KeyGroupId GroupOf(int64_t key) {
  return testing::LongKeyRecord(key).key_group;
}

TEST_F(KeyedTaskTest, AnIncrementalCheckpointWritesOnlyTheKeyGroupsChangedSinceTheCompletedBase) {
  Emit({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  CheckpointWithBarrier(1, /*incremental=*/true);
  const KeyedCheckpointPart first = Part(1);
  // No base: one new shared file with every key group.
  ASSERT_EQ(first.keyed_state.shared_files.size(), 1u);
  EXPECT_TRUE(first.keyed_state.path.empty());
  EXPECT_EQ(first.keyed_state.block_file, std::vector<uint32_t>(testing::kMaxParallelism, 0));
  const SharedStateFile f1 = first.keyed_state.shared_files[0];
  EXPECT_EQ(f1.name.size(), 32 + std::string("-1-0.kgs").size()) << f1.name;
  EXPECT_EQ(ReadFileToString(shared_ + "/" + f1.name)->size(), f1.size);
  EXPECT_EQ(first.written_bytes, f1.size);
  EXPECT_TRUE(first.incremental);

  ASSERT_OK(task_->NotifyCheckpointComplete(CheckpointId(1)));
  Emit({5});  // one key, one key group
  CheckpointWithBarrier(2, /*incremental=*/true);
  const KeyedCheckpointPart second = Part(2);
  ASSERT_EQ(second.keyed_state.shared_files.size(), 2u);
  const SharedStateFile f2 = second.keyed_state.shared_files[0];
  EXPECT_EQ(second.keyed_state.shared_files[1].name, f1.name);
  std::vector<int32_t> new_blocks;
  for (int32_t g = 0; g < testing::kMaxParallelism; ++g) {
    if (second.keyed_state.block_file[g] == 0) new_blocks.push_back(g);
  }
  EXPECT_EQ(new_blocks, std::vector<int32_t>{GroupOf(5).value()});
  EXPECT_EQ(second.written_bytes, f2.size);
  EXPECT_LT(second.written_bytes, first.written_bytes);
  // Unchanged key groups point at checkpoint 1's blocks.
  const int32_t other = GroupOf(9).value();
  EXPECT_EQ(second.keyed_state.offsets[other], first.keyed_state.offsets[other]);
  EXPECT_EQ(second.keyed_state.keys[other], first.keyed_state.keys[other]);

  // 2 does not complete: 3 still has base 1, so key group of 5 is written again, with 7's.
  Emit({7});
  CheckpointWithBarrier(3, /*incremental=*/true);
  const KeyedCheckpointPart third = Part(3);
  std::set<int32_t> third_new;
  for (int32_t g = 0; g < testing::kMaxParallelism; ++g) {
    if (third.keyed_state.block_file[g] == 0) third_new.insert(g);
  }
  EXPECT_EQ(third_new, (std::set<int32_t>{GroupOf(5).value(), GroupOf(7).value()}));
  EXPECT_EQ(third.keyed_state.shared_files.size(), 2u);
  EXPECT_EQ(third.keyed_state.shared_files[1].name, f1.name);

  // Completed, and nothing changed since: no new file at all, every block referenced.
  ASSERT_OK(task_->NotifyCheckpointComplete(CheckpointId(3)));
  CheckpointWithBarrier(4, /*incremental=*/true);
  const KeyedCheckpointPart fourth = Part(4);
  EXPECT_EQ(fourth.written_bytes, 0u);
  EXPECT_EQ(fourth.keyed_state.shared_files.size(), 2u);
  EXPECT_EQ(fourth.keyed_state.size, 0u);

  // A non-incremental trigger writes the full file into its checkpoint directory.
  CheckpointWithBarrier(5, /*incremental=*/false);
  const KeyedCheckpointPart fifth = Part(5);
  EXPECT_FALSE(fifth.keyed_state.incremental());
  EXPECT_EQ(fifth.keyed_state.path, "subtask-0.kgs");
  EXPECT_EQ(fifth.written_bytes, fifth.keyed_state.size);
  EXPECT_FALSE(fifth.incremental);
}

TEST_F(KeyedTaskTest, AnIncrementalCheckpointRestoresToTheSameStateAsAFullOne) {
  Emit({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CheckpointWithBarrier(1, /*incremental=*/true);
  ASSERT_OK(task_->NotifyCheckpointComplete(CheckpointId(1)));
  Emit({5, 6, 40});
  CheckpointWithBarrier(2, /*incremental=*/true);
  CheckpointWithBarrier(3, /*incremental=*/false);  // full: the same state
  const KeyGroupsStateHandle incremental = Part(2).keyed_state;
  ASSERT_EQ(incremental.shared_files.size(), 2u);
  const std::string full = *ReadFileToString(tmp_.path() + "/chk-3/subtask-0.kgs");
  StopTask();

  StartTask(RestoreOf(2, incremental));
  CheckpointWithBarrier(4, /*incremental=*/false);
  EXPECT_EQ(*ReadFileToString(tmp_.path() + "/chk-4/subtask-0.kgs"), full)
      << "the restored state differs from the state the checkpoint was taken of";
  // After a restore there is no base: the first incremental checkpoint writes everything.
  CheckpointWithBarrier(5, /*incremental=*/true);
  EXPECT_EQ(Part(5).keyed_state.shared_files.size(), 1u);
}

TEST_F(KeyedTaskTest, ADamagedSharedFileFailsTheRestoreWithCorruptionNamingIt) {
  Emit({1, 2, 3});
  CheckpointWithBarrier(1, /*incremental=*/true);
  const KeyGroupsStateHandle h = Part(1).keyed_state;
  StopTask();
  const std::string path = shared_ + "/" + h.shared_files[0].name;
  std::string bytes = *ReadFileToString(path);
  bytes[bytes.size() / 2] ^= 0x40;  // same size, other content
  ASSERT_OK(WriteFileAtomically(path, bytes));

  StartTask(RestoreOf(1, h));
  ASSERT_EQ(run_.wait_for(kWait), std::future_status::ready);
  Status s = run_.get();
  run_ = std::async(std::launch::deferred, [] { return Status::Ok(); });
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("shared state file " + path + " does not match"), std::string::npos)
      << s.message();
  EXPECT_TRUE(task_->restore_corrupted());
}

}  // namespace
}  // namespace keyflow
