// Native incremental snapshots of the RocksDB backend (state/rocksdb/rocksdb_native_snapshot.h,
// RestoreNative): round trips of every state kind, which SST files a second checkpoint uploads
// and which it references, aborted checkpoints, restores with rescale (clip and range copy),
// corrupted files, unknown versions and a full disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/hashing.h"
#include "common/key_group_assignment.h"
#include "common/testing/fault_injection_file_system.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"
#include "state/rocksdb/rocksdb_native_snapshot.h"
#include "tests/state/backend_factory.h"
#include "tests/state/state_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using testing_util::Average;
using testing_util::AvgAcc;
using testing_util::K;
using testing_util::Sum;

namespace fs = std::filesystem;

constexpr int32_t kMaxP = 128;

// A RocksDB backend with one state of every kind registered.
struct Subtask {
  explicit Subtask(KeyGroupRange range, FileSystem* file_system = nullptr,
                   int64_t memtable_bytes = 64 << 20,
                   int64_t ingest_rows_at_least = RocksDbStateOptions().ingest_rows_at_least,
                   int64_t write_cache_bytes = RocksDbStateOptions().write_cache_bytes)
      : context(KeyType::kString, kMaxP, range) {
    RocksDbStateOptions options;
    options.ingest_rows_at_least = ingest_rows_at_least;
    options.write_cache_bytes = write_cache_bytes;
    options.dir = testing_util::FreshStateDir();
    options.block_cache_bytes = 8 << 20;
    // Default: no flush but the snapshots', so that SST counts are exact.
    options.memtable_bytes = memtable_bytes;
    options.file_system = file_system;
    auto opened = RocksDbKeyedStateBackend::Open(context, options);
    EXPECT_OK(opened);
    backend = std::move(*opened);
    value = *backend->GetState(ValueStateDescriptor<int64_t>("value"));
    list = *backend->GetListState(ListStateDescriptor<std::string>("list"));
    map = *backend->GetMapState(MapStateDescriptor<std::string, int64_t>("map"));
    reducing = *backend->GetReducingState(ReducingStateDescriptor<int64_t>("reducing", Sum));
    aggregating = *backend->GetAggregatingState(AggregatingStateDescriptor<int64_t, AvgAcc, double>(
        "aggregating", std::make_shared<Average>()));
  }

  // Keys "uid-<first>".."uid-<last>" of this subtask get state of every kind (the value state
  // also in a window namespace; maps of 1-3 user keys).
  void Fill(int first, int last) {
    for (int i = first; i <= last; ++i) {
      if (!backend->SetCurrentKey(K("uid-" + std::to_string(i))).ok()) continue;  // not ours
      value->Update(i);
      if (i % 2 == 0) {
        value->SetCurrentNamespace(Namespace(-i));
        value->Update(i * 10);
        value->SetCurrentNamespace(kVoidNamespace);
      }
      list->AddAll(std::vector<std::string>{"a" + std::to_string(i), "b"});
      for (int u = 0; u <= i % 3; ++u) map->Put("u" + std::to_string(u), i + u);
      for (int64_t v : {int64_t{i}, int64_t{1}}) reducing->Add(v);
      for (int64_t v : {int64_t{i}, int64_t{i + 2}}) aggregating->Add(v);
    }
  }
  // Only the value state of keys first..last changes.
  void UpdateValues(int first, int last, int64_t v) {
    for (int i = first; i <= last; ++i) {
      if (!backend->SetCurrentKey(K("uid-" + std::to_string(i))).ok()) continue;
      value->Update(v);
    }
  }

  std::string Serialize(int32_t g) const {
    std::string out;
    BinaryWriter w(&out);
    backend->SerializeKeyGroup(KeyGroupId(g), w);
    return out;
  }

  KeyContext context;
  std::unique_ptr<RocksDbKeyedStateBackend> backend;
  ValueState<int64_t>* value;
  ListState<std::string>* list;
  MapState<std::string, int64_t>* map;
  ReducingState<int64_t>* reducing;
  AggregatingState<int64_t, double>* aggregating;
};

// A job's checkpoint root: <root>/shared and <root>/chk-<n>.
class RocksDbNativeSnapshotTest : public ::testing::Test {
 protected:
  RocksDbNativeSnapshotTest() : root_(testing_util::FreshStateDir() + "-checkpoints") {
    fs::create_directories(shared());
  }
  ~RocksDbNativeSnapshotTest() override { fs::remove_all(root_); }

  std::string shared() const { return root_ + "/shared"; }
  std::string chk(int64_t n) const { return root_ + "/chk-" + std::to_string(n); }

  NativeSnapshotTarget Target(int64_t n, int subtask = 0) const {
    fs::create_directories(chk(n));
    return NativeSnapshotTarget{CheckpointId(n), chk(n), shared(),
                                "subtask-" + std::to_string(subtask) + "-db/"};
  }

  // Sync part + Write; written_bytes in *written.
  IncrementalKeyedStateHandle Snapshot(Subtask& s, int64_t n, uint64_t* written = nullptr,
                                       int subtask = 0) {
    auto part = s.backend->SnapshotNative(Target(n, subtask));
    EXPECT_OK(part);
    if (!part.ok()) return {};
    uint64_t bytes = 0;
    auto handle = (*part)->Write(&bytes);
    EXPECT_OK(handle);
    if (written != nullptr) *written = bytes;
    return handle.ok() ? *handle : IncrementalKeyedStateHandle{};
  }

  NativeRestoreSource Source(const IncrementalKeyedStateHandle& h, int64_t n) const {
    return NativeRestoreSource{h, chk(n), shared()};
  }

