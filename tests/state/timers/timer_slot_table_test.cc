#include "state/timers/timer_slot_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace keyflow {
namespace {

// A hash whose home slot is the last one of any capacity (low 32 bits all ones) and whose
// 7-bit tag is `tag`: every such value collides, and probing wraps around the end.
uint64_t LastSlotHash(uint64_t tag) {
  return (tag << 57) | 0xFFFFFFFFull;
}

TEST(TimerSlotTableTest, CapacityForIsTheSmallestMultipleOf16UnderTheLoadLimit) {
  for (uint64_t n = 0; n < 5000; ++n) {
    const uint32_t cap = TimerSlotTable::CapacityFor(n);
    ASSERT_EQ(cap % 16, 0u) << n;
    ASSERT_GE(cap, 16u) << n;
    ASSERT_GE(TimerSlotTable::MaxLoad(cap), n) << n;
    if (cap > 16) {
      ASSERT_LT(TimerSlotTable::MaxLoad(cap - 16), n) << n;
    }
  }
  EXPECT_EQ(TimerSlotTable::MaxLoad(64), 56u);  // 7/8
}

TEST(TimerSlotTableTest, GrowsByAboutOneAndAHalf) {
  EXPECT_EQ(TimerSlotTable::GrownCapacity(0), 16u);
  for (uint32_t cap = 16; cap < 1'000'000; cap = TimerSlotTable::GrownCapacity(cap)) {
    const uint32_t next = TimerSlotTable::GrownCapacity(cap);
    EXPECT_GE(next, cap + cap / 2) << cap;
    EXPECT_LE(next, cap + cap / 2 + 32) << cap;
  }
}

TEST(TimerSlotTableTest, FindsCollidingValuesAcrossTheWrapAroundAndAfterErasing) {
  TimerSlotTable table;
  table.Reset(48);  // not a power of two
  ASSERT_EQ(table.growth_left(), 42u);
  std::vector<uint32_t> slots;
  for (uint32_t v = 0; v < 40; ++v) slots.push_back(table.Insert(LastSlotHash(5), v));
  EXPECT_EQ(slots[0], 47u);  // home slot
  EXPECT_EQ(slots[1], 0u);   // wrapped
  EXPECT_EQ(table.growth_left(), 2u);
  auto find = [&](uint32_t v) {
    return table.Find(LastSlotHash(5), [&](uint32_t stored) { return stored == v; });
  };
  for (uint32_t v = 0; v < 40; ++v) ASSERT_EQ(find(v), slots[v]) << v;
  EXPECT_EQ(find(99), TimerSlotTable::kNotFound);
  EXPECT_EQ(table.Find(LastSlotHash(6), [](uint32_t) { return true; }), TimerSlotTable::kNotFound);
  for (uint32_t v = 0; v < 40; v += 2) table.Erase(slots[v]);
  for (uint32_t v = 1; v < 40; v += 2) ASSERT_EQ(find(v), slots[v]) << v;
  for (uint32_t v = 0; v < 40; v += 2) ASSERT_EQ(find(v), TimerSlotTable::kNotFound) << v;
  // Tombstones are reused: re-inserting the erased values needs no free empty slot.
  for (uint32_t v = 0; v < 40; v += 2) slots[v] = table.Insert(LastSlotHash(5), v + 100);
  for (uint32_t v = 0; v < 40; v += 2) ASSERT_EQ(find(v + 100), slots[v]) << v;
}

TEST(TimerSlotTableTest, AnErasedSlotIsEmptyAgainUnlessAProbeMayHavePassedIt) {
  TimerSlotTable table;
  table.Reset(64);
  const uint32_t lone = table.Insert(LastSlotHash(1), 7);
  EXPECT_EQ(table.growth_left(), 55u);
  table.Erase(lone);  // no run of 16 full slots around it: empty again
  EXPECT_EQ(table.growth_left(), 56u);

  std::vector<uint32_t> slots;  // 20 colliding values: a full run longer than a probe group
  for (uint32_t v = 0; v < 20; ++v) slots.push_back(table.Insert(LastSlotHash(1), v));
  EXPECT_EQ(table.growth_left(), 36u);
  table.Erase(slots[3]);  // inside the run: a tombstone, so value 19 stays reachable
  EXPECT_EQ(table.growth_left(), 36u);
  EXPECT_EQ(table.Find(LastSlotHash(1), [](uint32_t v) { return v == 19; }), slots[19]);
}

}  // namespace
}  // namespace keyflow
