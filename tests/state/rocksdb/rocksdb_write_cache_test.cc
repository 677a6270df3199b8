// The RocksDB backend's write-back cache of point state (RocksDbStateOptions::write_cache_bytes):
// cached writes are seen by every other path without an explicit flush (iterations, canonical
// and native snapshots, counters), restores do not leave stale cached rows, and random operations
// give exactly the heap backend's state with the cache on, tiny (written and emptied all the
// time) and off.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "state/heap/heap_keyed_state_backend.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"
#include "state/snapshot/native_snapshot.h"
#include "tests/state/backend_factory.h"
#include "tests/state/state_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using testing_util::Average;
using testing_util::AvgAcc;
using testing_util::BackendKind;
using testing_util::K;
using testing_util::Serialize;
using testing_util::Sum;

namespace fs = std::filesystem;

constexpr int32_t kMaxP = 128;
const KeyGroupRange kAll = KeyGroupRange::Of(0, kMaxP - 1);

KeyGroupId GroupOf(const Key& k) {
  return KeyGroupAssigner(KeyType::kString, kMaxP).Assign(k);
}

std::vector<std::string> KeysOf(KeyedStateBackend& b, const std::string& state, Namespace ns) {
  std::vector<std::string> keys;
  Status s = b.ApplyToAllKeys(state, ns, [&](const Key& k) {
    keys.emplace_back(k.bytes());
    return Status::Ok();
  });
  EXPECT_OK(s);
  return keys;
}

constexpr int64_t kBigCache = int64_t{8} << 20;

// A heap backend and a RocksDB backend with an 8 MiB write-back cache, over every key group.
struct HeapAndRocksDb {
  std::vector<KeyedStateBackend*> both() { return {&heap, rocks.get()}; }

  KeyContext heap_context{KeyType::kString, kMaxP, kAll};
  HeapKeyedStateBackend heap{heap_context};
  KeyContext context{KeyType::kString, kMaxP, kAll};
  std::unique_ptr<RocksDbKeyedStateBackend> rocks =
      testing_util::OpenSmallRocksDb(context, kBigCache);
};

TEST(RocksDbWriteCacheTest, CachedWritesAreSeenByIterationsAndSnapshotsWithoutAFlush) {
  HeapAndRocksDb backends;
  HeapKeyedStateBackend& heap = backends.heap;
  auto& rocks = backends.rocks;
  for (KeyedStateBackend* b : backends.both()) {
    auto* v = *b->GetState(ValueStateDescriptor<int64_t>("v"));
    for (const char* k : {"a", "b", "c"}) {
      ASSERT_OK(b->SetCurrentKey(K(k)));
      v->Update(7);
    }
    ASSERT_OK(b->SetCurrentKey(K("b")));
    v->Clear();  // cached as a delete of a row RocksDB never held
  }
  // Nothing reached RocksDB yet (8 MiB of cache); every reader below must see the rows.
  for (const char* k : {"a", "b", "c"}) {
    const KeyGroupId g = GroupOf(K(k));
    EXPECT_EQ(Serialize(*rocks, g), Serialize(heap, g)) << k;
    EXPECT_EQ(rocks->NumKeys(g), heap.NumKeys(g)) << k;
    std::unique_ptr<KeyGroupCopy> copy = rocks->CopyKeyGroup(g);
    std::string copied;
    BinaryWriter w(&copied);
    copy->Write(w);
    EXPECT_EQ(copied, Serialize(heap, g)) << k;
    EXPECT_EQ(copy->Count(), heap.NumKeys(g)) << k;
  }
  EXPECT_THAT(KeysOf(*rocks, "v", kVoidNamespace), UnorderedElementsAre("a", "c"));
  EXPECT_EQ(KeysOf(*rocks, "v", kVoidNamespace), KeysOf(heap, "v", kVoidNamespace));
  EXPECT_EQ(rocks->NumEntries(), 2u);

  // A delete of a row RocksDB holds, cached, then an iteration.
  auto* v = *rocks->GetState(ValueStateDescriptor<int64_t>("v"));
  ASSERT_OK(rocks->SetCurrentKey(K("a")));
  v->Clear();
  EXPECT_THAT(KeysOf(*rocks, "v", kVoidNamespace), ElementsAre("c"));
  ASSERT_OK(heap.SetCurrentKey(K("a")));
  (*heap.GetState(ValueStateDescriptor<int64_t>("v")))->Clear();
  EXPECT_EQ(Serialize(*rocks, GroupOf(K("a"))), Serialize(heap, GroupOf(K("a"))));
  EXPECT_EQ(rocks->NumKeys(GroupOf(K("a"))), GroupOf(K("a")) == GroupOf(K("c")) ? 1u : 0u);
}