  // Every key group of `target` holds exactly what the originals hold for it (the canonical
  // bytes, which name every state, key, namespace and value), and the counters agree.
  void ExpectSameState(const Subtask& restored, const std::vector<const Subtask*>& originals) {
    size_t entries = 0;
    for (KeyGroupId g : restored.context.range().key_groups()) {
      for (const Subtask* o : originals) {
        if (!o->context.range().contains(g)) continue;
        EXPECT_EQ(restored.Serialize(g.value()), o->Serialize(g.value())) << "key group " << g;
        EXPECT_EQ(restored.backend->NumKeys(g), o->backend->NumKeys(g)) << "key group " << g;
      }
    }
    // NumEntries from the restored counters equals a count of the originals' rows in range.
    for (const Subtask* o : originals) {
      Subtask copy(restored.context.range());
      for (KeyGroupId g : restored.context.range().key_groups()) {
        if (!o->context.range().contains(g)) continue;
        std::string bytes = o->Serialize(g.value());
        BinaryReader in(bytes);
        ASSERT_OK(copy.backend->RestoreKeyGroup(g, in));
      }
      entries += copy.backend->NumEntries();
    }
    EXPECT_EQ(restored.backend->NumEntries(), entries);
    EXPECT_GT(entries, 0u);
  }

  static std::set<std::string> Names(const IncrementalKeyedStateHandle& h) {
    std::set<std::string> names;
    for (const SharedStateFile& f : h.shared_files) names.insert(f.name);
    return names;
  }

  std::string root_;
};

TEST_F(RocksDbNativeSnapshotTest, ARestoredSnapshotHoldsTheSameStateOfEveryKind) {
  Subtask original(KeyGroupRange::Of(0, 127));
  original.Fill(0, 999);
  uint64_t written = 0;
  IncrementalKeyedStateHandle h = Snapshot(original, 1, &written);
  EXPECT_EQ(h.backend, "rocksdb");
  EXPECT_EQ(h.format_version, 1u);
  EXPECT_EQ(h.backend_id, original.backend->backend_id());
  EXPECT_EQ(h.range, KeyGroupRange::Of(0, 127));
  EXPECT_EQ(h.total_keys, original.backend->NumEntries());
  // One SST file per state (one flush each), every one new.
  EXPECT_EQ(h.shared_files.size(), 5u);
  uint64_t bytes = 0;
  for (const SharedStateFile& f : h.shared_files) {
    EXPECT_EQ(fs::file_size(shared() + "/" + f.name), f.size);
    EXPECT_THAT(f.name, ::testing::StartsWith(h.backend_id + "-1-"));
    bytes += f.size;
  }
  for (const PrivateStateFile& f : h.private_files) {
    EXPECT_THAT(f.path, ::testing::StartsWith("subtask-0-db/"));
    EXPECT_EQ(fs::file_size(chk(1) + "/" + f.path), f.size);
    bytes += f.size;
  }
  EXPECT_EQ(written, bytes);
  // The local checkpoint is gone; the backend's directory holds only its database.
  EXPECT_FALSE(fs::exists(original.backend->dir() + "/chk-1"));

  Subtask restored(KeyGroupRange::Of(0, 127));
  ASSERT_OK(restored.backend->RestoreNative({Source(h, 1)}));
  EXPECT_EQ(restored.backend->last_native_restore().base_source, 0);
  EXPECT_EQ(restored.backend->last_native_restore().rows_copied, 0u);
  ExpectSameState(restored, {&original});
  // The restored database is the working one: reads and writes go on.
  ASSERT_OK(restored.backend->SetCurrentKey(K("uid-7")));
  EXPECT_EQ(restored.value->Value(), 7);
  restored.list->Add("c");
  EXPECT_THAT(restored.list->Get(), ::testing::ElementsAre("a7", "b", "c"));
  EXPECT_EQ(restored.map->Entries().size(), 2u);  // 7 % 3 + 1 user keys
  EXPECT_EQ(restored.reducing->Get(), 8);
  EXPECT_EQ(restored.aggregating->Get(), 8.0);
}

TEST_F(RocksDbNativeSnapshotTest, ASecondCheckpointUploadsOnlyTheNewSstAndReferencesTheRest) {
  Subtask s(KeyGroupRange::Of(0, 127));
  s.Fill(0, 19999);
  uint64_t first_bytes = 0;
  IncrementalKeyedStateHandle first = Snapshot(s, 1, &first_bytes);
  ASSERT_EQ(first.shared_files.size(), 5u);
  s.backend->NotifyNativeCheckpointComplete(CheckpointId(1));

  s.UpdateValues(0, 9, 42);  // 10 keys of one state change
  uint64_t second_bytes = 0;
  IncrementalKeyedStateHandle second = Snapshot(s, 2, &second_bytes);
  ASSERT_EQ(second.shared_files.size(), 6u);  // the 5 of checkpoint 1 + the value state's flush
  int referenced = 0;
  int added = 0;
  uint64_t added_bytes = 0;
  const std::set<std::string> first_names = Names(first);
  for (const SharedStateFile& f : second.shared_files) {
    if (first_names.contains(f.name)) {
      ++referenced;
    } else {
      ++added;
      added_bytes += f.size;
      EXPECT_THAT(f.name, ::testing::StartsWith(s.backend->backend_id() + "-2-"));
    }
  }
  EXPECT_EQ(referenced, 5);
  EXPECT_EQ(added, 1);
  uint64_t private_bytes = 0;
  for (const PrivateStateFile& f : second.private_files) private_bytes += f.size;
  EXPECT_EQ(second_bytes, added_bytes + private_bytes);
  EXPECT_LT(second_bytes * 10, first_bytes) << second_bytes << " vs " << first_bytes;

  // The second checkpoint restores (its referenced files are checkpoint 1's).
  Subtask restored(KeyGroupRange::Of(0, 127));
  ASSERT_OK(restored.backend->RestoreNative({Source(second, 2)}));
  ExpectSameState(restored, {&s});
  ASSERT_OK(restored.backend->SetCurrentKey(K("uid-3")));
  EXPECT_EQ(restored.value->Value(), 42);
}

