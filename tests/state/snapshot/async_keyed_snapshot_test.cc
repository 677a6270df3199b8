// AsyncKeyedSnapshot: copy-on-write at key-group granularity. Whatever the task thread changes
// after the synchronous part — before, while or after the writer reaches a key group — the file
// holds the state and timers exactly as they were at the synchronous part, byte for byte what a
// synchronous snapshot taken then holds. Both capture paths of the task thread are covered:
// copying (sections with `copy`) and serialising (sections without).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/file_io.h"
#include "common/processing_time_service.h"
#include "common/testing/fault_injection_file_system.h"
#include "state/heap/heap_keyed_state_backend.h"
#include "state/snapshot/async_keyed_snapshot.h"
#include "state/snapshot/keyed_snapshot_format.h"
#include "state/timers/internal_timer_service.h"
#include "tests/state/backend_factory.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxP = 128;
const KeyGroupRange kRange = KeyGroupRange::Of(10, 41);  // 32 key groups

class IgnoreTimers final : public Triggerable {
 public:
  void OnEventTime(const TimerEntry&) override {}
  void OnProcessingTime(const TimerEntry&) override {}
};

// One keyed subtask's state and timers, with the snapshot sections a keyed operator gives them.
struct Subtask {
  // The test's parameters: the backend, and whether the sections have `copy`.
  explicit Subtask(std::tuple<testing_util::BackendKind, bool> param)
      : context(KeyType::kString, kMaxP, kRange),
        owned(testing_util::MakeBackend(std::get<0>(param), context)),
        backend(*owned),
        timers(context, pts, target) {
    const bool with_copy = std::get<1>(param);
    value = *backend.GetState(ValueStateDescriptor<int64_t>("value"));
    list = *backend.GetListState(ListStateDescriptor<std::string>("list"));
    sections.resize(2);
    sections[0].id = 1;
    sections[0].name = "keyed state";
    sections[0].write = [this](KeyGroupId g, BinaryWriter& w) { backend.SerializeKeyGroup(g, w); };
    sections[0].count = [this](KeyGroupId g) -> uint64_t { return backend.NumKeys(g); };
    sections[1].id = 2;
    sections[1].name = "timers";
    sections[1].write = [this](KeyGroupId g, BinaryWriter& w) { timers.SerializeKeyGroup(g, w); };
    sections[1].count = [this](KeyGroupId g) -> uint64_t { return timers.NumTimers(g); };
    if (with_copy) {
      sections[0].copy = [this](KeyGroupId g) { return backend.CopyKeyGroup(g); };
      sections[1].copy = [this](KeyGroupId g) { return timers.CopyKeyGroup(g); };
    }
    section_ptrs = {&sections[0], &sections[1]};
  }

  // Every key "uid-<first>".."uid-<last>" of the range gets a value (also in a window
  // namespace), list elements, an event-time and a processing-time timer. `round` changes what.
  void Change(int first, int last, int round) {
    for (int i = first; i <= last; ++i) {
      if (!backend.SetCurrentKey(Key::FromBytes("uid-" + std::to_string(i))).ok()) continue;
      value->Update(i * 10 + round);
      value->SetCurrentNamespace(Namespace(1000 + i % 3));
      value->Update(-i - round);
      value->SetCurrentNamespace(kVoidNamespace);
      list->Add("r" + std::to_string(round));
      timers.RegisterEventTimeTimer(kVoidNamespace, Timestamp(1000 * round + i));
      timers.RegisterProcessingTimeTimer(Namespace(7), Timestamp(5000 + round));
      if (round > 0) timers.DeleteEventTimeTimer(kVoidNamespace, Timestamp(i));
    }
  }

  std::string SynchronousSnapshot() {
    std::string out;
    auto info = WriteKeyedSnapshot(kMaxP, KeyType::kString, kRange, section_ptrs, &out);
    EXPECT_OK(info);
    return out;
  }

  std::unique_ptr<AsyncKeyedSnapshot> BeginAsync() {
    auto snapshot =
        std::make_unique<AsyncKeyedSnapshot>(kMaxP, KeyType::kString, kRange, section_ptrs);
    backend.SetWriteGuard(snapshot.get());
    timers.SetWriteGuard(snapshot.get());
    return snapshot;
  }
  static std::string Write(AsyncKeyedSnapshot& snapshot, KeyedSnapshotInfo* info = nullptr) {
    std::string out;
    auto r = snapshot.WriteTo([&](std::string_view b) {
      out.append(b);
      return Status::Ok();
    });
    EXPECT_OK(r);
    if (info != nullptr && r.ok()) *info = *r;
    return out;
  }
  void EndAsync() {
    backend.SetWriteGuard(nullptr);
    timers.SetWriteGuard(nullptr);
  }

  ManualProcessingTimeService pts;
  IgnoreTimers target;
  KeyContext context;
  std::unique_ptr<KeyedStateBackend> owned;
  KeyedStateBackend& backend;
  InternalTimerService timers;
  ValueState<int64_t>* value = nullptr;
  ListState<std::string>* list = nullptr;
  std::vector<SnapshotSection> sections;
  std::vector<const SnapshotSection*> section_ptrs;
};

class AsyncKeyedSnapshotTest
    : public ::testing::TestWithParam<std::tuple<testing_util::BackendKind, bool>> {};

