// A keyed subtask's checkpoint, as worker/task/keyed_task.cc takes it: the
// synchronous part on the task thread, then the asynchronous write of the state file by a helper
// thread while the task thread goes on. The subtask runs count-window (event time, count 500,
// timeout 12 h) through KeyedProcessOperator over all M = 128 key groups and holds 1 M keys of
// state and 1 M event-time timers (one open window per key, keys "uid-%08d", 12 bytes).
//
//   build/bin/checkpoint_bench    (targets: sync part <= 10 ms, async write <= 500 ms)
//
//   BM_CheckpointSyncPart        construct the AsyncKeyedSnapshot + install it as the write guard
//                                (manual time, per checkpoint)
//   BM_CheckpointAsyncWrite      the helper thread's work with an idle task thread: WriteTo
//                                through a 1 MiB buffer into a file, fdatasync, close
//   BM_ProcessRecords            the task thread's record rate without a checkpoint (baseline)
//   BM_CheckpointWhileProcessing both at once: the task thread processes records (each updates
//                                its key's window, i.e. writes its key group) until the file is
//                                written. Counters: async_ms (write to close), task_rate
//                                (records/s during the write), extra_task_ms (task-thread time
//                                beyond what those records cost at the baseline rate: the
//                                copy-on-write copies in BeforeWrite), kg_by_task (key
//                                groups the task thread copied itself), max_stall_ms (the
//                                slowest batch of 64 records).
// The file goes to $TMPDIR (default /tmp); set TMPDIR to the checkpoint disk to measure that.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/file_io.h"
#include "common/job_library/job_library.h"
#include "common/key_group_assignment.h"
#include "common/processing_time_service.h"
#include "state/snapshot/async_keyed_snapshot.h"
#include "worker/operators/keyed_process_operator.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;
constexpr int64_t kNumKeys = 1'000'000;
constexpr int64_t kStartMs = 1'700'000'000'000;
constexpr size_t kWriteBuffer = 1 << 20;  // as keyed_task.cc
constexpr int kStallBatch = 64;
const KeyGroupRange kAllKeyGroups = KeyGroupRange::Of(0, kMaxParallelism - 1);

using Clock = std::chrono::steady_clock;
double MillisSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void CheckOk(const Status& s) {
  if (!s.ok()) [[unlikely]] {
    std::fprintf(stderr, "checkpoint_bench: %s\n", s.ToString().c_str());
    std::abort();
  }
}

struct DiscardCollector final : Collector<OutputRecord> {
  void Collect(OutputRecord) override { ++lines; }
  int64_t lines = 0;
};

// One record per key, keys in a pseudo-random order (`seed`), timestamps from `first_ts` on.
std::vector<Record> OnePerKey(uint64_t seed, int64_t first_ts) {
  std::vector<int64_t> ids(kNumKeys);
  for (int64_t i = 0; i < kNumKeys; ++i) ids[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  std::vector<Record> records;
  records.reserve(ids.size());
  char buf[32];
  for (size_t i = 0; i < ids.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "uid-%08lld", static_cast<long long>(ids[i]));
    Key key = Key::FromBytes(buf);
    const KeyGroupId g = assigner.Assign(key);
    records.push_back(Record{std::move(key), g, Timestamp(first_ts + static_cast<int64_t>(i)), {}});
  }
  return records;
}

// The keyed subtask: count-window in event time, 1 M open windows (1 M keys, 1 M timers).
struct KeyedSubtask {
  KeyedSubtask() {
    auto fn = CreateBuiltInJobFunction("count-window", {{"time", "event"}});
    CheckOk(fn.status());
    OperatorConfig config;
    config.max_parallelism = kMaxParallelism;
    config.key_type = KeyType::kString;
    config.key_groups = kAllKeyGroups;
    op = std::make_unique<KeyedProcessOperator>(config, std::move(fn).value(), &clock, &output);
    CheckOk(op->Open());
    op->Start();
    for (const Record& r : OnePerKey(1, kStartMs)) CheckOk(op->ProcessElement(r));
    // Later records of the same keys: each adds 1 to its open window (no new timer).
    stream = OnePerKey(2, kStartMs + kNumKeys);
  }
  // Processes the next record of the stream (wrapping around).
  void ProcessNext() {
    CheckOk(op->ProcessElement(stream[next]));
    if (++next == stream.size()) next = 0;
  }

  ManualProcessingTimeService clock;
  DiscardCollector output;
  std::unique_ptr<KeyedProcessOperator> op;
  std::vector<Record> stream;
  size_t next = 0;
};