TEST(RocksDbWriteCacheTest, ApplyToAllKeysSeesWritesOfItsOwnCallback) {
  // The callback writes keys of any key group, later ones too: the iteration must see them.
  HeapAndRocksDb backends;
  HeapKeyedStateBackend& heap = backends.heap;
  auto& rocks = backends.rocks;
  for (KeyedStateBackend* b : backends.both()) {
    auto* v = *b->GetState(ValueStateDescriptor<int64_t>("v"));
    ASSERT_OK(b->SetCurrentKey(K("k-0")));
    v->Update(1);
  }
  auto visit = [](KeyedStateBackend& b) {
    auto* v = *b.GetState(ValueStateDescriptor<int64_t>("v"));
    std::vector<std::string> seen;
    int next = 1;
    Status s = b.ApplyToAllKeys("v", kVoidNamespace, [&](const Key& k) {
      seen.emplace_back(k.bytes());
      for (int i = 0; i < 20 && next <= 200; ++i, ++next) {
        KF_RETURN_IF_ERROR(b.SetCurrentKey(K("k-" + std::to_string(next))));
        v->Update(next);
      }
      return Status::Ok();
    });
    EXPECT_OK(s);
    return seen;
  };
  EXPECT_EQ(visit(*rocks), visit(heap));
}

TEST(RocksDbWriteCacheTest, CachedRowsCountInTheMemorySize) {
  KeyContext context(KeyType::kString, kMaxP, kAll);
  auto rocks = testing_util::OpenSmallRocksDb(context, kBigCache);
  auto* v = *rocks->GetState(ValueStateDescriptor<int64_t>("v"));
  const int64_t before = rocks->ApproximateSize().memory_bytes;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_OK(rocks->SetCurrentKey(K("k-" + std::to_string(i))));
    v->Update(i);
  }
  // Each row: its cache slot (the keys fit in it) and its 8 value bytes; nothing reached
  // RocksDB's memtables.
  static_assert(sizeof(RocksDbRowCache::Entry) == 64);
  EXPECT_EQ(rocks->ApproximateSize().memory_bytes - before, 1000 * (64 + 8));
  EXPECT_EQ(rocks->write_cache_bytes_used(), 1000 * (64 + 8));

  // A key longer than a slot holds counts its bytes too.
  const int64_t with_short_keys = rocks->write_cache_bytes_used();
  const std::string long_key(40, 'x');
  ASSERT_GT(long_key.size(), Key::kInlineCapacity);
  ASSERT_OK(rocks->SetCurrentKey(K(long_key)));
  v->Update(1);
  EXPECT_EQ(rocks->write_cache_bytes_used() - with_short_keys, 64 + 40 + 8);
}

