#include "state/heap/state_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace keyflow {
namespace {

StateEntryLookup LookupOf(const Key& key, Namespace ns) {
  return StateEntryLookup{&key, ns, StateEntryHashOf(key.Hash(), NamespaceHash(ns))};
}

TEST(StateMap, FindsInsertsAssignsAndErases) {
  StateMap<int64_t> map;
  Key a = Key::FromBytes("a"), b = Key::FromBytes("b");
  EXPECT_EQ(map.Find(LookupOf(a, kVoidNamespace)), nullptr);
  EXPECT_EQ(map.capacity(), 0u);  // an empty map allocates nothing
  auto [e, inserted] = map.TryEmplace(LookupOf(a, kVoidNamespace), 1);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(e->value, 1);
  EXPECT_EQ(e->key.key, a);
  EXPECT_FALSE(map.TryEmplace(LookupOf(a, kVoidNamespace), 2).second);  // keeps 1
  EXPECT_EQ(map.Find(LookupOf(a, kVoidNamespace))->value, 1);
  map.InsertOrAssign(LookupOf(a, kVoidNamespace), 3);
  map.InsertOrAssign(LookupOf(a, Namespace(7)), 4);  // same key, other namespace
  map.InsertOrAssign(LookupOf(b, kVoidNamespace), 5);
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(map.Find(LookupOf(a, kVoidNamespace))->value, 3);
  EXPECT_EQ(map.Find(LookupOf(a, Namespace(7)))->value, 4);
  EXPECT_TRUE(map.Erase(LookupOf(a, kVoidNamespace)));
  EXPECT_FALSE(map.Erase(LookupOf(a, kVoidNamespace)));
  EXPECT_EQ(map.Find(LookupOf(a, kVoidNamespace)), nullptr);
  EXPECT_EQ(map.Find(LookupOf(a, Namespace(7)))->value, 4);
  EXPECT_EQ(map.size(), 2u);
  map.Clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.Find(LookupOf(b, kVoidNamespace)), nullptr);
}

TEST(StateMap, GrowsAtThreeQuartersLoad) {
  StateMap<int64_t> map;
  std::vector<Key> keys;
  for (int i = 0; i < 13; ++i) keys.push_back(Key::FromInt64(i));
  for (int i = 0; i < 12; ++i) map.InsertOrAssign(LookupOf(keys[i], kVoidNamespace), i);
  EXPECT_EQ(map.capacity(), 16u);
  map.InsertOrAssign(LookupOf(keys[12], kVoidNamespace), 12);
  EXPECT_EQ(map.capacity(), 32u);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(map.Find(LookupOf(keys[i], kVoidNamespace))->value, i);
  StateMap<int64_t> reserved;
  reserved.Reserve(1000);
  EXPECT_EQ(reserved.capacity(), 2048u);
}

// Random inserts, overwrites and erases (many collisions in small tables, wrap-around of probe
// runs, repeated growth) checked against std::map after every step.
TEST(StateMap, MatchesAReferenceMapUnderRandomOperations) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    StateMap<std::vector<std::string>> map;  // a value that owns memory
    std::map<std::pair<std::string, int64_t>, std::vector<std::string>> reference;
    const int key_space = 8 + round * 10;
    for (int step = 0; step < 3000; ++step) {
      Key key = Key::FromBytes(round % 2 == 0 ? "k" + std::to_string(rng() % key_space)
                                              : std::string(20, 'x') +  // heap-allocated keys
                                                    std::to_string(rng() % key_space));
      Namespace ns(static_cast<int64_t>(rng() % 3));
      auto ref_key = std::make_pair(std::string(key.bytes()), ns.value());
      switch (rng() % 4) {
        case 0:
        case 1: {
          std::vector<std::string> v = {std::to_string(step)};
          map.InsertOrAssign(LookupOf(key, ns), v);
          reference[ref_key] = v;
          break;
        }
        case 2: {
          bool erased = map.Erase(LookupOf(key, ns));
          EXPECT_EQ(erased, reference.erase(ref_key) == 1);
          break;
        }
        case 3: {
          auto [e, inserted] = map.TryEmplace(LookupOf(key, ns));
          EXPECT_EQ(inserted, reference.count(ref_key) == 0);
          e->value.push_back("+");
          reference[ref_key].push_back("+");
          break;
        }
      }
      ASSERT_EQ(map.size(), reference.size());
    }
    size_t seen = 0;
    map.ForEach([&](const auto& e) {
      ++seen;
      auto it = reference.find({std::string(e.key.key.bytes()), e.key.ns.value()});
      ASSERT_NE(it, reference.end());
      EXPECT_EQ(e.value, it->second);
    });
    EXPECT_EQ(seen, reference.size());
    for (const auto& [k, v] : reference) {
      Key key = Key::FromBytes(k.first);
      const auto* e = map.Find(LookupOf(key, Namespace(k.second)));
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(e->value, v);
    }
  }
}

TEST(StateMap, MovesAndRestoresEntries) {
  StateMap<std::string> map;
  for (int i = 0; i < 100; ++i) {
    map.InsertNew(StateEntryKey{Key::FromInt64(i), kVoidNamespace}, "v" + std::to_string(i));
  }
  StateMap<std::string> moved = std::move(map);
  EXPECT_EQ(map.size(), 0u);  // NOLINT: moved-from is empty by contract
  EXPECT_EQ(moved.size(), 100u);
  Key k = Key::FromInt64(42);
  EXPECT_EQ(moved.Find(LookupOf(k, kVoidNamespace))->value, "v42");
  map = std::move(moved);
  EXPECT_EQ(map.Find(LookupOf(k, kVoidNamespace))->value, "v42");
}

}  // namespace
}  // namespace keyflow
