// What is particular to the RocksDB backend (the contract it shares with the heap backend is in
// tests/state/keyed_state_backend_test.cc and key_group_snapshot_test.cc): its key layout, list
// appends, map rows, entry counters, portable savepoints, its directory and its sizes.
#include "state/rocksdb/rocksdb_keyed_state_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "state/rocksdb/rocksdb_key_layout.h"
#include "tests/state/backend_factory.h"
#include "tests/state/state_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using testing_util::BackendKind;
using testing_util::K;
using testing_util::KeysInGroup;
using testing_util::MakeBackend;
using testing_util::Serialize;

constexpr int32_t kMaxP = 128;
const KeyGroupRange kAll = KeyGroupRange::Of(0, 127);

std::map<int32_t, std::string> SerializeAll(const KeyedStateBackend& b) {
  std::map<int32_t, std::string> all;
  for (KeyGroupId g : b.range().key_groups()) all[g.value()] = Serialize(b, g);
  return all;
}

// ---- layout ----

// (key group, key bytes, namespace) -> its rocks key, for the order checks.
std::string RocksKey(int32_t g, std::string_view key, int64_t ns, int prefix_bytes) {
  std::string out;
  rocksdb_layout::AppendEntryPrefix(&out, g, prefix_bytes, key, ns);
  return out;
}

TEST(RocksDbKeyLayout, ByteOrderIsKeyGroupThenKeyBytesThenNamespace) {
  // Keys that are prefixes of each other, hold 0x00 and 0xFF bytes, and namespaces of both signs.
  const std::vector<std::string> keys = {"",
                                         std::string(1, '\0'),
                                         std::string("\0\x01", 2),
                                         "a",
                                         std::string("a\0", 2),
                                         std::string("a\0b", 3),
                                         "ab",
                                         "b",
                                         "\xff",
                                         "\xff\xff"};
  const std::vector<int64_t> namespaces = {INT64_MIN, -1, 0, 1, INT64_MAX};
  for (int prefix_bytes : {1, 2}) {
    std::vector<std::tuple<int32_t, std::string, int64_t>> logical;
    for (int32_t g : {0, 1, 127}) {
      for (const auto& k : keys) {
        for (int64_t ns : namespaces) logical.emplace_back(g, k, ns);
      }
    }
    std::sort(logical.begin(), logical.end());  // std::string compares bytes as unsigned
    std::vector<std::string> encoded;
    for (const auto& [g, k, ns] : logical) encoded.push_back(RocksKey(g, k, ns, prefix_bytes));
    EXPECT_TRUE(std::is_sorted(encoded.begin(), encoded.end())) << prefix_bytes;
    for (size_t i = 0; i < logical.size(); ++i) {
      rocksdb_layout::DecodedKey d;
      ASSERT_TRUE(rocksdb_layout::DecodeKey(encoded[i], prefix_bytes, &d));
      EXPECT_EQ(d.key_group, std::get<0>(logical[i]));
      EXPECT_EQ(d.key, std::get<1>(logical[i]));
      EXPECT_EQ(d.ns, std::get<2>(logical[i]));
      EXPECT_EQ(d.prefix_length, encoded[i].size());
      // Inside [begin, end) of its key group and of no other.
      const int32_t g = std::get<0>(logical[i]);
      EXPECT_GE(encoded[i], rocksdb_layout::KeyGroupBegin(g, prefix_bytes));
      EXPECT_LT(encoded[i], rocksdb_layout::KeyGroupEnd(g, prefix_bytes));
    }
  }
}

TEST(RocksDbKeyLayout, TheKeyGroupPrefixIsOneByteUpTo128KeyGroupsAndTwoBigEndianAbove) {
  EXPECT_EQ(rocksdb_layout::KeyGroupPrefixBytes(128), 1);
  EXPECT_EQ(rocksdb_layout::KeyGroupPrefixBytes(129), 2);
  EXPECT_EQ(RocksKey(5, "k", INT64_MIN, 1), std::string("\x05k\0\x01\0\0\0\0\0\0\0\0", 12));
  EXPECT_EQ(RocksKey(0x0102, "k", 1, 2), std::string("\x01\x02k\0\x01\x80\0\0\0\0\0\0\x01", 13));
}

// ---- state kinds ----

class RocksDbBackendTest : public ::testing::Test {
 protected:
  RocksDbBackendTest()
      : context_(KeyType::kString, kMaxP, kAll),
        backend_(testing_util::OpenRocksDbInFreshDir(context_)) {}
  void SetKey(std::string_view key) { ASSERT_OK(backend_->SetCurrentKey(K(key))); }

