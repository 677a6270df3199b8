// The KeyedStateBackend contract, run against every backend (heap, RocksDB).
#include "state/keyed_state_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tests/state/backend_factory.h"
#include "tests/state/state_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using testing_util::Average;
using testing_util::AvgAcc;
using testing_util::K;
using testing_util::KeysInGroup;

using testing_util::BackendKind;

class KeyedStateBackendTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  explicit KeyedStateBackendTest(KeyGroupRange range = KeyGroupRange::Of(0, 127))
      : context_(KeyType::kString, 128, range),
        owned_(testing_util::MakeBackend(GetParam(), context_)),
        backend_(*owned_) {}

  void SetKey(std::string_view key) { ASSERT_OK(backend_.SetCurrentKey(K(key))); }

  template <typename T>
  T* Must(Result<T*> r) {
    EXPECT_OK(r);
    return r.ok() ? *r : nullptr;
  }

  KeyContext context_;
  std::unique_ptr<KeyedStateBackend> owned_;
  KeyedStateBackend& backend_;
};

// ---- every state kind ----

TEST_P(KeyedStateBackendTest, ValueStateIsEmptyUntilUpdatedAndAfterClear) {
  ValueState<int64_t>* count = Must(backend_.GetState(ValueStateDescriptor<int64_t>("count")));
  SetKey("uid-0");
  EXPECT_EQ(count->Value(), std::nullopt);
  count->Update(41);
  EXPECT_EQ(count->Value(), 41);
  count->Update(count->Value().value() + 1);
  EXPECT_EQ(count->Value(), 42);
  EXPECT_EQ(backend_.NumEntries(), 1u);
  count->Clear();
  EXPECT_EQ(count->Value(), std::nullopt);
  EXPECT_EQ(backend_.NumEntries(), 0u);
}

TEST_P(KeyedStateBackendTest, ValueStateReturnsTheDescriptorDefaultWhenEmpty) {
  ValueState<std::string>* name =
      Must(backend_.GetState(ValueStateDescriptor<std::string>("name", "nobody")));
  SetKey("uid-0");
  EXPECT_EQ(name->Value(), "nobody");
  name->Update("ada");
  EXPECT_EQ(name->Value(), "ada");
  name->Clear();
  EXPECT_EQ(name->Value(), "nobody");
  EXPECT_EQ(backend_.NumEntries(), 0u);  // the default is never stored
}

TEST_P(KeyedStateBackendTest, ListStateAddsAddAllUpdatesAndClears) {
  ListState<int32_t>* list = Must(backend_.GetListState(ListStateDescriptor<int32_t>("list")));
  SetKey("uid-0");
  EXPECT_THAT(list->Get(), IsEmpty());
  list->Add(1);
  list->Add(2);
  std::vector<int32_t> more = {3, 4};
  list->AddAll(more);
  list->AddAll({});
  EXPECT_THAT(list->Get(), ElementsAre(1, 2, 3, 4));
  list->Update({9, 8});
  EXPECT_THAT(list->Get(), ElementsAre(9, 8));
  list->Clear();
  EXPECT_THAT(list->Get(), IsEmpty());
  EXPECT_EQ(backend_.NumEntries(), 0u);
}

TEST_P(KeyedStateBackendTest, ListStateNeverStoresAnEmptyList) {
  ListState<int32_t>* list = Must(backend_.GetListState(ListStateDescriptor<int32_t>("list")));
  SetKey("uid-0");
  list->AddAll({});
  EXPECT_EQ(backend_.NumEntries(), 0u);
  list->Add(1);
  EXPECT_EQ(backend_.NumEntries(), 1u);
  list->Update({});
  EXPECT_EQ(backend_.NumEntries(), 0u);
  EXPECT_THAT(list->Get(), IsEmpty());
}