// L0 and L1 are LZ4-compressed (CfOptions): every file a checkpoint of flushed memtables
// uploads says so in its table properties, and the checkpoint restores.
TEST_F(RocksDbNativeSnapshotTest, FlushedFilesAreLz4Compressed) {
  Subtask s(KeyGroupRange::Of(0, 127));
  s.Fill(0, 1999);
  IncrementalKeyedStateHandle first = Snapshot(s, 1);
  ASSERT_EQ(first.shared_files.size(), 5u);
  for (const SharedStateFile& f : first.shared_files) {
    rocksdb::SstFileReader reader{rocksdb::Options()};
    ASSERT_OK(reader.Open(shared() + "/" + f.name)) << f.name;
    EXPECT_EQ(reader.GetTableProperties()->compression_name, "LZ4") << f.name;
  }
  Subtask restored(KeyGroupRange::Of(0, 127));
  ASSERT_OK(restored.backend->RestoreNative({Source(first, 1)}));
  ExpectSameState(restored, {&s});
}

TEST_F(RocksDbNativeSnapshotTest, AnAbortedCheckpointIsNeverTheBase) {
  Subtask s(KeyGroupRange::Of(0, 127));
  s.Fill(0, 999);
  IncrementalKeyedStateHandle first = Snapshot(s, 1);
  s.backend->NotifyNativeCheckpointComplete(CheckpointId(1));
  s.UpdateValues(0, 9, 1);
  IncrementalKeyedStateHandle aborted = Snapshot(s, 2);
  s.backend->NotifyNativeCheckpointAborted(CheckpointId(2));
  s.UpdateValues(10, 19, 2);
  IncrementalKeyedStateHandle third = Snapshot(s, 3);
  // Checkpoint 2's new SST is written again under checkpoint 3's name, as is 3's own flush.
  const std::set<std::string> first_names = Names(first);
  int referenced = 0;
  for (const SharedStateFile& f : third.shared_files) {
    EXPECT_THAT(f.name, ::testing::Not(HasSubstr("-2-")));
    if (first_names.contains(f.name)) ++referenced;
  }
  EXPECT_EQ(referenced, 5);
  EXPECT_EQ(third.shared_files.size(), 7u);
  // A completion of an unknown checkpoint (a savepoint) changes nothing; a later complete
  // checkpoint becomes the base.
  s.backend->NotifyNativeCheckpointComplete(CheckpointId(3));
  IncrementalKeyedStateHandle fourth = Snapshot(s, 4);
  EXPECT_EQ(Names(fourth), Names(third));
}

TEST_F(RocksDbNativeSnapshotTest, RestoreWithRescaleReadsOnlyTheTargetKeyGroups) {
  Subtask left(KeyGroupRange::Of(0, 63));
  Subtask right(KeyGroupRange::Of(64, 127));
  left.Fill(0, 1999);
  right.Fill(0, 1999);
  IncrementalKeyedStateHandle hl = Snapshot(left, 1, nullptr, 0);
  IncrementalKeyedStateHandle hr = Snapshot(right, 1, nullptr, 1);
  const std::vector<NativeRestoreSource> sources = {Source(hl, 1), Source(hr, 1)};

  {  // [32, 95]: half of each; the first is the base (clipped), the second's rows copied.
    Subtask middle(KeyGroupRange::Of(32, 95));
    ASSERT_OK(middle.backend->RestoreNative(sources));
    EXPECT_EQ(middle.backend->last_native_restore().base_source, 0);
    EXPECT_GT(middle.backend->last_native_restore().rows_copied, 0u);
    ExpectSameState(middle, {&left, &right});
  }
  {  // [48, 79]: a quarter of each, no base: every row copied.
    Subtask narrow(KeyGroupRange::Of(48, 79));
    ASSERT_OK(narrow.backend->RestoreNative(sources));
    EXPECT_EQ(narrow.backend->last_native_restore().base_source, -1);
    ExpectSameState(narrow, {&left, &right});
  }
  {  // [8, 40] of the left one only: the clip path, nothing copied; the right one is ignored.
    Subtask sub(KeyGroupRange::Of(8, 40));
    ASSERT_OK(sub.backend->RestoreNative(sources));
    EXPECT_EQ(sub.backend->last_native_restore().base_source, 0);
    EXPECT_EQ(sub.backend->last_native_restore().rows_copied, 0u);
    ExpectSameState(sub, {&left});
    // The clipped key groups are gone from the database, not only hidden by the counters.
    size_t rows = 0;
    ASSERT_TRUE(sub.backend
                    ->ApplyToAllKeys("value", kVoidNamespace,
                                     [&](const Key&) {
                                       ++rows;
                                       return Status::Ok();
                                     })
                    .ok());
    size_t expected = 0;
    for (int32_t g = 8; g <= 40; ++g) expected += left.backend->NumKeys(KeyGroupId(g));
    EXPECT_EQ(rows, expected);
  }
  {  // [0, 127] from both (scale in): the first is the base, the second's rows copied.
    Subtask all(KeyGroupRange::Of(0, 127));
    ASSERT_OK(all.backend->RestoreNative(sources));
    EXPECT_EQ(all.backend->last_native_restore().base_source, 0);
    ExpectSameState(all, {&left, &right});
  }
}