TEST(RocksDbWriteCacheTest, RestoredKeyGroupsDoNotReturnStaleCachedValues) {
  KeyContext context(KeyType::kString, kMaxP, kAll);
  auto rocks = testing_util::OpenSmallRocksDb(context, kBigCache);
  auto* v = *rocks->GetState(ValueStateDescriptor<int64_t>("v"));
  auto* r = *rocks->GetReducingState(ReducingStateDescriptor<int64_t>("r", Sum));
  const std::vector<Key> keys = testing_util::KeysInGroup(5, 3);
  ASSERT_OK(rocks->SetCurrentKey(keys[0]));
  v->Update(1);
  r->Add(10);
  ASSERT_OK(rocks->SetCurrentKey(keys[1]));
  v->Update(2);
  const std::string saved = Serialize(*rocks, KeyGroupId(5));
  const size_t saved_entries = rocks->NumEntries();

  // Cached changes after the snapshot: an update, a clear, a new key.
  ASSERT_OK(rocks->SetCurrentKey(keys[0]));
  v->Update(100);
  r->Add(5);
  ASSERT_OK(rocks->SetCurrentKey(keys[1]));
  v->Clear();
  ASSERT_OK(rocks->SetCurrentKey(keys[2]));
  v->Update(3);

  BinaryReader in(saved);
  ASSERT_OK(rocks->RestoreKeyGroup(KeyGroupId(5), in));
  ASSERT_OK(rocks->SetCurrentKey(keys[0]));
  EXPECT_EQ(v->Value(), 1);
  EXPECT_EQ(r->Get(), 10);
  ASSERT_OK(rocks->SetCurrentKey(keys[1]));
  EXPECT_EQ(v->Value(), 2);
  ASSERT_OK(rocks->SetCurrentKey(keys[2]));
  EXPECT_EQ(v->Value(), std::nullopt);
  EXPECT_EQ(rocks->NumEntries(), saved_entries);
  EXPECT_EQ(Serialize(*rocks, KeyGroupId(5)), saved);

  // ClearAll after cached changes: nothing comes back.
  ASSERT_OK(rocks->SetCurrentKey(keys[1]));
  v->Clear();  // a cached delete of a row RocksDB holds
  ASSERT_OK(rocks->SetCurrentKey(keys[2]));
  v->Update(4);
  rocks->ClearAll();
  for (const Key& k : keys) {
    ASSERT_OK(rocks->SetCurrentKey(k));
    EXPECT_EQ(v->Value(), std::nullopt) << k.bytes();
    EXPECT_EQ(r->Get(), std::nullopt) << k.bytes();
  }
  EXPECT_EQ(rocks->NumEntries(), 0u);
  EXPECT_TRUE(KeysOf(*rocks, "v", kVoidNamespace).empty());
}

TEST(RocksDbWriteCacheTest, NativeSnapshotHoldsCachedWritesAndItsRestoreDropsTheCache) {
  const std::string root = testing_util::FreshStateDir() + "-checkpoints";
  fs::create_directories(root + "/shared");
  fs::create_directories(root + "/chk-1");
  KeyContext context(KeyType::kString, kMaxP, kAll);
  auto rocks = testing_util::OpenSmallRocksDb(context, kBigCache);
  auto* v = *rocks->GetState(ValueStateDescriptor<int64_t>("v"));
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(rocks->SetCurrentKey(K("k-" + std::to_string(i))));
    v->Update(i);
  }
  ASSERT_OK(rocks->SetCurrentKey(K("k-0")));
  v->Clear();
  std::vector<std::string> expected;
  for (KeyGroupId g : kAll.key_groups()) expected.push_back(Serialize(*rocks, g));

  const NativeSnapshotTarget target{CheckpointId(1), root + "/chk-1", root + "/shared",
                                    "subtask-0-db/"};
  auto part = rocks->SnapshotNative(target);
  ASSERT_OK(part);
  uint64_t written = 0;
  auto handle = (*part)->Write(&written);
  ASSERT_OK(handle);

  // Cached changes after the snapshot, then a restore of it into the same backend.
  for (int i = 0; i < 100; i += 2) {
    ASSERT_OK(rocks->SetCurrentKey(K("k-" + std::to_string(i))));
    v->Update(-i);
  }
  ASSERT_OK(rocks->SetCurrentKey(K("k-1")));
  v->Clear();
  const NativeRestoreSource source{*handle, root + "/chk-1", root + "/shared"};
  ASSERT_OK(rocks->RestoreNative({source}));
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(rocks->SetCurrentKey(K("k-" + std::to_string(i))));
    EXPECT_EQ(v->Value(), i == 0 ? std::nullopt : std::optional<int64_t>(i)) << i;
  }
  std::vector<std::string> restored;
  for (KeyGroupId g : kAll.key_groups()) restored.push_back(Serialize(*rocks, g));
  EXPECT_EQ(restored, expected);
  EXPECT_EQ(rocks->NumEntries(), 99u);

  // And into a fresh backend.
  KeyContext fresh_context(KeyType::kString, kMaxP, kAll);
  auto fresh = testing_util::OpenSmallRocksDb(fresh_context, kBigCache);
  *fresh->GetState(ValueStateDescriptor<int64_t>("v"));
  ASSERT_OK(fresh->RestoreNative({source}));
  restored.clear();
  for (KeyGroupId g : kAll.key_groups()) restored.push_back(Serialize(*fresh, g));
  EXPECT_EQ(restored, expected);
  rocks.reset();
  fresh.reset();
  fs::remove_all(root);
}

// 100 000 random operations on 1 000 keys over value, reducing and aggregating states (two
// namespaces), plus a list and a map state, against the heap backend: the canonical bytes of
// every key group, the counters and the reads agree, with the cache on, tiny and off.
class RocksDbWriteCacheRandomTest : public ::testing::TestWithParam<BackendKind> {};

