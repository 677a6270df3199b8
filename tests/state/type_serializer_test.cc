#include "state/type_serializer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace keyflow {
namespace {

template <typename T>
std::string Bytes(const T& v) {
  std::string out;
  BinaryWriter w(&out);
  TypeSerializer<T>::Write(w, v);
  return out;
}

template <typename T>
T RoundTrip(const T& v) {
  std::string bytes = Bytes(v);
  BinaryReader r(bytes);
  T back{};
  EXPECT_TRUE(TypeSerializer<T>::Read(r, &back));
  EXPECT_TRUE(r.at_end());
  return back;
}

template <typename T>
bool Parses(std::string_view bytes) {
  BinaryReader r(bytes);
  T v{};
  return TypeSerializer<T>::Read(r, &v);
}

TEST(TypeSerializer, NumbersAreFixedWidthLittleEndian) {
  EXPECT_EQ(Bytes<int32_t>(1), std::string("\x01\x00\x00\x00", 4));
  EXPECT_EQ(Bytes<int64_t>(-2), std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8));
  EXPECT_EQ(Bytes<uint16_t>(0x1234), std::string("\x34\x12", 2));
  EXPECT_EQ(Bytes<int8_t>(-1), std::string("\xff", 1));
  EXPECT_EQ(Bytes<double>(1.0), std::string("\x00\x00\x00\x00\x00\x00\xf0\x3f", 8));
  EXPECT_EQ(RoundTrip<int64_t>(INT64_MIN), INT64_MIN);
  EXPECT_EQ(RoundTrip<uint64_t>(UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(RoundTrip<float>(-0.5f), -0.5f);
  EXPECT_EQ(RoundTrip<double>(3.25), 3.25);
}

TEST(TypeSerializer, BoolIsOneByteZeroOrOne) {
  EXPECT_EQ(Bytes(true), std::string("\x01", 1));
  EXPECT_EQ(Bytes(false), std::string("\x00", 1));
  EXPECT_TRUE(RoundTrip(true));
  EXPECT_FALSE(RoundTrip(false));
  EXPECT_FALSE(Parses<bool>(std::string("\x02", 1)));
  EXPECT_FALSE(Parses<bool>(""));
}

enum class Color : uint8_t { kRed = 1, kBlue = 7 };

TEST(TypeSerializer, EnumsUseTheirUnderlyingType) {
  EXPECT_EQ(Bytes(Color::kBlue), std::string("\x07", 1));
  EXPECT_EQ(RoundTrip(Color::kRed), Color::kRed);
}

TEST(TypeSerializer, StringsAndKeysAreVarintLengthPrefixed) {
  EXPECT_EQ(Bytes(std::string("abc")), std::string("\x03"
                                                   "abc",
                                                   4));
  EXPECT_EQ(Bytes(std::string()), std::string("\x00", 1));
  std::string long_text(200, 'x');
  EXPECT_EQ(Bytes(long_text), std::string("\xc8\x01", 2) + long_text);
  EXPECT_EQ(RoundTrip(long_text), long_text);
  EXPECT_EQ(Bytes(Key::FromBytes("uid-1")), std::string("\x05uid-1", 6));
  Key heap_key = Key::FromBytes(std::string(40, 'k'));  // longer than the inline capacity
  EXPECT_EQ(RoundTrip(heap_key), heap_key);
}

TEST(TypeSerializer, TimestampsAndStrongIdsAreTheirIntegers) {
  EXPECT_EQ(Bytes(Timestamp(258)), std::string("\x02\x01\x00\x00\x00\x00\x00\x00", 8));
  EXPECT_EQ(RoundTrip(kMaxWatermark), kMaxWatermark);
  EXPECT_EQ(Bytes(KeyGroupId(3)), std::string("\x03\x00\x00\x00", 4));
  EXPECT_EQ(RoundTrip(CheckpointId(77)), CheckpointId(77));
}

TEST(TypeSerializer, VectorsAndPairsNest) {
  std::vector<std::pair<std::string, int32_t>> v = {{"a", 1}, {"bc", -2}};
  EXPECT_EQ(Bytes(v), std::string("\x02"
                                  "\x01"
                                  "a"
                                  "\x01\x00\x00\x00"
                                  "\x02"
                                  "bc"
                                  "\xfe\xff\xff\xff",
                                  1 + 6 + 7));
  EXPECT_EQ(RoundTrip(v), v);
  std::vector<std::vector<int64_t>> nested = {{}, {1, 2, 3}};
  EXPECT_EQ(RoundTrip(nested), nested);
}

TEST(TypeSerializer, MapsAreWrittenInAscendingKeyOrder) {
  absl::flat_hash_map<std::string, int32_t> a, b;
  for (int i = 0; i < 100; ++i) a["k" + std::to_string(i)] = i;
  for (int i = 99; i >= 0; --i) b["k" + std::to_string(i)] = i;
  b["extra"] = 1;
  b.erase("extra");
  EXPECT_EQ(Bytes(a), Bytes(b));
  absl::flat_hash_map<int32_t, bool> small = {{2, true}, {1, false}};
  EXPECT_EQ(Bytes(small), std::string("\x02"
                                      "\x01\x00\x00\x00\x00"
                                      "\x02\x00\x00\x00\x01",
                                      11));
  EXPECT_EQ(RoundTrip(a), a);
}

TEST(TypeSerializer, MapWithARepeatedKeyIsMalformed) {
  std::string bytes;
  BinaryWriter w(&bytes);
  w.VarU64(2);
  w.I32(1);
  w.U8(1);
  w.I32(1);
  w.U8(0);
  EXPECT_FALSE((Parses<absl::flat_hash_map<int32_t, bool>>(bytes)));
}

struct Point {
  int32_t x = 0;
  int32_t y = 0;
  void Write(BinaryWriter& out) const {
    out.I32(x);
    out.I32(y);
  }
  bool Read(BinaryReader& in) {
    x = in.I32();
    y = in.I32();
    return in.ok() && x >= 0;  // the struct's own validation
  }
  bool operator==(const Point&) const = default;
};

TEST(TypeSerializer, UserStructsUseTheirOwnWriteAndRead) {
  EXPECT_EQ(Bytes(Point{1, 2}), std::string("\x01\x00\x00\x00\x02\x00\x00\x00", 8));
  std::vector<Point> points = {{1, 2}, {3, 4}};
  EXPECT_EQ(RoundTrip(points), points);
  EXPECT_FALSE(Parses<Point>(Bytes(Point{-1, 0})));
}

TEST(TypeSerializer, EveryTruncationFails) {
  std::vector<std::pair<std::string, absl::flat_hash_map<int64_t, std::vector<bool>>>> value = {
      {"first", {{1, {true, false}}, {2, {}}}}, {"", {}}};
  const std::string bytes = Bytes(value);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(Parses<decltype(value)>(std::string_view(bytes).substr(0, n))) << n;
  }
  EXPECT_TRUE(Parses<decltype(value)>(bytes));
}

TEST(TypeSerializer, ACountLargerThanTheInputFailsWithoutAllocating) {
  std::string bytes;
  BinaryWriter w(&bytes);
  w.VarU64(1ull << 60);
  w.I64(1);
  EXPECT_FALSE(Parses<std::vector<int64_t>>(bytes));
  EXPECT_FALSE(Parses<std::vector<std::string>>(bytes));
  EXPECT_FALSE((Parses<absl::flat_hash_map<int64_t, int64_t>>(bytes)));
  // 2 elements of 8 bytes cannot fit in the 8 bytes that follow.
  std::string two;
  BinaryWriter tw(&two);
  tw.VarU64(2);
  tw.I64(1);
  EXPECT_FALSE(Parses<std::vector<int64_t>>(two));
}

}  // namespace
}  // namespace keyflow