TEST_F(RocksDbNativeSnapshotTest, TheFirstCheckpointAfterARestoreWritesEverythingAnew) {
  Subtask original(KeyGroupRange::Of(0, 127));
  original.Fill(0, 999);
  IncrementalKeyedStateHandle first = Snapshot(original, 1);
  original.backend->NotifyNativeCheckpointComplete(CheckpointId(1));

  // A restored backend (clip path: its database is made of checkpoint 1's files) references none
  // of them: they are another instance's.
  Subtask restored(KeyGroupRange::Of(0, 127));
  ASSERT_OK(restored.backend->RestoreNative({Source(first, 1)}));
  ASSERT_EQ(restored.backend->last_native_restore().base_source, 0);
  restored.UpdateValues(0, 9, 77);
  uint64_t written = 0;
  IncrementalKeyedStateHandle second = Snapshot(restored, 2, &written, 1);
  EXPECT_EQ(second.backend_id, restored.backend->backend_id());
  EXPECT_NE(second.backend_id, first.backend_id);
  EXPECT_EQ(second.shared_files.size(), 6u);  // checkpoint 1's five + the new flush
  for (const SharedStateFile& f : second.shared_files) {
    EXPECT_THAT(f.name, ::testing::StartsWith(second.backend_id + "-2-"));
  }
  // Its next one, after checkpoint 2 completed, references checkpoint 2's files.
  restored.backend->NotifyNativeCheckpointComplete(CheckpointId(2));
  IncrementalKeyedStateHandle third = Snapshot(restored, 3, &written, 1);
  EXPECT_EQ(Names(third), Names(second));

  // And the chain restores once more.
  Subtask again(KeyGroupRange::Of(0, 127));
  ASSERT_OK(again.backend->RestoreNative({Source(third, 3)}));
  ExpectSameState(again, {&restored});
  ASSERT_OK(again.backend->SetCurrentKey(K("uid-4")));
  EXPECT_EQ(again.value->Value(), 77);
}

TEST_F(RocksDbNativeSnapshotTest, WriteRunsWhileTheTaskThreadChangesStateAndCapturesTheBarrier) {
  // A small memtable budget: the writes after the barrier flush and compact, which deletes
  // SST files of the database that the snapshot's hard links still hold.
  Subtask s(KeyGroupRange::Of(0, 127), nullptr, 1 << 20);
  s.Fill(0, 2999);
  s.UpdateValues(0, 2999, 42);  // dirty cached rows at the barrier: the deferred batch
  // The state at the barrier, from a twin that did the same (serialising `s` would write its
  // cached rows to RocksDB before the barrier).
  Subtask twin(KeyGroupRange::Of(0, 127), nullptr, 1 << 20);
  twin.Fill(0, 2999);
  twin.UpdateValues(0, 2999, 42);
  std::map<int32_t, std::string> at_barrier;
  for (int32_t g = 0; g < kMaxP; ++g) at_barrier[g] = twin.Serialize(g);
  const size_t entries_at_barrier = twin.backend->NumEntries();
  auto part = s.backend->SnapshotNative(Target(1));
  ASSERT_OK(part);
  Result<IncrementalKeyedStateHandle> handle = Internal("not run");
  std::thread writer([&] {
    uint64_t written = 0;
    handle = (*part)->Write(&written);
  });
  for (int round = 0; round < 3; ++round) {
    s.UpdateValues(0, 2999, round);
    s.Fill(3000 + round * 2000, 4999 + round * 2000);
  }
  writer.join();
  ASSERT_OK(handle);
  Subtask restored(KeyGroupRange::Of(0, 127));
  ASSERT_OK(restored.backend->RestoreNative({Source(*handle, 1)}));
  for (int32_t g = 0; g < kMaxP; ++g) EXPECT_EQ(restored.Serialize(g), at_barrier[g]) << g;
  EXPECT_EQ(restored.backend->NumEntries(), entries_at_barrier);
}

// The barrier's dirty cached rows (updates and deletions of point state in three column
// families) reach the snapshot either as SST files built and ingested by the deferred part (at
// least ingest_rows_at_least rows) or through the memtables and their flush: the restored state
// is the barrier's both ways, and only the first uploads ingested files (which carry RocksDB's
// external-file property).
TEST_F(RocksDbNativeSnapshotTest, TheBarriersRowsAreIngestedAsSstFilesOrWrittenThroughMemtables) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  int64_t id = 0;
  for (int64_t threshold : {int64_t{1}, kNever}) {
    SCOPED_TRACE("ingest_rows_at_least " + std::to_string(threshold));
    // Checkpoint 1 puts the filled rows into RocksDB; then values are updated, deleted (the
    // value and reducing states) and aggregated again: the rows of checkpoint 2.
    auto change = [](Subtask& s) {
      s.UpdateValues(0, 999, 7);
      for (int i = 1000; i < 1200; ++i) {
        if (!s.backend->SetCurrentKey(K("uid-" + std::to_string(i))).ok()) continue;
        s.value->Clear();
        s.reducing->Clear();
      }
      for (int i = 1200; i < 1400; ++i) {
        if (!s.backend->SetCurrentKey(K("uid-" + std::to_string(i))).ok()) continue;
        s.aggregating->Add(100);
      }
    };
    Subtask s(KeyGroupRange::Of(0, 127), nullptr, 64 << 20, threshold);
    s.Fill(0, 1999);
    const IncrementalKeyedStateHandle first = Snapshot(s, ++id);
    s.backend->NotifyNativeCheckpointComplete(CheckpointId(id));  // the base of the next
    change(s);
    const IncrementalKeyedStateHandle second = Snapshot(s, ++id);
    Subtask twin(KeyGroupRange::Of(0, 127));
    twin.Fill(0, 1999);
    change(twin);

    const std::set<std::string> earlier = Names(first);
    int ingested = 0, added = 0;
    for (const SharedStateFile& f : second.shared_files) {
      if (earlier.count(f.name) > 0) continue;
      ++added;
      rocksdb::SstFileReader reader{rocksdb::Options()};
      ASSERT_OK(reader.Open(shared() + "/" + f.name)) << f.name;
      const auto& user = reader.GetTableProperties()->user_collected_properties;
      ingested += user.count("rocksdb.external_sst_file.version") > 0;
    }
    EXPECT_EQ(added, 3) << "one new file for each of the value, reducing and aggregating states";
    EXPECT_EQ(ingested, threshold == kNever ? 0 : 3);
    Subtask restored(KeyGroupRange::Of(0, 127));
    ASSERT_OK(restored.backend->RestoreNative({Source(second, id)}));
    for (int32_t g = 0; g < kMaxP; ++g) {
      EXPECT_EQ(restored.Serialize(g), twin.Serialize(g)) << "key group " << g;
    }
    EXPECT_EQ(restored.backend->NumEntries(), twin.backend->NumEntries());
    // The files were moved into the database: none is left beside it.
    for (const auto& e : fs::directory_iterator(s.backend->dir())) {
      EXPECT_NE(e.path().filename().string().rfind("ingest-", 0), 0u) << e.path();
    }
  }
}

