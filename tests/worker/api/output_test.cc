#include "worker/api/output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace keyflow {
namespace {

TEST(JsonObject, BuildsMembersInTheOrderAdded) {
  JsonObject o;
  o.Add("user", "u1")
      .Add("sum", int64_t{42})
      .Add("n", 7)
      .Add("big", uint64_t{18446744073709551615u});
  o.Add("avg", 0.25).Add("ok", true).Add("no", false).AddNull("none");
  EXPECT_EQ(o.Build(),
            R"({"user":"u1","sum":42,"n":7,"big":18446744073709551615,"avg":0.25,"ok":true,)"
            R"("no":false,"none":null})");
}

TEST(JsonObject, ADoubleStaysADoubleWhenItIsAWholeNumber) {
  EXPECT_EQ(JsonObject().Add("a", 600.0).Add("b", 0.5).Add("c", 1e21).Build(),
            R"({"a":600.0,"b":0.5,"c":1e+21})");
}

TEST(JsonArray, BuildsElementsInTheOrderAddedAndNests) {
  JsonArray inner;
  inner.Add(int64_t{1}).Add("x");
  std::string text = JsonArray()
                         .Add("u\"1")
                         .Add(int64_t{-3})
                         .Add(uint64_t{18446744073709551615u})
                         .Add(600.0)
                         .Add(true)
                         .AddNull()
                         .Add(JsonObject().Add("k", 2))
                         .Add(std::move(inner))
                         .Add(JsonArray())
                         .Build();
  EXPECT_EQ(text, R"(["u\"1",-3,18446744073709551615,600.0,true,null,{"k":2},[1,"x"],[]])");
}

TEST(JsonArray, IsAMemberOfAnObjectAndIsEmptyAfterBuild) {
  JsonArray a;
  a.Add(Key::FromInt64(7), KeyType::kLong).Add(Key::FromBytes("s"), KeyType::kString);
  EXPECT_EQ(JsonObject().Add("keys", std::move(a)).Add("o", JsonObject()).Build(),
            R"({"keys":[7,"s"],"o":{}})");
  JsonArray b;
  b.Add(1);
  EXPECT_EQ(b.Build(), "[1]");
  EXPECT_EQ(b.Build(), "[]");
}

TEST(JsonObject, AnEmptyObjectIsBraces) {
  EXPECT_EQ(JsonObject().Build(), "{}");
}

TEST(JsonObject, IsEmptyAfterBuildAndCanBeReused) {
  JsonObject o;
  EXPECT_EQ(o.Add("a", 1).Build(), R"({"a":1})");
  EXPECT_EQ(o.Build(), "{}");
  EXPECT_EQ(o.Add("b", 2).Build(), R"({"b":2})");
}

TEST(JsonObject, EscapesNamesAndStringsAndReplacesInvalidUtf8) {
  JsonObject o;
  o.Add("q\"uote", std::string("a\\b\n\x01")).Add("bad", std::string_view("x\xff", 2));
  EXPECT_EQ(o.Build(), "{\"q\\\"uote\":\"a\\\\b\\u000a\\u0001\",\"bad\":\"x\xEF\xBF\xBD\"}");
}

TEST(JsonObject, WritesDoublesShortestAndNonFiniteAsNull) {
  JsonObject o;
  o.Add("third", 1.0 / 3)
      .Add("nan", std::nan(""))
      .Add("inf", std::numeric_limits<double>::infinity());
  EXPECT_EQ(o.Build(), R"({"third":0.3333333333333333,"nan":null,"inf":null})");
}

TEST(JsonObject, WritesKeysAsStringsOrNumbersByKeyType) {
  JsonObject o;
  o.Add("s", Key::FromBytes("u-1"), KeyType::kString).Add("l", Key::FromInt64(-12), KeyType::kLong);
  EXPECT_EQ(o.Build(), R"({"s":"u-1","l":-12})");
}

TEST(JsonObject, NestsObjectsThroughAddRaw) {
  JsonObject inner;
  inner.Add("x", 1);
  JsonObject outer;
  outer.AddRaw("inner", inner.Build()).AddRaw("list", "[1,2]");
  EXPECT_EQ(outer.Build(), R"({"inner":{"x":1},"list":[1,2]})");
}

TEST(OutputRecord, ALineOrAnObjectConvertsImplicitlyWithoutATimestamp) {
  OutputRecord line = std::string("raw");
  EXPECT_EQ(line.line, "raw");
  EXPECT_FALSE(line.timestamp.has_value());
  OutputRecord object = JsonObject().Add("a", 1);
  EXPECT_EQ(object.line, R"({"a":1})");
  EXPECT_FALSE(object.timestamp.has_value());
  OutputRecord timed(JsonObject().Add("a", 1), Timestamp(5));
  EXPECT_EQ(timed.timestamp, Timestamp(5));
  EXPECT_EQ(OutputRecord(std::string("x"), Timestamp(5)),
            OutputRecord(std::string("x"), Timestamp(5)));
}

}  // namespace
}  // namespace keyflow