TEST_P(AsyncKeyedSnapshotTest, ChangesBeforeTheWriterStartsAreNotInTheSnapshot) {
  Subtask s(GetParam());
  s.Change(0, 3000, 0);
  const std::string expected = s.SynchronousSnapshot();
  KeyedSnapshotInfo expected_info;
  {
    std::string again;
    expected_info = *WriteKeyedSnapshot(kMaxP, KeyType::kString, kRange, s.section_ptrs, &again);
  }

  auto snapshot = s.BeginAsync();
  s.Change(0, 3000, 1);  // touches every key group before the writer reached any
  EXPECT_EQ(snapshot->serialized_by_task_thread(), kRange.size());
  KeyedSnapshotInfo info;
  const std::string written = Subtask::Write(*snapshot, &info);
  s.EndAsync();

  EXPECT_EQ(written, expected);
  ASSERT_EQ(info.key_groups.size(), expected_info.key_groups.size());
  for (size_t i = 0; i < info.key_groups.size(); ++i) {
    EXPECT_EQ(info.key_groups[i].counts, expected_info.key_groups[i].counts) << "key group " << i;
  }
  EXPECT_NE(s.SynchronousSnapshot(), expected) << "the changes did happen";
}

TEST_P(AsyncKeyedSnapshotTest, ChangesWhileTheWriterRunsAreNotInTheSnapshot) {
  Subtask s(GetParam());
  s.Change(0, 20000, 0);
  const std::string expected = s.SynchronousSnapshot();

  auto snapshot = s.BeginAsync();
  std::string written;
  std::thread writer([&] { written = Subtask::Write(*snapshot); });
  for (int round = 1; round <= 3; ++round) s.Change(0, 20000, round);
  writer.join();
  s.EndAsync();

  EXPECT_EQ(written, expected);
}

TEST_P(AsyncKeyedSnapshotTest, ChangesAfterTheWriterFinishedCostNothing) {
  Subtask s(GetParam());
  s.Change(0, 500, 0);
  const std::string expected = s.SynchronousSnapshot();
  auto snapshot = s.BeginAsync();
  EXPECT_EQ(Subtask::Write(*snapshot), expected);
  s.Change(0, 500, 1);
  EXPECT_EQ(snapshot->serialized_by_task_thread(), 0);
  s.EndAsync();
}

TEST_P(AsyncKeyedSnapshotTest, WriteToFileIsDurableAndAFullDiskGivesAClearErrorAndNoFile) {
  Subtask s(GetParam());
  s.Change(0, 2000, 0);
  const std::string expected = s.SynchronousSnapshot();
  TempDir dir;
  FaultInjectionFileSystem fs;
  {
    auto snapshot = s.BeginAsync();
    auto info = snapshot->WriteToFile(fs, dir.File("ok.kgs"), 4096);
    s.EndAsync();
    ASSERT_OK(info);
    EXPECT_EQ(info->file_size, expected.size());
    EXPECT_EQ(fs.file_syncs(), 1);
  }
  ASSERT_OK(fs.SyncDirectory(dir.path()));  // the checkpoint's _metadata write does this
  ASSERT_OK(fs.SimulateCrash());
  EXPECT_EQ(*ReadFileToString(dir.File("ok.kgs")), expected);

  fs.FailWritesAfter(expected.size() / 2);
  auto snapshot = s.BeginAsync();
  auto full = snapshot->WriteToFile(fs, dir.File("full.kgs"), 4096);
  s.Change(0, 2000, 1);  // the task thread goes on; nothing waits for the failed writer
  s.EndAsync();
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kIoError);
  EXPECT_EQ(full.status().message(), "cannot write the state snapshot " + dir.File("full.kgs") +
                                         ": cannot write " + dir.File("full.kgs") +
                                         ": No space left on device");
  EXPECT_FALSE(PathExists(dir.File("full.kgs")));
  EXPECT_EQ(*ReadFileToString(dir.File("ok.kgs")), expected);  // the previous one is intact
}

INSTANTIATE_TEST_SUITE_P(
    CaptureByCopyOrBySerialising, AsyncKeyedSnapshotTest,
    ::testing::Combine(::testing::ValuesIn(testing_util::kAllBackends), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<testing_util::BackendKind, bool>>& p) {
      return testing_util::BackendKindName(std::get<0>(p.param)) +
             (std::get<1>(p.param) ? "_Copy" : "_Serialise");
    });

TEST(StateMapCloneTest, CloneHasTheSameEntriesAndIsIndependent) {
  KeyContext context(KeyType::kString, kMaxP, kRange);
  HeapKeyedStateBackend backend(context);
  auto* value = *backend.GetState(ValueStateDescriptor<std::string>("v"));
  std::vector<Key> keys;
  for (int i = 0; i < 2000; ++i) {
    // Long keys (heap allocated) and short ones (inline).
    Key k =
        Key::FromBytes((i % 2 ? "a-much-longer-key-than-fifteen-bytes-" : "k") + std::to_string(i));
    if (!backend.SetCurrentKey(k).ok()) continue;
    value->Update("v" + std::to_string(i));
    keys.push_back(k);
  }
  ASSERT_GT(keys.size(), 100u);
  const KeyGroupId g = *AssignToKeyGroup(keys[0], KeyType::kString, kMaxP);
  auto copy = backend.CopyKeyGroup(g);
  std::string before;
  BinaryWriter w(&before);
  backend.SerializeKeyGroup(g, w);
  EXPECT_EQ(copy->Count(), backend.NumKeys(g));

  ASSERT_OK(backend.SetCurrentKey(keys[0]));
  value->Update("changed");
  ASSERT_OK(backend.SetCurrentKey(keys[1]));
  value->Clear();
  std::string from_copy;
  BinaryWriter cw(&from_copy);
  copy->Write(cw);
  EXPECT_EQ(from_copy, before);
}

}  // namespace
}  // namespace keyflow