KeyedSubtask& Subtask() {
  static KeyedSubtask* s = new KeyedSubtask();
  return *s;
}

// The synchronous part of KeyedTask::TakeSnapshot.
std::unique_ptr<AsyncKeyedSnapshot> BeginSnapshot(KeyedSubtask& s) {
  auto snapshot = std::make_unique<AsyncKeyedSnapshot>(kMaxParallelism, KeyType::kString,
                                                       kAllKeyGroups, s.op->snapshot_sections());
  s.op->SetWriteGuard(snapshot.get());
  return snapshot;
}

// The helper thread's part: buffered file writes, fdatasync, close. Returns the file size.
uint64_t WriteSnapshotFile(AsyncKeyedSnapshot& snapshot, const std::string& path) {
  auto info = snapshot.WriteToFile(FileSystem::Default(), path, kWriteBuffer);
  CheckOk(info.status());
  return info->file_size;
}

void BM_CheckpointSyncPart(benchmark::State& state) {
  KeyedSubtask& s = Subtask();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    std::unique_ptr<AsyncKeyedSnapshot> snapshot = BeginSnapshot(s);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    s.op->SetWriteGuard(nullptr);  // abandoned unwritten: nothing else refers to it
  }
}
BENCHMARK(BM_CheckpointSyncPart)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CheckpointAsyncWrite(benchmark::State& state) {
  KeyedSubtask& s = Subtask();
  TempDir dir("checkpoint_bench");
  const std::string path = dir.File("state");
  int64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<AsyncKeyedSnapshot> snapshot = BeginSnapshot(s);
    state.ResumeTiming();
    std::thread writer([&] { bytes += static_cast<int64_t>(WriteSnapshotFile(*snapshot, path)); });
    writer.join();
    state.PauseTiming();
    s.op->SetWriteGuard(nullptr);
    snapshot.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(bytes);
  state.counters["file_MB"] =
      static_cast<double>(bytes) / 1e6 / static_cast<double>(state.iterations());
}
BENCHMARK(BM_CheckpointAsyncWrite)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

// Records/s of the task thread without a checkpoint (the baseline of extra_task_ms).
double BaselineRecordsPerSecond(KeyedSubtask& s) {
  constexpr int64_t kRecords = 1'000'000;
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < kRecords; ++i) s.ProcessNext();
  return kRecords / (MillisSince(t0) / 1e3);
}

void BM_ProcessRecords(benchmark::State& state) {
  KeyedSubtask& s = Subtask();
  for (auto _ : state) s.ProcessNext();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ProcessRecords)->Iterations(2'000'000)->Unit(benchmark::kNanosecond);

void BM_CheckpointWhileProcessing(benchmark::State& state) {
  KeyedSubtask& s = Subtask();
  TempDir dir("checkpoint_bench");
  const std::string path = dir.File("state");
  double async_ms = 0, task_ms = 0, extra_ms = 0, max_stall_ms = 0;
  int64_t records = 0, by_task = 0;
  for (auto _ : state) {
    const double base_rate = BaselineRecordsPerSecond(s);
    std::unique_ptr<AsyncKeyedSnapshot> snapshot = BeginSnapshot(s);
    std::atomic<bool> done{false};
    double write_ms = 0;
    const auto t0 = Clock::now();
    std::thread writer([&] {
      WriteSnapshotFile(*snapshot, path);
      write_ms = MillisSince(t0);
      done.store(true, std::memory_order_release);
    });
    int64_t n = 0;
    while (!done.load(std::memory_order_acquire)) {
      const auto b0 = Clock::now();
      for (int i = 0; i < kStallBatch; ++i) s.ProcessNext();
      n += kStallBatch;
      max_stall_ms = std::max(max_stall_ms, MillisSince(b0));
    }
    const double elapsed_ms = MillisSince(t0);
    writer.join();
    s.op->SetWriteGuard(nullptr);
    async_ms += write_ms;
    task_ms += elapsed_ms;
    extra_ms += elapsed_ms - static_cast<double>(n) / base_rate * 1e3;
    records += n;
    by_task += snapshot->serialized_by_task_thread();
  }
  const auto it = static_cast<double>(state.iterations());
  state.counters["async_ms"] = async_ms / it;
  state.counters["task_rate"] = static_cast<double>(records) / (task_ms / 1e3);
  state.counters["extra_task_ms"] = extra_ms / it;
  state.counters["kg_by_task"] = static_cast<double>(by_task) / it;
  state.counters["max_stall_ms"] = max_stall_ms;
}
BENCHMARK(BM_CheckpointWhileProcessing)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