TEST_P(KeyedStateBackendTest, MapStatePutsGetsRemovesAndIterates) {
  MapState<std::string, int64_t>* map =
      Must(backend_.GetMapState(MapStateDescriptor<std::string, int64_t>("pages")));
  SetKey("uid-0");
  EXPECT_TRUE(map->IsEmpty());
  EXPECT_EQ(map->Get("/a"), nullptr);
  EXPECT_FALSE(map->Contains("/a"));
  EXPECT_THAT(map->Entries(), IsEmpty());
  map->Put("/a", 1);
  map->Put("/b", 2);
  map->Put("/a", 3);  // overwrites
  EXPECT_FALSE(map->IsEmpty());
  ASSERT_NE(map->Get("/a"), nullptr);
  EXPECT_EQ(*map->Get("/a"), 3);
  EXPECT_TRUE(map->Contains("/b"));
  EXPECT_THAT(map->Entries(), UnorderedElementsAre(Pair("/a", 3), Pair("/b", 2)));
  map->Remove("/a");
  map->Remove("/missing");
  EXPECT_FALSE(map->Contains("/a"));
  EXPECT_THAT(map->Entries(), UnorderedElementsAre(Pair("/b", 2)));
  map->Clear();
  EXPECT_TRUE(map->IsEmpty());
  EXPECT_EQ(backend_.NumEntries(), 0u);
}

TEST_P(KeyedStateBackendTest, MapStateRemovingTheLastEntryRemovesTheMap) {
  MapState<int64_t, int64_t>* map =
      Must(backend_.GetMapState(MapStateDescriptor<int64_t, int64_t>("m")));
  SetKey("uid-0");
  map->Put(7, 70);
  EXPECT_EQ(backend_.NumEntries(), 1u);
  map->Remove(7);
  EXPECT_TRUE(map->IsEmpty());
  EXPECT_EQ(backend_.NumEntries(), 0u);
}

TEST_P(KeyedStateBackendTest, ReducingStateFoldsAddsWithTheReduceFunction) {
  ReducingState<int64_t>* max = Must(backend_.GetReducingState(ReducingStateDescriptor<int64_t>(
      "max", [](const int64_t& a, const int64_t& b) { return std::max(a, b); })));
  SetKey("uid-0");
  EXPECT_EQ(max->Get(), std::nullopt);
  max->Add(3);
  EXPECT_EQ(max->Get(), 3);
  max->Add(10);
  max->Add(7);
  EXPECT_EQ(max->Get(), 10);
  max->Clear();
  EXPECT_EQ(max->Get(), std::nullopt);
  max->Add(-5);  // after Clear the first value is stored as is
  EXPECT_EQ(max->Get(), -5);
}

TEST_P(KeyedStateBackendTest, AggregatingStateAccumulatesAndReturnsTheResult) {
  AggregatingState<int64_t, double>* avg = Must(backend_.GetAggregatingState(
      AggregatingStateDescriptor<int64_t, AvgAcc, double>("avg", std::make_shared<Average>())));
  SetKey("uid-0");
  EXPECT_EQ(avg->Get(), std::nullopt);
  avg->Add(1);
  avg->Add(2);
  avg->Add(6);
  EXPECT_EQ(avg->Get(), 3.0);
  avg->Clear();
  EXPECT_EQ(avg->Get(), std::nullopt);
  avg->Add(5);
  EXPECT_EQ(avg->Get(), 5.0);
}

// Reads remember the entry they found so that a following write of the same key does not probe
// again; interleaved reads, writes, erases and table growth over other keys must never make a
// write land in the wrong entry.
TEST_P(KeyedStateBackendTest, InterleavedReadsAndWritesMatchAReferenceMap) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  ListState<int64_t>* l = Must(backend_.GetListState(ListStateDescriptor<int64_t>("l")));
  std::map<std::pair<std::string, int64_t>, int64_t> values;
  std::map<std::pair<std::string, int64_t>, std::vector<int64_t>> lists;
  std::mt19937_64 rng(11);
  // Few key groups' worth of keys, so entries of one key group move around a lot.
  std::vector<Key> keys = KeysInGroup(3, 40);
  for (int step = 0; step < 20000; ++step) {
    const Key& key = keys[rng() % keys.size()];
    ASSERT_OK(backend_.SetCurrentKey(key));
    Namespace ns(static_cast<int64_t>(rng() % 2));
    v->SetCurrentNamespace(ns);
    l->SetCurrentNamespace(ns);
    auto ref = std::make_pair(std::string(key.bytes()), ns.value());
    switch (rng() % 6) {
      case 0: {  // read-modify-write
        int64_t next = v->Value().value_or(0) + 1;
        v->Update(next);
        values[ref] = next;
        break;
      }
      case 1:
        v->Update(step);
        values[ref] = step;
        break;
      case 2:
        v->Clear();
        values.erase(ref);
        break;
      case 3:
        l->Add(step);
        lists[ref].push_back(step);
        break;
      case 4:
        l->Clear();
        lists.erase(ref);
        break;
      case 5: {  // read, then write another key
        (void)v->Value();
        const Key& other = keys[rng() % keys.size()];
        ASSERT_OK(backend_.SetCurrentKey(other));
        v->Update(-step);
        values[std::make_pair(std::string(other.bytes()), ns.value())] = -step;
        break;
      }
    }
  }
  for (const Key& key : keys) {
    ASSERT_OK(backend_.SetCurrentKey(key));
    for (int64_t ns = 0; ns < 2; ++ns) {
      v->SetCurrentNamespace(Namespace(ns));
      l->SetCurrentNamespace(Namespace(ns));
      auto ref = std::make_pair(std::string(key.bytes()), ns);
      auto it = values.find(ref);
      EXPECT_EQ(v->Value(), it == values.end() ? std::nullopt : std::optional<int64_t>(it->second));
      auto lit = lists.find(ref);
      // One Get(): a backend's span is valid only until its next read (RocksDB decodes again).
      std::span<const int64_t> span = l->Get();
      std::vector<int64_t> got(span.begin(), span.end());
      EXPECT_EQ(got, lit == lists.end() ? std::vector<int64_t>() : lit->second);
    }
  }
  EXPECT_EQ(backend_.NumEntries(), values.size() + lists.size());
}