// A full write-back cache writes its dirty rows either as ingested SST files (at least
// ingest_rows_at_least rows: no memtable inserts) or through the memtables: the same state both
// ways, equal to a twin whose cache never filled, and snapshots of it restore to that state.
TEST_F(RocksDbNativeSnapshotTest, AFullCachesRowsAreIngestedAsSstFilesOrWrittenThroughMemtables) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  auto change = [](Subtask& s) {
    s.Fill(0, 2999);
    s.UpdateValues(0, 1999, 7);
    for (int i = 2000; i < 2300; ++i) {
      if (!s.backend->SetCurrentKey(K("uid-" + std::to_string(i))).ok()) continue;
      s.value->Clear();
      s.reducing->Clear();
      s.aggregating->Add(5);
    }
    s.UpdateValues(0, 999, 8);
  };
  Subtask twin(KeyGroupRange::Of(0, 127));  // 64 MiB: the cache never fills
  change(twin);
  EXPECT_EQ(twin.backend->cache_ingests(), 0u);
  for (int64_t threshold : {int64_t{1}, kNever}) {
    SCOPED_TRACE("ingest_rows_at_least " + std::to_string(threshold));
    Subtask s(KeyGroupRange::Of(0, 127), nullptr, 64 << 20, threshold, 64 << 10);  // fills often
    change(s);
    if (threshold == kNever) {
      EXPECT_EQ(s.backend->cache_ingests(), 0u);
    } else {
      EXPECT_GE(s.backend->cache_ingests(), 10u) << "the 64 KiB cache fills again and again";
    }
    for (int32_t g = 0; g < kMaxP; ++g) {
      EXPECT_EQ(s.Serialize(g), twin.Serialize(g)) << "key group " << g;
    }
    EXPECT_EQ(s.backend->NumEntries(), twin.backend->NumEntries());
    const IncrementalKeyedStateHandle handle = Snapshot(s, 1);
    Subtask restored(KeyGroupRange::Of(0, 127));
    ASSERT_OK(restored.backend->RestoreNative({Source(handle, 1)}));
    for (int32_t g = 0; g < kMaxP; ++g) {
      EXPECT_EQ(restored.Serialize(g), twin.Serialize(g)) << "key group " << g;
    }
    for (const auto& e : fs::directory_iterator(s.backend->dir())) {
      EXPECT_NE(e.path().filename().string().rfind("ingest-", 0), 0u) << e.path();
    }
  }
}

// The write gate, one interleaving at a time on one thread (state/rocksdb/
// rocksdb_keyed_state_backend.h): after SnapshotNative the task thread reads and updates cached
// point state without waiting for the deferred writes; the first write that must go to RocksDB
// (a list append) runs them itself; the part's Write then only uploads, and its snapshot is the
// barrier's state, without anything the task thread did after it.
TEST_F(RocksDbNativeSnapshotTest, TheTaskThreadGoesOnFromTheCacheUntilItMustWriteRocksDb) {
  Subtask s(KeyGroupRange::Of(0, 127));
  Subtask twin(KeyGroupRange::Of(0, 127));
  for (Subtask* t : {&s, &twin}) {
    t->Fill(0, 999);
    t->UpdateValues(0, 499, 7);  // dirty cached rows at the barrier
  }
  std::map<int32_t, std::string> at_barrier;
  for (int32_t g = 0; g < kMaxP; ++g) at_barrier[g] = twin.Serialize(g);
  const size_t entries_at_barrier = twin.backend->NumEntries();

  auto part = s.backend->SnapshotNative(Target(1));
  ASSERT_OK(part);
  EXPECT_TRUE(s.backend->native_sync_pending());
  EXPECT_FALSE(fs::exists(s.backend->dir() + "/chk-1")) << "the checkpoint is deferred";
  // Cached point state: reads and updates neither wait nor run the deferred writes.
  for (Subtask* t : {&s, &twin}) t->UpdateValues(0, 999, 9);
  ASSERT_OK(s.backend->SetCurrentKey(K("uid-3")));
  EXPECT_EQ(s.value->Value(), 9);
  ASSERT_OK(s.backend->SetCurrentKey(K("never-written")));
  EXPECT_EQ(s.value->Value(), std::nullopt);  // a miss reads RocksDB: not a row of the batch
  EXPECT_TRUE(s.backend->native_sync_pending());
  // A list append writes RocksDB: the task thread runs the deferred writes first.
  for (Subtask* t : {&s, &twin}) {
    ASSERT_OK(t->backend->SetCurrentKey(K("uid-3")));
    t->list->Add("after-the-barrier");
  }
  EXPECT_FALSE(s.backend->native_sync_pending());
  EXPECT_TRUE(fs::exists(s.backend->dir() + "/chk-1"));

  uint64_t written = 0;
  auto handle = (*part)->Write(&written);
  ASSERT_OK(handle);
  Subtask restored(KeyGroupRange::Of(0, 127));
  ASSERT_OK(restored.backend->RestoreNative({Source(*handle, 1)}));
  for (int32_t g = 0; g < kMaxP; ++g) EXPECT_EQ(restored.Serialize(g), at_barrier[g]) << g;
  EXPECT_EQ(restored.backend->NumEntries(), entries_at_barrier);
  // And the live state has everything, before and after the barrier.
  for (int32_t g = 0; g < kMaxP; ++g) EXPECT_EQ(s.Serialize(g), twin.Serialize(g)) << g;
  EXPECT_OK(s.backend->failure());
}

