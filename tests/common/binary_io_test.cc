#include "common/binary_io.h"

#include <gtest/gtest.h>
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

TEST(BinaryIo, RoundTripsEveryType) {
  std::string buf;
  BinaryWriter w(&buf);
  w.U8(7);
  w.U16(65535);
  w.U32(0xDEADBEEF);
  w.I64(-5);
  w.VarU64(300);
  w.VarU64(UINT64_MAX);
  w.Bytes("hello");
  w.KeyBytes(Key::FromBytes(std::string(40, 'k')));
  BinaryReader r(buf);
  EXPECT_EQ(r.U8(), 7);
  EXPECT_EQ(r.U16(), 65535);
  EXPECT_EQ(r.U32(), 0xDEADBEEF);
  EXPECT_EQ(r.I64(), -5);
  EXPECT_EQ(r.VarU64(), 300u);
  EXPECT_EQ(r.VarU64(), UINT64_MAX);
  EXPECT_EQ(r.Bytes(), "hello");
  EXPECT_EQ(r.KeyBytes(), Key::FromBytes(std::string(40, 'k')));
  EXPECT_OK(r);
  EXPECT_TRUE(r.at_end());
}

TEST(BinaryIo, TruncationIsStickyAndNeverReadsPastTheEnd) {
  std::string buf;
  BinaryWriter w(&buf);
  w.Bytes("abcdef");
  buf.resize(buf.size() - 2);
  BinaryReader r(buf);
  EXPECT_EQ(r.Bytes(), "");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.U32(), 0u);
  EXPECT_EQ(r.status("state of key group 3").message(),
            "state of key group 3: data is truncated or malformed");
}

TEST(BinaryIo, HugeLengthFieldDoesNotAllocate) {
  std::string buf;
  BinaryWriter w(&buf);
  w.VarU64(1ull << 60);  // a count that cannot fit
  BinaryReader r(buf);
  EXPECT_EQ(r.Count(8), 0u);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace keyflow
