#include "common/key.h"

#include <gtest/gtest.h>

#include <string>
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

TEST(Key, InlineAndHeapKeysRoundTripAndCompare) {
  std::string long_text(100, 'x');
  Key a = Key::FromBytes("uid-12345678");
  Key b = Key::FromBytes(long_text);
  EXPECT_EQ(a.bytes(), "uid-12345678");
  EXPECT_EQ(b.bytes(), long_text);
  Key a2 = a, b2 = b;
  EXPECT_EQ(a, a2);
  EXPECT_EQ(b, b2);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.Hash(), a2.Hash());
  EXPECT_EQ(b.Hash(), b2.Hash());
  Key moved = std::move(b2);
  EXPECT_EQ(moved.bytes(), long_text);
  b2 = moved;  // assign into a moved-from key
  EXPECT_EQ(b2, b);
  a2 = b;  // inline <- heap
  EXPECT_EQ(a2, b);
  b2 = a;  // heap <- inline
  EXPECT_EQ(b2, a);
}

TEST(Key, FifteenBytesStayInlineSixteenGoToHeap) {
  Key k15 = Key::FromBytes(std::string(15, 'a'));
  Key k16 = Key::FromBytes(std::string(16, 'a'));
  EXPECT_EQ(k15.size(), 15u);
  EXPECT_EQ(k16.size(), 16u);
  EXPECT_NE(k15, k16);
  EXPECT_EQ(Key::FromBytes(""), Key());
}

TEST(Key, IntKeysParseAndPrint) {
  auto k = ParseKey("-42", KeyType::kInt);
  ASSERT_OK(k);
  EXPECT_EQ(k->AsInt64(), -42);
  EXPECT_EQ(KeyToString(*k, KeyType::kInt), "-42");
  EXPECT_EQ(ParseKey("2147483648", KeyType::kInt).status().code(), StatusCode::kOutOfRange);
  EXPECT_OK(ParseKey("2147483648", KeyType::kLong));
  EXPECT_EQ(ParseKey("12x", KeyType::kLong).status().message(),
            "key '12x' is not a valid long (expected a decimal integer)");
  EXPECT_EQ(ParseKey("", KeyType::kInt).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseKey("99999999999999999999", KeyType::kLong).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(ParseKey("\xFF", KeyType::kString).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseKeyType("float").status().message(),
            "unknown key type 'float'; use one of: string, int, long");
}

}  // namespace
}  // namespace keyflow

namespace keyflow {
namespace {

TEST(KeyHashOfTest, EqualsTheHashOfTheKeyBuiltFromTheSameBytes) {
  for (const std::string& bytes :
       {std::string(), std::string("a"), std::string("uid-00000042"), std::string(15, 'x'),
        std::string(16, 'x'), std::string("a-key-much-longer-than-fifteen-bytes"),
        std::string("\0\0\x01", 3)}) {
    EXPECT_EQ(Key::HashOf(bytes), Key::FromBytes(bytes).Hash()) << bytes.size() << " bytes";
  }
  EXPECT_EQ(Key::HashOf(std::string(8, '\0')), Key::FromInt64(0).Hash());
  EXPECT_NE(Key::HashOf("ab"), Key::HashOf("ba"));
}

}  // namespace
}  // namespace keyflow