TEST_P(RocksDbWriteCacheRandomTest, RandomOperationsGiveTheHeapBackendsState) {
  KeyContext heap_context(KeyType::kString, kMaxP, kAll);
  HeapKeyedStateBackend heap(heap_context);
  KeyContext rocks_context(KeyType::kString, kMaxP, kAll);
  std::unique_ptr<KeyedStateBackend> rocks = testing_util::MakeBackend(GetParam(), rocks_context);
  ASSERT_NE(rocks, nullptr);

  struct States {
    ValueState<int64_t>* value;
    ReducingState<int64_t>* reducing;
    AggregatingState<int64_t, double>* aggregating;
    ListState<int64_t>* list;
    MapState<int64_t, int64_t>* map;
  };
  auto states_of = [](KeyedStateBackend& b) {
    return States{*b.GetState(ValueStateDescriptor<int64_t>("value")),
                  *b.GetReducingState(ReducingStateDescriptor<int64_t>("reducing", Sum)),
                  *b.GetAggregatingState(AggregatingStateDescriptor<int64_t, AvgAcc, double>(
                      "aggregating", std::make_shared<Average>())),
                  *b.GetListState(ListStateDescriptor<int64_t>("list")),
                  *b.GetMapState(MapStateDescriptor<int64_t, int64_t>("map"))};
  };
  States h = states_of(heap);
  States r = states_of(*rocks);
  auto both = [&](auto apply) {
    apply(h);
    apply(r);
  };

  std::mt19937_64 rng(42);
  constexpr int kOps = 100'000;
  for (int op = 0; op < kOps; ++op) {
    const Key key = K("key-" + std::to_string(rng() % 1000));
    const Namespace ns(static_cast<int64_t>(rng() % 2));
    const int64_t x = static_cast<int64_t>(rng() % 1000);
    const int what = static_cast<int>(rng() % 100);
    ASSERT_OK(heap.SetCurrentKey(key));
    ASSERT_OK(rocks->SetCurrentKey(key));
    both([&](States& s) {
      s.value->SetCurrentNamespace(ns);
      s.reducing->SetCurrentNamespace(ns);
    });
    if (what < 30) {
      both([&](States& s) { s.value->Update(x); });
    } else if (what < 45) {
      ASSERT_EQ(r.value->Value(), h.value->Value()) << op;
    } else if (what < 52) {
      both([](States& s) { s.value->Clear(); });
    } else if (what < 70) {
      both([&](States& s) { s.reducing->Add(x); });
      ASSERT_EQ(r.reducing->Get(), h.reducing->Get()) << op;
    } else if (what < 74) {
      both([](States& s) { s.reducing->Clear(); });
    } else if (what < 88) {
      both([&](States& s) { s.aggregating->Add(x); });
      ASSERT_EQ(r.aggregating->Get(), h.aggregating->Get()) << op;
    } else if (what < 90) {
      both([](States& s) { s.aggregating->Clear(); });
    } else if (what < 95) {
      both([&](States& s) { s.list->Add(x); });
    } else if (what < 99) {
      both([&](States& s) { s.map->Put(x % 5, x); });
    } else {
      // Iterations and counters in the middle of the run.
      const KeyGroupId g = GroupOf(key);
      ASSERT_EQ(Serialize(*rocks, g), Serialize(heap, g)) << op;
      ASSERT_EQ(rocks->NumKeys(g), heap.NumKeys(g)) << op;
    }
  }
  for (KeyGroupId g : kAll.key_groups()) {
    EXPECT_EQ(Serialize(*rocks, g), Serialize(heap, g)) << g;
    EXPECT_EQ(rocks->NumKeys(g), heap.NumKeys(g)) << g;
  }
  EXPECT_EQ(rocks->NumEntries(), heap.NumEntries());
  EXPECT_EQ(KeysOf(*rocks, "value", Namespace(1)), KeysOf(heap, "value", Namespace(1)));
}

INSTANTIATE_TEST_SUITE_P(Caches, RocksDbWriteCacheRandomTest,
                         ::testing::Values(BackendKind::kRocksDb, BackendKind::kRocksDbTinyCache,
                                           BackendKind::kRocksDbNoCache),
                         testing_util::BackendName);

}  // namespace
}  // namespace keyflow
