#include "common/key_group_assignment.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "common/hashing.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

TEST(FlinkMurmurHash, MatchesFlinkMathUtilsPinnedValues) {
  EXPECT_EQ(FlinkMurmurHash(0), 593689054);
  EXPECT_EQ(FlinkMurmurHash(1), 68075478);
  EXPECT_EQ(FlinkMurmurHash(-1), 1982413648);
  EXPECT_EQ(FlinkMurmurHash(INT32_MIN), 1718298732);
  EXPECT_EQ(FlinkMurmurHash(INT32_MAX), 1653689534);
}

// JavaStringHashUtf8 of `utf8`, or nullopt when it refuses the bytes.
std::optional<int32_t> JavaHash(std::string_view utf8) {
  int32_t h = 0;
  if (!JavaStringHashUtf8(utf8, &h)) return std::nullopt;
  return h;
}

TEST(JavaStringHash, MatchesJavaForAsciiAndEmpty) {
  EXPECT_EQ(JavaHash(""), 0);
  EXPECT_EQ(JavaHash("a"), 97);
  EXPECT_EQ(JavaHash("hello"), 99162322);            // "hello".hashCode()
  EXPECT_EQ(JavaHash("Hello, World!"), 1498789909);  // wraps around int32
}

TEST(JavaStringHash, UsesUtf16CodeUnitsIncludingSurrogatePairs) {
  // "é" (U+00E9) is one UTF-16 unit: 233.
  EXPECT_EQ(JavaHash("\xC3\xA9"), 233);
  // "€" (U+20AC) is one UTF-16 unit: 8364.
  EXPECT_EQ(JavaHash("\xE2\x82\xAC"), 8364);
  // "😀" (U+1F600) is the surrogate pair D83D DE00: 55357*31 + 56832.
  EXPECT_EQ(JavaHash("\xF0\x9F\x98\x80"), 55357 * 31 + 56832);
  // Mixed: "a😀b" = ((97*31 + 0xD83D)*31 + 0xDE00)*31 + 98
  uint32_t expect = ((97u * 31u + 0xD83Du) * 31u + 0xDE00u) * 31u + 98u;
  EXPECT_EQ(JavaHash("a\xF0\x9F\x98\x80"
                     "b"),
            static_cast<int32_t>(expect));
}