// ---- keys and namespaces ----

TEST_P(KeyedStateBackendTest, NamespacesIsolateData) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  ListState<int64_t>* l = Must(backend_.GetListState(ListStateDescriptor<int64_t>("l")));
  SetKey("uid-0");
  v->Update(1);
  l->Add(1);
  v->SetCurrentNamespace(Namespace(1000));
  l->SetCurrentNamespace(Namespace(1000));
  EXPECT_EQ(v->current_namespace(), Namespace(1000));
  EXPECT_EQ(v->Value(), std::nullopt);
  EXPECT_THAT(l->Get(), IsEmpty());
  v->Update(2);
  l->Add(2);
  v->SetCurrentNamespace(Namespace(2000));
  v->Update(3);
  v->Clear();  // clears only namespace 2000
  v->SetCurrentNamespace(kVoidNamespace);
  l->SetCurrentNamespace(kVoidNamespace);
  EXPECT_EQ(v->Value(), 1);
  EXPECT_THAT(l->Get(), ElementsAre(1));
  v->SetCurrentNamespace(Namespace(1000));
  l->SetCurrentNamespace(Namespace(1000));
  EXPECT_EQ(v->Value(), 2);
  EXPECT_THAT(l->Get(), ElementsAre(2));
  EXPECT_EQ(backend_.NumEntries(), 4u);
  EXPECT_EQ(backend_.NumKeys(KeyGroupId(32)), 1u);  // "uid-0" is in key group 32
}

TEST_P(KeyedStateBackendTest, SwitchingTheCurrentKeySwitchesTheState) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  for (int i = 0; i < 10; ++i) {
    SetKey("uid-" + std::to_string(i));
    v->Update(i * 10);
  }
  for (int i = 9; i >= 0; --i) {
    SetKey("uid-" + std::to_string(i));
    EXPECT_EQ(v->Value(), i * 10) << i;
  }
  // "uid-0".."uid-9" go to key groups 32, 121, 93, 64, 77, 54, 43, 28, 115, 16.
  EXPECT_EQ(context_.current_key_group(), KeyGroupId(32));
  for (int g : {32, 121, 93, 64, 77, 54, 43, 28, 115, 16}) {
    EXPECT_EQ(backend_.NumKeys(KeyGroupId(g)), 1u) << g;
  }
  EXPECT_EQ(backend_.NumKeys(KeyGroupId(0)), 0u);
  EXPECT_EQ(backend_.NumEntries(), 10u);
}

TEST_P(KeyedStateBackendTest, ClearAffectsOnlyTheCurrentKey) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  SetKey("a");
  v->Update(1);
  SetKey("b");
  v->Update(2);
  v->Clear();
  SetKey("a");
  EXPECT_EQ(v->Value(), 1);
}

class KeyedStateBackendLowerHalfTest : public KeyedStateBackendTest {
 protected:
  KeyedStateBackendLowerHalfTest() : KeyedStateBackendTest(KeyGroupRange::Of(0, 63)) {}
};