// A part destroyed without Write (the checkpoint failed before its snapshot thread ran it) still
// writes the barrier's rows: nothing the cache marked clean is lost, and the next snapshot
// holds them.
TEST_F(RocksDbNativeSnapshotTest, APartDestroyedUnwrittenStillWritesTheBarriersRows) {
  Subtask s(KeyGroupRange::Of(0, 127));
  Subtask twin(KeyGroupRange::Of(0, 127));
  for (Subtask* t : {&s, &twin}) {
    t->Fill(0, 999);
    t->UpdateValues(0, 999, 5);
  }
  {
    auto part = s.backend->SnapshotNative(Target(1));
    ASSERT_OK(part);
    EXPECT_TRUE(s.backend->native_sync_pending());
  }
  EXPECT_FALSE(s.backend->native_sync_pending());
  EXPECT_FALSE(fs::exists(s.backend->dir() + "/chk-1"));
  IncrementalKeyedStateHandle h = Snapshot(s, 2);
  Subtask restored(KeyGroupRange::Of(0, 127));
  ASSERT_OK(restored.backend->RestoreNative({Source(h, 2)}));
  for (int32_t g = 0; g < kMaxP; ++g) EXPECT_EQ(restored.Serialize(g), twin.Serialize(g)) << g;
  EXPECT_EQ(restored.backend->NumEntries(), twin.backend->NumEntries());
}

// While the deferred writes pend, the write-back cache may grow to twice its budget before it
// must be emptied (which runs them); then its budget is the usual one again.
TEST_F(RocksDbNativeSnapshotTest, TheCacheMayGrowToTwiceItsBudgetWhileTheDeferredWritesPend) {
  constexpr int64_t kBudget = 1 << 20;
  constexpr int64_t kRow = 200;  // more than one cached row of this test costs
  KeyContext context(KeyType::kString, kMaxP, KeyGroupRange::Of(0, 127));
  RocksDbStateOptions options;
  options.dir = testing_util::FreshStateDir();
  options.block_cache_bytes = 8 << 20;
  options.write_cache_bytes = kBudget;
  auto opened = RocksDbKeyedStateBackend::Open(context, options);
  ASSERT_OK(opened);
  RocksDbKeyedStateBackend& backend = **opened;
  ValueState<int64_t>* value = *backend.GetState(ValueStateDescriptor<int64_t>("value"));
  int next = 0;
  // Updates new keys until the cache is emptied; returns the most bytes it held before.
  auto fill_until_emptied = [&] {
    int64_t most = backend.write_cache_bytes_used();
    for (;;) {
      EXPECT_OK(backend.SetCurrentKey(K("k-" + std::to_string(next))));
      value->Update(next++);
      const int64_t used = backend.write_cache_bytes_used();
      if (used < most) return most;
      most = used;
    }
  };
  EXPECT_GE(fill_until_emptied(), kBudget);  // the cache is emptied at its budget ...
  const int at_barrier = next;
  auto part = backend.SnapshotNative(Target(1));
  ASSERT_OK(part);
  ASSERT_TRUE(backend.native_sync_pending());
  const int64_t pending_most = fill_until_emptied();  // ... at twice that while they pend
  EXPECT_GE(pending_most, 2 * kBudget);
  EXPECT_LT(pending_most, 2 * kBudget + kRow);
  EXPECT_FALSE(backend.native_sync_pending());
  const int64_t after_most = fill_until_emptied();  // ... and at its budget again after
  EXPECT_GE(after_most, kBudget);
  EXPECT_LT(after_most, kBudget + kRow);

  uint64_t written = 0;
  auto handle = (*part)->Write(&written);
  ASSERT_OK(handle);
  EXPECT_EQ(handle->total_keys, static_cast<uint64_t>(at_barrier));
  KeyContext restored_context(KeyType::kString, kMaxP, KeyGroupRange::Of(0, 127));
  options.dir = testing_util::FreshStateDir();
  auto restored = RocksDbKeyedStateBackend::Open(restored_context, options);
  ASSERT_OK(restored);
  ValueState<int64_t>* restored_value =
      *(*restored)->GetState(ValueStateDescriptor<int64_t>("value"));
  ASSERT_OK((*restored)->RestoreNative({Source(*handle, 1)}));
  EXPECT_EQ((*restored)->NumEntries(), static_cast<size_t>(at_barrier));
  for (int k : {0, at_barrier - 1, at_barrier}) {
    ASSERT_OK((*restored)->SetCurrentKey(K("k-" + std::to_string(k))));
    EXPECT_EQ(restored_value->Value(), k < at_barrier ? std::optional<int64_t>(k) : std::nullopt)
        << k;
  }
}