  KeyContext context_;
  std::unique_ptr<RocksDbKeyedStateBackend> backend_;
};

TEST_F(RocksDbBackendTest, ListAppendsByMergeKeepInsertionOrderAcrossInterleavedKeys) {
  ListState<std::string>* list = *backend_->GetListState(ListStateDescriptor<std::string>("l"));
  std::map<std::string, std::vector<std::string>> expected;
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(rng() % 50);
    SetKey(key);
    if (i % 97 == 0) {
      list->AddAll(std::vector<std::string>{"x" + std::to_string(i), ""});
      expected[key].push_back("x" + std::to_string(i));
      expected[key].push_back("");
    } else {
      list->Add(std::to_string(i));
      expected[key].push_back(std::to_string(i));
    }
  }
  EXPECT_EQ(backend_->NumEntries(), expected.size());
  for (const auto& [key, elements] : expected) {
    SetKey(key);
    // One Get(): a backend's span is valid only until its next read (RocksDB decodes again).
    std::span<const std::string> got = list->Get();
    EXPECT_THAT(std::vector<std::string>(got.begin(), got.end()),
                ::testing::ElementsAreArray(elements))
        << key;
  }
  SetKey("k1");
  list->Update({"only"});
  list->Add("then");
  EXPECT_THAT(list->Get(), ElementsAre("only", "then"));
  list->AddAll({});
  EXPECT_THAT(list->Get(), ElementsAre("only", "then"));
  list->Clear();
  EXPECT_TRUE(list->Get().empty());
  EXPECT_EQ(backend_->NumEntries(), expected.size() - 1);
}

TEST_F(RocksDbBackendTest, MapRowsStayInsideTheirKeyNamespaceAndKeyGroup) {
  MapState<std::string, int64_t>* map =
      *backend_->GetMapState(MapStateDescriptor<std::string, int64_t>("m"));
  // Keys that are byte prefixes of each other (the escaping keeps their rows apart), two
  // namespaces, and the neighbouring key groups.
  const std::vector<std::string> keys = {"a", std::string("a\0", 2), "ab", "b"};
  std::map<std::pair<std::string, int64_t>, std::map<std::string, int64_t>> expected;
  for (size_t i = 0; i < keys.size(); ++i) {
    for (int64_t ns : {int64_t{-1}, int64_t{1}}) {
      SetKey(keys[i]);
      map->SetCurrentNamespace(Namespace(ns));
      for (int e = 0; e <= static_cast<int>(i); ++e) {
        const std::string uk = "u" + std::to_string(e);
        map->Put(uk, static_cast<int64_t>(i) * 100 + e + ns);
        expected[{keys[i], ns}][uk] = static_cast<int64_t>(i) * 100 + e + ns;
      }
    }
  }
  for (const auto& [key_ns, entries] : expected) {
    SetKey(key_ns.first);
    map->SetCurrentNamespace(Namespace(key_ns.second));
    std::map<std::string, int64_t> got(map->Entries().begin(), map->Entries().end());
    EXPECT_EQ(got, entries);
  }
  EXPECT_EQ(backend_->NumEntries(), 8u);
  // Removing and overwriting one user key changes only it.
  SetKey("ab");
  map->SetCurrentNamespace(Namespace(1));
  map->Remove("u0");
  map->Put("u1", 7);
  EXPECT_THAT(map->Entries(), UnorderedElementsAre(Pair("u1", 7), Pair("u2", 203)));
  SetKey("a");
  EXPECT_THAT(map->Entries(), UnorderedElementsAre(Pair("u0", 1)));
  // Clearing the key removes all its rows, and only its rows.
  SetKey("ab");
  map->Clear();
  EXPECT_TRUE(map->IsEmpty());
  map->SetCurrentNamespace(Namespace(-1));
  EXPECT_EQ(map->Entries().size(), 3u);
  EXPECT_EQ(backend_->NumEntries(), 7u);
}

