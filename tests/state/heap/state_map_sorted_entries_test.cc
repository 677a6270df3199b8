// StateMap::SortedEntries: the snapshot order (key bytes unsigned, a prefix first, then
// namespace) computed from 128-bit key prefixes, checked against a plain byte comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "state/heap/state_map.h"

namespace keyflow {
namespace {

using KeyAndNs = std::pair<std::string, int64_t>;

StateEntryLookup LookupOf(const Key& key, Namespace ns) {
  return StateEntryLookup{&key, ns, StateEntryHashOf(key.Hash(), NamespaceHash(ns))};
}

std::vector<KeyAndNs> SortedOf(const StateMap<int64_t>& map) {
  std::vector<const StateMap<int64_t>::Entry*> sorted;
  map.SortedEntries(&sorted);
  std::vector<KeyAndNs> out;
  for (const auto* e : sorted) out.emplace_back(std::string(e->key.key.bytes()), e->key.ns.value());
  return out;
}

// The reference order: std::string compares bytes as unsigned char, a prefix first.
std::vector<KeyAndNs> ReferenceOrder(std::vector<KeyAndNs> entries) {
  std::sort(entries.begin(), entries.end());
  return entries;
}

TEST(StateMapSortedEntries, OrdersByUnsignedKeyBytesPrefixFirstThenNamespace) {
  const std::string k15(15, 'k');
  const std::vector<KeyAndNs> entries = {
      {"b", 0},
      {"a", 3},
      {"a", -2},
      {std::string("a\0", 2), 0},  // zero padding must not make it equal to "a"
      {"a\x01", 0},
      {"ab", 0},
      {"", 0},
      {"\xff", 0},  // unsigned: after every ASCII key
      {"\x80z", 0},
      {k15, 0},
      {k15 + "a", 0},  // long keys (inline capacity is 15 bytes) sharing 15 bytes
      {k15 + std::string("\0", 1), 0},
      {k15 + "a" + "zzzz", 0},
      {k15 + "b", -1},
      {k15 + "b", 1},
      {k15.substr(0, 14) + "z", 0},
  };
  StateMap<int64_t> map;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Key key = Key::FromBytes(entries[i].first);
    map.InsertOrAssign(LookupOf(key, Namespace(entries[i].second)), static_cast<int64_t>(i));
  }
  const std::vector<KeyAndNs> expected = {
      {"", 0},
      {"a", -2},
      {"a", 3},
      {std::string("a\0", 2), 0},
      {"a\x01", 0},
      {"ab", 0},
      {"b", 0},
      {k15, 0},
      {k15 + std::string("\0", 1), 0},
      {k15 + "a", 0},
      {k15 + "a" + "zzzz", 0},
      {k15 + "b", -1},
      {k15 + "b", 1},
      {k15.substr(0, 14) + "z", 0},
      {"\x80z", 0},
      {"\xff", 0},
  };
  EXPECT_EQ(ReferenceOrder(entries), expected);  // the test's own reference agrees
  EXPECT_EQ(SortedOf(map), expected);
}

// Many keys over a tiny alphabet that includes 0x00 and 0xFF, of lengths 0..24 (inline and
// long), so that prefixes, zero bytes and equal 15-byte heads are common.
TEST(StateMapSortedEntries, MatchesAByteComparisonOnRandomKeys) {
  std::mt19937_64 rng(7);
  const char alphabet[] = {'\0', '\x01', 'a', '\x7f', '\x80', '\xff'};
  std::vector<KeyAndNs> entries;
  StateMap<int64_t> map;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes(rng() % 25, ' ');
    for (char& c : bytes) c = alphabet[rng() % sizeof(alphabet)];
    const int64_t ns = static_cast<int64_t>(rng() % 5) - 2;
    const Key key = Key::FromBytes(bytes);
    if (map.TryEmplace(LookupOf(key, Namespace(ns)), i).second) entries.emplace_back(bytes, ns);
  }
  ASSERT_GT(entries.size(), 2000u);
  EXPECT_EQ(SortedOf(map), ReferenceOrder(entries));
}

TEST(StateMapSortedEntries, AppendsToWhatTheVectorHoldsAndAnEmptyMapAddsNothing) {
  StateMap<int64_t> map;
  std::vector<const StateMap<int64_t>::Entry*> sorted = {nullptr};
  map.SortedEntries(&sorted);
  EXPECT_EQ(sorted.size(), 1u);
  const Key key = Key::FromBytes("x");
  map.InsertOrAssign(LookupOf(key, kVoidNamespace), 1);
  map.SortedEntries(&sorted);
  ASSERT_EQ(sorted.size(), 2u);
  EXPECT_EQ(sorted[0], nullptr);
  EXPECT_EQ(sorted[1]->key.key, key);
}

}  // namespace
}  // namespace keyflow