// The shared file with the most bytes of a handle.
std::string LargestShared(const IncrementalKeyedStateHandle& h) {
  const SharedStateFile* best = &h.shared_files.front();
  for (const SharedStateFile& f : h.shared_files) {
    if (f.size > best->size) best = &f;
  }
  return best->name;
}

class RocksDbNativeCorruptionTest : public RocksDbNativeSnapshotTest {
 protected:
  void ExpectCorruptionNaming(const std::string& path, const std::string& what) {
    Subtask restored(KeyGroupRange::Of(0, 127));
    restored.Fill(5000, 5099);  // state before the restore is replaced, not kept
    Status s = restored.backend->RestoreNative({Source(handle_, 1)});
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(path));
    EXPECT_THAT(s.message(), HasSubstr(what));
    EXPECT_EQ(restored.backend->NumEntries(), 0u);
    for (KeyGroupId g : restored.context.range().key_groups()) {
      EXPECT_EQ(restored.backend->NumKeys(g), 0u);
    }
    EXPECT_FALSE(fs::exists(restored.backend->dir() + "/restore"));
    // Still usable.
    ASSERT_OK(restored.backend->SetCurrentKey(K("x")));
    restored.value->Update(3);
    EXPECT_EQ(restored.value->Value(), 3);
    EXPECT_OK(restored.backend->failure());
  }
  void SetUp() override {
    original_.Fill(0, 999);
    handle_ = Snapshot(original_, 1);
  }
  Subtask original_{KeyGroupRange::Of(0, 127)};
  IncrementalKeyedStateHandle handle_;
};

TEST_F(RocksDbNativeCorruptionTest, AMissingSharedSstIsCorruptionNamingIt) {
  const std::string path = shared() + "/" + LargestShared(handle_);
  fs::remove(path);
  ExpectCorruptionNaming(path, "missing");
}

TEST_F(RocksDbNativeCorruptionTest, ATruncatedSharedSstIsCorruptionNamingIt) {
  const std::string path = shared() + "/" + LargestShared(handle_);
  fs::resize_file(path, fs::file_size(path) - 1);
  ExpectCorruptionNaming(path, "truncated");
}

TEST_F(RocksDbNativeCorruptionTest, AFlippedByteInASharedSstIsCorruptionNamingIt) {
  const std::string path = shared() + "/" + LargestShared(handle_);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x01);
    f.seekp(100);
    f.write(&c, 1);
  }
  ExpectCorruptionNaming(path, "checksum");
}

// KEYFLOW-STATES carries a version too (checkpoint/README.md "Format versions"): its checksum in
// the handle is verified first, so a flipped version byte is Corruption naming the file, and an
// intact file of another version (its checksum recorded) is a version skew.
TEST_F(RocksDbNativeCorruptionTest, TheStatesFileVersionIsCorruptionWhenFlippedAndASkewWhenIntact) {
  PrivateStateFile* states = nullptr;
  for (PrivateStateFile& f : handle_.private_files) {
    if (f.path.find(rocksdb_native::kStatesFile) != std::string::npos) states = &f;
  }
  ASSERT_NE(states, nullptr);
  const std::string path = chk(1) + "/" + states->path;
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 8u);
  bytes[4] = static_cast<char>(bytes[4] ^ 0x03);  // version 1 -> 2
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ExpectCorruptionNaming(path, "fails its checksum");

  states->checksum = Checksum64(bytes);  // as a writer of version 2 would have recorded it
  Subtask restored(KeyGroupRange::Of(0, 127));
  EXPECT_EQ(restored.backend->RestoreNative({Source(handle_, 1)}),
            FailedPrecondition("the RocksDB snapshot file " + path +
                               " was written in format version 2, which this keyflow cannot "
                               "read (it reads format version 1); restore it with a keyflow that "
                               "reads format version 2, or from an earlier checkpoint or "
                               "savepoint"));
  EXPECT_EQ(restored.backend->NumEntries(), 0u);
}

TEST_F(RocksDbNativeCorruptionTest, AMissingPrivateFileIsCorruptionNamingIt) {
  std::string manifest;
  for (const PrivateStateFile& f : handle_.private_files) {
    if (f.path.find("MANIFEST") != std::string::npos) manifest = chk(1) + "/" + f.path;
  }
  ASSERT_FALSE(manifest.empty());
  fs::remove(manifest);
  ExpectCorruptionNaming(manifest, "missing");
}

// The metadata's per-key-group keys of a native snapshot (`keyflow checkpoint inspect`) are the
// entries of every state per key group at the barrier, from the counters: here one value state,
// a key with a namespace more counting twice; they add up to total_keys.
TEST_F(RocksDbNativeSnapshotTest, EntriesPerKeyGroupAreTheCountersAtTheBarrier) {
  Subtask s(KeyGroupRange::Of(32, 95));
  std::vector<uint64_t> expected(64, 0);
  for (int i = 0; i < 300; ++i) {
    const Key key = K("uid-" + std::to_string(i));
    auto g = AssignToKeyGroup(key, KeyType::kString, kMaxP);
    ASSERT_OK(g);
    if (!s.backend->SetCurrentKey(key).ok()) continue;  // not in [32, 95]
    ASSERT_TRUE(g->value() >= 32 && g->value() <= 95);
    s.value->Update(i);
    expected[static_cast<size_t>(g->value() - 32)] += 1;
    if (i % 3 == 0) {
      s.value->SetCurrentNamespace(Namespace(7));
      s.value->Update(-i);
      s.value->SetCurrentNamespace(kVoidNamespace);
      expected[static_cast<size_t>(g->value() - 32)] += 1;
    }
  }
  auto part = s.backend->SnapshotNative(Target(1));
  ASSERT_OK(part);
  s.Fill(1000, 1100);  // after the barrier: not counted
  EXPECT_EQ((*part)->EntriesPerKeyGroup(), expected);
  uint64_t written = 0;
  auto handle = (*part)->Write(&written);
  ASSERT_OK(handle);
  uint64_t sum = 0;
  for (uint64_t n : expected) sum += n;
  EXPECT_GT(sum, 100u);
  EXPECT_EQ(handle->total_keys, sum);
}