TEST_F(RocksDbBackendTest, MapIterationAcrossKeyGroupsVisitsEachKeyOnce) {
  MapState<std::string, int64_t>* map =
      *backend_->GetMapState(MapStateDescriptor<std::string, int64_t>("m"));
  std::vector<Key> expected;
  for (int32_t g : {3, 4, 5}) {
    for (const Key& k : KeysInGroup(g, 3)) {
      ASSERT_OK(backend_->SetCurrentKey(k));
      for (int e = 0; e < 4; ++e) map->Put("u" + std::to_string(e), e);
      expected.push_back(k);
    }
  }
  std::vector<Key> visited;
  ASSERT_TRUE(backend_
                  ->ApplyToAllKeys("m", kVoidNamespace,
                                   [&](const Key& k) {
                                     visited.push_back(k);
                                     EXPECT_EQ(map->Entries().size(), 4u);
                                     return Status::Ok();
                                   })
                  .ok());
  // Key groups ascending, then key bytes ascending (KeysInGroup's keys are not sorted).
  for (int i = 0; i < 3; ++i) {
    std::sort(expected.begin() + 3 * i, expected.begin() + 3 * i + 3);
  }
  EXPECT_EQ(visited, expected);
  EXPECT_EQ(backend_->NumKeys(KeyGroupId(4)), 3u);
}

TEST_F(RocksDbBackendTest, EntryCountersStayExactThroughEveryKindOfWrite) {
  ValueState<int64_t>* v = *backend_->GetState(ValueStateDescriptor<int64_t>("v"));
  ListState<int64_t>* l = *backend_->GetListState(ListStateDescriptor<int64_t>("l"));
  SetKey("a");
  v->Update(1);
  v->Update(2);  // same entry, no lookup cached: the counter must not move
  SetKey("b");
  SetKey("a");
  v->Update(3);
  l->Add(1);
  l->Add(2);
  SetKey("b");
  l->Add(1);
  EXPECT_EQ(backend_->NumEntries(), 3u);
  SetKey("a");
  v->Clear();
  v->Clear();
  EXPECT_EQ(backend_->NumEntries(), 2u);
  backend_->ClearAll();
  EXPECT_EQ(backend_->NumEntries(), 0u);
  SetKey("b");
  EXPECT_TRUE(l->Get().empty());  // ClearAll invalidates what the state remembered
  l->Add(5);
  EXPECT_EQ(backend_->NumEntries(), 1u);
}

// ---- snapshots ----

TEST_F(RocksDbBackendTest, ACopyOfAKeyGroupKeepsItsStateWhileTheKeyGroupChanges) {
  ValueState<int64_t>* v = *backend_->GetState(ValueStateDescriptor<int64_t>("v"));
  const std::vector<Key> keys = KeysInGroup(9, 20);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_OK(backend_->SetCurrentKey(keys[i]));
    v->Update(static_cast<int64_t>(i));
  }
  const std::string before = Serialize(*backend_, KeyGroupId(9));
  std::unique_ptr<KeyGroupCopy> copy = backend_->CopyKeyGroup(KeyGroupId(9));
  for (size_t i = 0; i < keys.size(); i += 2) {
    ASSERT_OK(backend_->SetCurrentKey(keys[i]));
    v->Clear();
  }
  ASSERT_OK(backend_->SetCurrentKey(KeysInGroup(9, 21).back()));
  v->Update(99);
  std::string copied;
  BinaryWriter w(&copied);
  copy->Write(w);
  EXPECT_EQ(copied, before);
  EXPECT_EQ(copy->Count(), 20u);
  EXPECT_NE(Serialize(*backend_, KeyGroupId(9)), before);
  EXPECT_EQ(backend_->NumKeys(KeyGroupId(9)), 11u);
}