TEST_P(KeyedStateBackendLowerHalfTest, RefusesAKeyOfAnotherSubtaskWithFlinksMessage) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  SetKey("uid-0");  // key group 32: ours
  v->Update(7);
  Status s = backend_.SetCurrentKey(K("uid-1"));  // key group 121
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(),
            "Key group 121 is not in KeyGroupRange{start=0, end=63}. Unless you're directly using "
            "low level state access APIs, this is most likely caused by non-deterministic "
            "shuffle key (hashCode and equals implementation).");
  // The context stays on the previous key, so nothing is stored for the refused one.
  EXPECT_EQ(context_.current_key(), K("uid-0"));
  v->Update(8);
  EXPECT_EQ(backend_.NumEntries(), 1u);
  EXPECT_EQ(backend_.NumKeys(KeyGroupId(32)), 1u);
  EXPECT_EQ(v->Value(), 8);
}

TEST_P(KeyedStateBackendTest, UsingStateWithoutACurrentKeyAborts) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("count")));
  EXPECT_DEATH((void)v->Value(), "keyed state 'count' was used without a current key");
  EXPECT_DEATH(v->Update(1), "keyed state 'count' was used without a current key");
}

// ---- registration ----

TEST_P(KeyedStateBackendTest, RegisteringTheSameDescriptorTwiceReturnsTheSameState) {
  ValueStateDescriptor<int64_t> d("count", 0);
  ValueState<int64_t>* a = Must(backend_.GetState(d));
  ValueState<int64_t>* b = Must(backend_.GetState(ValueStateDescriptor<int64_t>("count", 5)));
  EXPECT_EQ(a, b);
  SetKey("uid-0");
  EXPECT_EQ(b->Value(), 0);  // the first registration's default is kept
  auto* l1 = Must(backend_.GetListState(ListStateDescriptor<std::string>("l")));
  auto* l2 = Must(backend_.GetListState(ListStateDescriptor<std::string>("l")));
  EXPECT_EQ(l1, l2);
}