TEST_F(RocksDbNativeSnapshotTest, AnUnknownFormatVersionOrBackendIsRefused) {
  Subtask s(KeyGroupRange::Of(0, 127));
  s.Fill(0, 99);
  IncrementalKeyedStateHandle h = Snapshot(s, 1);
  Subtask restored(KeyGroupRange::Of(0, 127));
  IncrementalKeyedStateHandle newer = h;
  newer.format_version = 2;
  Status st = restored.backend->RestoreNative({Source(newer, 1)});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "the RocksDB snapshot of key groups KeyGroupRange{start=0, end=127} was written in "
            "format version 2, which this keyflow cannot read (it reads format version 1); "
            "restore it with a keyflow that reads format version 2, or from an earlier "
            "checkpoint or savepoint");
  IncrementalKeyedStateHandle other = h;
  other.backend = "heap";
  st = restored.backend->RestoreNative({Source(other, 1)});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("written by the 'heap' state backend"));
  EXPECT_EQ(restored.backend->NumEntries(), 0u);
}

TEST_F(RocksDbNativeSnapshotTest, AStateThatIsNotRegisteredOrHasAnotherTypeIsRefused) {
  Subtask s(KeyGroupRange::Of(0, 127));
  s.Fill(0, 99);
  IncrementalKeyedStateHandle h = Snapshot(s, 1);
  KeyContext context(KeyType::kString, kMaxP, KeyGroupRange::Of(0, 127));
  RocksDbStateOptions options;
  options.dir = testing_util::FreshStateDir();
  auto opened = RocksDbKeyedStateBackend::Open(context, options);
  ASSERT_OK(opened);
  std::unique_ptr<RocksDbKeyedStateBackend> backend = std::move(opened).value();
  ASSERT_OK(backend->GetState(ValueStateDescriptor<std::string>("value")));
  Status st = backend->RestoreNative({Source(h, 1)});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("'aggregating', which is not registered"));
  EXPECT_EQ(backend->NumEntries(), 0u);
}

TEST_F(RocksDbNativeSnapshotTest, AFullDiskDuringWriteIsASentenceAndLeavesNoFileBehind) {
  FaultInjectionFileSystem faulty;
  Subtask s(KeyGroupRange::Of(0, 127), &faulty);
  s.Fill(0, 1999);
  auto part = s.backend->SnapshotNative(Target(1));
  ASSERT_OK(part);
  faulty.FailWritesAfter(10000);
  uint64_t written = 1;
  auto handle = (*part)->Write(&written);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), StatusCode::kIoError);
  EXPECT_THAT(handle.status().message(), HasSubstr("cannot write the RocksDB snapshot file "));
  EXPECT_THAT(handle.status().message(), HasSubstr("is full; free space there"));
  EXPECT_EQ(written, 0u);
  EXPECT_TRUE(fs::is_empty(shared()));
  EXPECT_TRUE(fs::is_empty(chk(1) + "/subtask-0-db"));
  EXPECT_FALSE(fs::exists(s.backend->dir() + "/chk-1"));
  // The next checkpoint (disk freed) writes everything: nothing of the failed one is a base.
  faulty.ClearFaults();
  IncrementalKeyedStateHandle h = Snapshot(s, 2);
  EXPECT_EQ(h.shared_files.size(), 5u);
  for (const SharedStateFile& f : h.shared_files) EXPECT_THAT(f.name, HasSubstr("-2-"));
}

// The synchronous part only captures the barrier (counters, dirty cached rows); the flush and
// the checkpoint of hard links are deferred. Here a NumKeys (an iteration, so a gate) makes the
// task thread run them, which shows them: the local checkpoint's SST files are hard links.
TEST_F(RocksDbNativeSnapshotTest, TheSynchronousPartDefersTheFlushAndCheckpointAndCopiesNoData) {
  Subtask s(KeyGroupRange::Of(0, 127));
  s.Fill(0, 19999);
  IncrementalKeyedStateHandle first = Snapshot(s, 1);
  const int64_t full_sync = s.backend->last_native_sync_micros();
  s.backend->NotifyNativeCheckpointComplete(CheckpointId(1));
  s.UpdateValues(0, 99, 5);
  auto part = s.backend->SnapshotNative(Target(2));
  ASSERT_OK(part);
  const int64_t incremental_sync = s.backend->last_native_sync_micros();
  EXPECT_TRUE(s.backend->native_sync_pending());
  EXPECT_FALSE(fs::exists(s.backend->dir() + "/chk-2"));
  s.backend->NumKeys(KeyGroupId(0));
  EXPECT_FALSE(s.backend->native_sync_pending());
  size_t linked = 0;
  for (const auto& e : fs::directory_iterator(s.backend->dir() + "/chk-2")) {
    if (e.path().extension() == ".sst") {
      EXPECT_EQ(fs::hard_link_count(e.path()), 2u) << e.path();
      ++linked;
    }
  }
  EXPECT_EQ(linked, first.shared_files.size() + 1);
  std::cout << "sync part: first " << full_sync << " us (20000 keys x 5 states), incremental "
            << incremental_sync << " us\n";
  uint64_t written = 0;
  ASSERT_OK((*part)->Write(&written));
}

}  // namespace
}  // namespace keyflow