TEST(RocksDbPortableSavepoint, HeapToRocksDbToHeapGivesTheSameBytes) {
  using testing_util::Average;
  using testing_util::AvgAcc;
  KeyContext heap_context(KeyType::kString, kMaxP, kAll);
  auto heap = MakeBackend(BackendKind::kHeap, heap_context);
  auto fill = [](KeyedStateBackend& b, int from, int to) {
    auto* value = *b.GetState(ValueStateDescriptor<int64_t>("value"));
    auto* list = *b.GetListState(ListStateDescriptor<std::string>("list"));
    auto* map = *b.GetMapState(MapStateDescriptor<int64_t, std::string>("map"));
    auto* agg = *b.GetAggregatingState(
        AggregatingStateDescriptor<int64_t, AvgAcc, double>("avg", std::make_shared<Average>()));
    for (int i = from; i < to; ++i) {
      ASSERT_OK(b.SetCurrentKey(K("uid-" + std::to_string(i))));
      value->Update(i);
      list->Add("e" + std::to_string(i));
      // Numeric user keys: their byte order (little-endian) is not their order.
      map->Put(i % 7 - 3, "m");
      map->Put(256 + i, "n");
      agg->Add(i);
    }
  };
  fill(*heap, 0, 500);
  const auto heap_bytes = SerializeAll(*heap);

  KeyContext rocks_context(KeyType::kString, kMaxP, kAll);
  auto rocks = MakeBackend(BackendKind::kRocksDb, rocks_context);
  fill(*rocks, 1000, 1010);  // replaced by the restore
  for (const auto& [g, bytes] : heap_bytes) {
    BinaryReader r(bytes);
    ASSERT_OK(rocks->RestoreKeyGroup(KeyGroupId(g), r)) << g;
  }
  EXPECT_EQ(SerializeAll(*rocks), heap_bytes);
  EXPECT_EQ(rocks->NumEntries(), heap->NumEntries());

  KeyContext back_context(KeyType::kString, kMaxP, kAll);
  auto back = MakeBackend(BackendKind::kHeap, back_context);
  fill(*back, 0, 0);  // registers the states
  for (const auto& [g, bytes] : SerializeAll(*rocks)) {
    BinaryReader r(bytes);
    ASSERT_OK(back->RestoreKeyGroup(KeyGroupId(g), r)) << g;
  }
  EXPECT_EQ(SerializeAll(*back), heap_bytes);

  // And the same state written directly into RocksDB gives the same bytes too.
  KeyContext direct_context(KeyType::kString, kMaxP, kAll);
  auto direct = MakeBackend(BackendKind::kRocksDb, direct_context);
  fill(*direct, 0, 500);
  EXPECT_EQ(SerializeAll(*direct), heap_bytes);
}

TEST_F(RocksDbBackendTest, ACorruptedRestoreBlockIsCorruptionAndLeavesTheKeyGroupUnchanged) {
  ValueState<int64_t>* v = *backend_->GetState(ValueStateDescriptor<int64_t>("v"));
  const Key key = KeysInGroup(12, 1)[0];
  ASSERT_OK(backend_->SetCurrentKey(key));
  v->Update(5);
  const std::string good = Serialize(*backend_, KeyGroupId(12));
  const std::string bad = good.substr(0, good.size() - 3);  // the value is cut short
  BinaryReader r(bad);
  Status s = backend_->RestoreKeyGroup(KeyGroupId(12), r);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("cannot restore key group 12"));
  EXPECT_EQ(Serialize(*backend_, KeyGroupId(12)), good);
  EXPECT_EQ(v->Value(), 5);
  EXPECT_EQ(backend_->NumEntries(), 1u);
}

// ---- directory, sizes ----

TEST(RocksDbStateDir, AStateDirThatCannotBeCreatedIsAClearError) {
  const std::string parent = testing_util::FreshStateDir();
  std::filesystem::create_directories(parent);
  const std::string file = parent + "/a-file";
  std::ofstream(file) << "x";
  KeyContext context(KeyType::kString, kMaxP, kAll);
  RocksDbStateOptions options;
  options.dir = file + "/subtask-0";
  auto backend = RocksDbKeyedStateBackend::Open(context, options);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(backend.status().message(),
            "cannot use the RocksDB state directory " + options.dir +
                " (Not a directory): pass --state-dir a directory on a local disk that the "
                "worker can write");
  std::filesystem::remove_all(parent);
}

TEST(RocksDbStateDir, TheBackendDeletesItsDirectoryAndALeftoverOneIsReplaced) {
  const std::string dir = testing_util::FreshStateDir();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/LOCK") << "left by a killed worker";
  KeyContext context(KeyType::kString, kMaxP, kAll);
  {
    RocksDbStateOptions options;
    options.dir = dir;
    auto backend = RocksDbKeyedStateBackend::Open(context, options);
    ASSERT_OK(backend);
    EXPECT_TRUE(std::filesystem::exists(dir + "/db/CURRENT"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST_F(RocksDbBackendTest, ReportsItsBackendAndTheBytesItsStateOccupies) {
  EXPECT_EQ(backend_->backend_name(), "rocksdb");
  ValueState<std::string>* v = *backend_->GetState(ValueStateDescriptor<std::string>("v"));
  for (int i = 0; i < 5000; ++i) {
    SetKey("key-" + std::to_string(i));
    v->Update(std::string(100, 'x'));
  }
  const StateSize size = backend_->ApproximateSize();
  EXPECT_GT(size.memory_bytes, 5000 * 100);  // in the memtable
  EXPECT_GE(size.disk_bytes, 0);
  EXPECT_OK(backend_->failure());
}

}  // namespace
}  // namespace keyflow