TEST_P(KeyedStateBackendTest, RegisteringANameAsAnotherKindIsAnError) {
  ASSERT_OK(backend_.GetState(ValueStateDescriptor<int64_t>("count")));
  auto r = backend_.GetListState(ListStateDescriptor<int64_t>("count"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(r.status().message(),
            "keyed state 'count' is already registered as ValueState<long>; it cannot also be "
            "registered as ListState<long>. State names are unique per operator: use another "
            "name");
}

TEST_P(KeyedStateBackendTest, RegisteringANameWithAnotherValueTypeIsAnError) {
  ASSERT_OK(backend_.GetState(ValueStateDescriptor<int64_t>("count")));
  auto r = backend_.GetState(ValueStateDescriptor<std::string>("count"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(r.status().message(),
            "keyed state 'count' is already registered as ValueState<long>; it cannot also be "
            "registered as ValueState<std::string>. State names are unique per operator: use "
            "another name");
  auto m1 = backend_.GetMapState(MapStateDescriptor<std::string, int64_t>("m"));
  auto m2 = backend_.GetMapState(MapStateDescriptor<std::string, int32_t>("m"));
  ASSERT_OK(m1);
  EXPECT_EQ(m2.status().code(), StatusCode::kAlreadyExists);
}

TEST_P(KeyedStateBackendTest, RefusesEmptyNamesAndMissingFunctions) {
  auto empty = backend_.GetState(ValueStateDescriptor<int64_t>(""));
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.status().message(), "a keyed state needs a non-empty name (ValueState<long>)");
  auto no_reduce = backend_.GetReducingState(ReducingStateDescriptor<int64_t>("r", nullptr));
  EXPECT_EQ(no_reduce.status(), InvalidArgument("ReducingState 'r' needs a reduce function"));
  auto no_agg = backend_.GetAggregatingState(
      AggregatingStateDescriptor<int64_t, AvgAcc, double>("a", nullptr));
  EXPECT_EQ(no_agg.status(), InvalidArgument("AggregatingState 'a' needs an aggregate function"));
  // Failed registrations register nothing.
  EXPECT_OK(backend_.GetState(ValueStateDescriptor<std::string>("r")));
}

// ---- ApplyToAllKeys, inspection, ClearAll ----

TEST_P(KeyedStateBackendTest, ApplyToAllKeysVisitsKeyGroupsAscendingThenKeyBytes) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  // Two more keys in key group 32, next to "uid-0"; written in descending byte order.
  std::vector<Key> g32 = KeysInGroup(32, 2);
  std::vector<std::string> written = {
      "uid-5", "uid-0", "uid-9", "uid-1", std::string(g32[1].bytes()), std::string(g32[0].bytes())};
  for (const std::string& k : written) {
    SetKey(k);
    v->Update(static_cast<int64_t>(k.size()));
  }
  // A key with a value only in another namespace is not visited.
  SetKey("uid-2");
  v->SetCurrentNamespace(Namespace(5));
  v->Update(1);
  v->SetCurrentNamespace(kVoidNamespace);

  SetKey("uid-3");  // the context before the call, restored afterwards
  std::vector<std::string> visited;
  Status s = backend_.ApplyToAllKeys("v", kVoidNamespace, [&](const Key& key) {
    EXPECT_EQ(context_.current_key(), key);
    visited.emplace_back(key.bytes());
    v->Update(v->Value().value() + 100);  // state of the current key is usable
    return Status::Ok();
  });
  ASSERT_OK(s);
  std::vector<std::string> in_32 = {std::string(g32[0].bytes()), std::string(g32[1].bytes()),
                                    "uid-0"};
  std::sort(in_32.begin(), in_32.end());
  // uid-9: 16, (32: three keys), uid-5: 54, uid-1: 121.
  EXPECT_THAT(visited, ElementsAre("uid-9", in_32[0], in_32[1], in_32[2], "uid-5", "uid-1"));
  EXPECT_EQ(context_.current_key(), K("uid-3"));
  SetKey("uid-9");
  EXPECT_EQ(v->Value(), 105);
}

TEST_P(KeyedStateBackendTest, ApplyToAllKeysStopsAtTheFirstErrorAndReportsIt) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  for (const char* k : {"uid-0", "uid-1", "uid-2"}) {  // key groups 32, 121, 93
    SetKey(k);
    v->Update(1);
  }
  int calls = 0;
  Status s = backend_.ApplyToAllKeys("v", kVoidNamespace, [&](const Key& key) {
    ++calls;
    return key == K("uid-2") ? Aborted("stop at uid-2") : Status::Ok();
  });
  EXPECT_EQ(s, Aborted("stop at uid-2"));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(
      backend_.ApplyToAllKeys("nope", kVoidNamespace, [](const Key&) { return Status(); }).code(),
      StatusCode::kNotFound);
}

TEST_P(KeyedStateBackendTest, NumKeysCountsDistinctKeysOverStatesAndNamespaces) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  ListState<int64_t>* l = Must(backend_.GetListState(ListStateDescriptor<int64_t>("l")));
  std::vector<Key> keys = KeysInGroup(7, 3);
  for (const Key& k : keys) {
    ASSERT_OK(backend_.SetCurrentKey(k));
    v->Update(1);
    l->Add(1);
    v->SetCurrentNamespace(Namespace(1));
    v->Update(2);
    v->SetCurrentNamespace(kVoidNamespace);
  }
  EXPECT_EQ(backend_.NumKeys(KeyGroupId(7)), 3u);
  EXPECT_EQ(backend_.NumEntries(), 9u);
}

TEST_P(KeyedStateBackendTest, ClearAllRemovesEveryEntryAndKeepsRegistrations) {
  ValueState<int64_t>* v = Must(backend_.GetState(ValueStateDescriptor<int64_t>("v")));
  MapState<int64_t, int64_t>* m =
      Must(backend_.GetMapState(MapStateDescriptor<int64_t, int64_t>("m")));
  for (int i = 0; i < 50; ++i) {
    SetKey("uid-" + std::to_string(i));
    v->Update(i);
    m->Put(i, i);
  }
  EXPECT_EQ(backend_.NumEntries(), 100u);
  backend_.ClearAll();
  EXPECT_EQ(backend_.NumEntries(), 0u);
  SetKey("uid-3");
  EXPECT_EQ(v->Value(), std::nullopt);
  EXPECT_TRUE(m->IsEmpty());
  EXPECT_EQ(Must(backend_.GetState(ValueStateDescriptor<int64_t>("v"))), v);
  v->Update(1);
  EXPECT_EQ(v->Value(), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, KeyedStateBackendTest,
                         ::testing::ValuesIn(testing_util::kAllBackends),
                         testing_util::BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, KeyedStateBackendLowerHalfTest,
                         ::testing::ValuesIn(testing_util::kAllBackends),
                         testing_util::BackendName);

}  // namespace
}  // namespace keyflow