TEST(JavaStringHash, AsciiFastPathEqualsBytewiseDefinition) {
  for (const std::string s :
       {"uid-0", "uid-123456789", "abcdefghijklmnopqrstuvwxyz0123456789", "x\xC3\xA9yzabcdefg"}) {
    int32_t fast = 0;
    ASSERT_TRUE(JavaStringHashUtf8(s, &fast));
    // Reference: decode and fold one code unit at a time.
    uint32_t ref = 0;
    for (size_t i = 0; i < s.size();) {
      auto b = static_cast<unsigned char>(s[i]);
      if (b < 0x80) {
        ref = ref * 31u + b;
        ++i;
      } else {  // only 2-byte sequences in this test
        ref = ref * 31u + (((b & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu));
        i += 2;
      }
    }
    EXPECT_EQ(fast, static_cast<int32_t>(ref)) << s;
  }
}

TEST(JavaStringHash, RejectsInvalidUtf8) {
  int32_t h;
  EXPECT_FALSE(JavaStringHashUtf8("\xFF", &h));
  EXPECT_FALSE(JavaStringHashUtf8("abc\xC3", &h));           // truncated
  EXPECT_FALSE(JavaStringHashUtf8("\xC0\xAF", &h));          // overlong '/'
  EXPECT_FALSE(JavaStringHashUtf8("\xED\xA0\x80", &h));      // encoded surrogate D800
  EXPECT_FALSE(JavaStringHashUtf8("\xF4\x90\x80\x80", &h));  // > U+10FFFF
  EXPECT_FALSE(
      JavaStringHashUtf8("\x80"
                         "abc",
                         &h));  // lone continuation
  EXPECT_EQ(ValidateUtf8("ok\xFF").message(),
            "invalid UTF-8 at byte 2 (keys and records must be UTF-8 text)");
}

TEST(JavaLongHash, MatchesLongHashCode) {
  EXPECT_EQ(JavaLongHash(0), 0);
  EXPECT_EQ(JavaLongHash(1), 1);
  EXPECT_EQ(JavaLongHash(-1), 0);  // 0xFFFFFFFF ^ 0xFFFFFFFF
  EXPECT_EQ(JavaLongHash(1LL << 32), 1);
  EXPECT_EQ(JavaLongHash(0x123456789ABCDEF0LL), static_cast<int32_t>(0x9ABCDEF0u ^ 0x12345678u));
}

TEST(AssignToKeyGroup, IntKeysMatchFlinkForMaxParallelism128) {
  const std::vector<int32_t> expected = {94, 86, 127, 113, 7, 126, 18, 113, 15, 51};
  for (int k = 0; k < 10; ++k) {
    auto g = AssignToKeyGroup(Key::FromInt64(k), KeyType::kInt, 128);
    ASSERT_OK(g);
    EXPECT_EQ(g->value(), expected[static_cast<size_t>(k)]) << "key " << k;
  }
}

TEST(AssignToKeyGroup, StringKeysMatchFlinkForMaxParallelism128) {
  const std::vector<int32_t> expected = {32, 121, 93, 64, 77, 54, 43, 28, 115, 16};
  KeyGroupAssigner assigner(KeyType::kString, 128);
  for (int k = 0; k < 10; ++k) {
    std::string s = "uid-" + std::to_string(k);
    EXPECT_EQ(assigner.Assign(Key::FromBytes(s)).value(), expected[static_cast<size_t>(k)]) << s;
    KeyGroupId g;
    ASSERT_TRUE(assigner.AssignString(s, &g));
    EXPECT_EQ(g.value(), expected[static_cast<size_t>(k)]);
  }
}

TEST(AssignToKeyGroup, LongKeysHashWithLongHashCode) {
  // Long 5 has the same hashCode as Integer 5, so the same key group.
  auto a = AssignToKeyGroup(Key::FromInt64(5), KeyType::kLong, 128);
  EXPECT_EQ(a->value(), 126);
  // 2^32 + 7 has Long.hashCode 1 ^ 7 = 6, like Integer 6.
  auto b = AssignToKeyGroup(Key::FromInt64((1LL << 32) + 7), KeyType::kLong, 128);
  EXPECT_EQ(b->value(), 18);
}

TEST(AssignToKeyGroup, RejectsInvalidUtf8AndBadMaxParallelism) {
  auto bad = AssignToKeyGroup(Key::FromBytes("\xFF"), KeyType::kString, 128);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  auto m = AssignToKeyGroup(Key::FromBytes("a"), KeyType::kString, 32769);
  EXPECT_EQ(m.status().message(),
            "max parallelism 32769 is not within bounds: it must be between 1 and 32768");
}

TEST(KeyGroupRanges, MatchFlinkExamples) {
  auto check = [](int32_t m, int32_t p, std::vector<std::pair<int, int>> expected) {
    auto ranges = CreateKeyGroupPartitions(m, p);
    ASSERT_EQ(ranges.size(), expected.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      EXPECT_EQ(ranges[i].start(), expected[i].first) << "M=" << m << " P=" << p << " i=" << i;
      EXPECT_EQ(ranges[i].end(), expected[i].second) << "M=" << m << " P=" << p << " i=" << i;
    }
  };
  check(128, 3, {{0, 42}, {43, 85}, {86, 127}});
  check(13, 2, {{0, 6}, {7, 12}});
  check(13, 4, {{0, 3}, {4, 6}, {7, 9}, {10, 12}});
  check(42, 3, {{0, 13}, {14, 27}, {28, 41}});
  check(64, 10,
        {{0, 6},
         {7, 12},
         {13, 19},
         {20, 25},
         {26, 31},
         {32, 38},
         {39, 44},
         {45, 51},
         {52, 57},
         {58, 63}});
}

TEST(KeyGroupRanges, TileAndAgreeWithOperatorIndexForManyShapes) {
  for (int32_t m : {1, 13, 42, 64, 128, 256, 1000, 4096, 32767, 32768}) {
    for (int32_t p = 1; p <= std::min(m, 200); ++p) {
      auto ranges = CreateKeyGroupPartitions(m, p);
      int32_t next = 0;
      int32_t min_size = m, max_size = 0;
      for (int32_t i = 0; i < p; ++i) {
        const auto& r = ranges[static_cast<size_t>(i)];
        ASSERT_EQ(r.start(), next) << "M=" << m << " P=" << p;
        min_size = std::min(min_size, r.size());
        max_size = std::max(max_size, r.size());
        // Spot-check both ends (checking every group of every shape is slow in debug builds).
        for (int32_t g : {r.start(), r.end()}) {
          ASSERT_EQ(ComputeOperatorIndexForKeyGroup(m, p, KeyGroupId(g)).value(), i)
              << "M=" << m << " P=" << p << " g=" << g;
        }
        next = r.end() + 1;
      }
      ASSERT_EQ(next, m);
      ASSERT_LE(max_size - min_size, 1);
    }
  }
}

TEST(DefaultMaxParallelism, MatchesFlink) {
  EXPECT_EQ(RoundUpToPowerOfTwo(0), 0);
  EXPECT_EQ(RoundUpToPowerOfTwo(1), 1);
  EXPECT_EQ(RoundUpToPowerOfTwo(3), 4);
  EXPECT_EQ(RoundUpToPowerOfTwo(5), 8);
  EXPECT_EQ(RoundUpToPowerOfTwo(17), 32);
  EXPECT_EQ(ComputeDefaultMaxParallelism(1), 128);
  EXPECT_EQ(ComputeDefaultMaxParallelism(85), 128);
  EXPECT_EQ(ComputeDefaultMaxParallelism(86), 256);
  EXPECT_EQ(ComputeDefaultMaxParallelism(171), 256);
  EXPECT_EQ(ComputeDefaultMaxParallelism(172), 512);
  EXPECT_EQ(ComputeDefaultMaxParallelism(21846), 32768);
  EXPECT_EQ(ComputeDefaultMaxParallelism(32768), 32768);
}

TEST(Validation, ExplainsEachBoundViolation) {
  EXPECT_OK(ValidateParallelism(3, 128));
  EXPECT_EQ(ValidateParallelism(0, 128).message(),
            "parallelism 0 is not within bounds: it must be between 1 and 32768");
  EXPECT_EQ(ValidateParallelism(200, 128).message(),
            "parallelism 200 is larger than the max parallelism 128: each subtask needs at least "
            "one key group; lower the parallelism or raise --max-parallelism");
  EXPECT_EQ(ValidateMaxParallelism(0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateMaxParallelism(40000).code(), StatusCode::kInvalidArgument);
}

TEST(KeyGroupRange, IntersectionAndEmpty) {
  auto a = KeyGroupRange::Of(10, 20);
  EXPECT_EQ(a.size(), 11);
  EXPECT_TRUE(a.contains(KeyGroupId(10)));
  EXPECT_FALSE(a.contains(KeyGroupId(21)));
  EXPECT_EQ(a.Intersection(KeyGroupRange::Of(15, 30)), KeyGroupRange::Of(15, 20));
  EXPECT_TRUE(a.Intersection(KeyGroupRange::Of(21, 30)).empty());
  EXPECT_EQ(KeyGroupRange::Of(5, 4), KeyGroupRange::Empty());
  int count = 0;
  for (KeyGroupId g : KeyGroupRange::Of(3, 5).key_groups()) {
    EXPECT_EQ(g.value(), 3 + count);
    ++count;
  }
  EXPECT_EQ(count, 3);
}

}  // namespace
}  // namespace keyflow
