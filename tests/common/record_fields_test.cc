#include "common/record_fields.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/field_tape_writer.h"
#include "common/record.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

// {"uid":"u1","ts":5,"n":null,"f":false,"t":true,"i":-42,"d":2.5,"s":"x\"y",
//  "a":[1,"two",[]],"o":{"p":{"q":7}}}
std::string EveryTypeTape() {
  std::string tape;
  FieldTapeWriter w(&tape);
  w.BeginObject();
  w.Name("uid");
  w.String("u1");
  w.Name("ts");
  w.Int(5);
  w.Name("n");
  w.Null();
  w.Name("f");
  w.Bool(false);
  w.Name("t");
  w.Bool(true);
  w.Name("i");
  w.Int(-42);
  w.Name("d");
  w.Double(2.5);
  w.Name("s");
  w.String("x\"y");
  w.Name("a");
  w.BeginArray();
  w.Int(1);
  w.String("two");
  w.BeginArray();
  w.EndArray();
  w.EndArray();
  w.Name("o");
  w.BeginObject();
  w.Name("p");
  w.BeginObject();
  w.Name("q");
  w.Int(7);
  w.EndObject();
  w.EndObject();
  w.EndObject();
  EXPECT_EQ(w.depth(), 0u);
  return tape;
}

Record WithFields(std::string tape) {
  Record r;
  r.fields = std::move(tape);
  return r;
}

TEST(RecordFields, EveryTypeReadsBack) {
  const std::string tape = EveryTypeTape();
  ASSERT_OK(ValidateFieldTape(tape));
  FieldValue root = FieldValue::Root(tape);
  EXPECT_EQ(root.type(), FieldType::kObject);
  EXPECT_EQ(root.size(), 10u);
  EXPECT_EQ(root["uid"].AsString(), "u1");
  EXPECT_EQ(root["ts"].AsInt64(), 5);
  EXPECT_EQ(root["n"].type(), FieldType::kNull);
  EXPECT_EQ(root["f"].AsBool(), false);
  EXPECT_EQ(root["t"].AsBool(), true);
  EXPECT_EQ(root["i"].AsInt64(), -42);
  EXPECT_EQ(root["i"].AsDouble(), -42.0);
  EXPECT_EQ(root["d"].type(), FieldType::kDouble);
  EXPECT_EQ(root["d"].AsDouble(), 2.5);
  EXPECT_EQ(root["d"].AsInt64(), std::nullopt);  // JSON integers only
  EXPECT_EQ(root["s"].AsString(), "x\"y");
  EXPECT_EQ(root["a"].type(), FieldType::kArray);
  EXPECT_EQ(root["a"].size(), 3u);
  EXPECT_EQ(root["a"][size_t{0}].AsInt64(), 1);
  EXPECT_EQ(root["a"][1].AsString(), "two");
  EXPECT_EQ(root["a"][2].type(), FieldType::kArray);
  EXPECT_EQ(root["a"][2].size(), 0u);
  EXPECT_EQ(root["o"]["p"]["q"].AsInt64(), 7);
}

TEST(RecordFields, AccessorsOfTheWrongTypeReturnNothing) {
  const std::string tape = EveryTypeTape();
  FieldValue root = FieldValue::Root(tape);
  EXPECT_EQ(root["s"].AsInt64(), std::nullopt);
  EXPECT_EQ(root["s"].AsDouble(), std::nullopt);
  EXPECT_EQ(root["s"].AsBool(), std::nullopt);
  EXPECT_EQ(root["i"].AsString(), std::nullopt);
  EXPECT_EQ(root["n"].AsBool(), std::nullopt);
  EXPECT_EQ(root["t"].AsInt64(), std::nullopt);
  EXPECT_EQ(root["s"].size(), 0u);
  EXPECT_TRUE(root["s"]["x"].is_missing());        // not an object
  EXPECT_TRUE(root["o"][size_t{0}].is_missing());  // not an array
  EXPECT_TRUE(root["a"][3].is_missing());          // out of range
}

TEST(RecordFields, MissingIsNotNull) {
  const std::string tape = EveryTypeTape();
  FieldValue root = FieldValue::Root(tape);
  EXPECT_TRUE(root["n"].is_null());
  EXPECT_FALSE(root["n"].is_missing());
  EXPECT_TRUE(root["nope"].is_missing());
  EXPECT_FALSE(root["nope"].is_null());
  EXPECT_EQ(root["nope"].type(), FieldType::kMissing);
  EXPECT_TRUE(root["nope"]["deeper"][size_t{3}].is_missing());
  EXPECT_EQ(root["nope"].ToJson(), "");
  EXPECT_TRUE(FieldValue::Root("").is_missing());  // a record without fields
}

TEST(RecordFields, ForEachVisitsInSourceOrder) {
  const std::string tape = EveryTypeTape();
  FieldValue root = FieldValue::Root(tape);
  std::vector<std::string> names;
  root.ForEachMember([&](std::string_view name, FieldValue) { names.emplace_back(name); });
  EXPECT_EQ(names, (std::vector<std::string>{"uid", "ts", "n", "f", "t", "i", "d", "s", "a", "o"}));
  std::vector<std::string> elements;
  root["a"].ForEachElement([&](FieldValue v) { elements.push_back(v.ToJson()); });
  EXPECT_EQ(elements, (std::vector<std::string>{"1", "\"two\"", "[]"}));
}

TEST(RecordFields, ToJsonIsCompactJson) {
  const std::string tape = EveryTypeTape();
  EXPECT_EQ(FieldValue::Root(tape).ToJson(),
            R"({"uid":"u1","ts":5,"n":null,"f":false,"t":true,"i":-42,"d":2.5,"s":"x\"y",)"
            R"("a":[1,"two",[]],"o":{"p":{"q":7}}})");
}

TEST(RecordFields, ToJsonEscapesStringsAndKeepsDoublesDoubles) {
  std::string tape;
  FieldTapeWriter w(&tape);
  w.BeginArray();
  w.String(std::string("q\"b\\n\nt\tc\x01\x1f\xc3\xa9", 13));
  w.Double(1.0);
  w.Double(0.1);
  w.Double(-1e300);
  w.Double(123456789.0);
  w.EndArray();
  ASSERT_OK(ValidateFieldTape(tape));
  EXPECT_EQ(FieldValue::Root(tape).ToJson(),
            "[\"q\\\"b\\\\n\\nt\\tc\\u0001\\u001f\xc3\xa9\",1.0,0.1,-1e+300,123456789.0]");
}

TEST(RecordFields, BigIntegersKeepTheirText) {
  std::string tape;
  FieldTapeWriter w(&tape);
  w.BeginObject();
  w.Name("big");
  w.NumberText("123456789012345678901234567890");
  w.Name("huge");
  w.NumberText("1e400");
  w.EndObject();
  ASSERT_OK(ValidateFieldTape(tape));
  FieldValue root = FieldValue::Root(tape);
  EXPECT_EQ(root["big"].type(), FieldType::kInt);
  EXPECT_EQ(root["big"].AsInt64(), std::nullopt);
  EXPECT_DOUBLE_EQ(*root["big"].AsDouble(), 1.2345678901234568e29);
  EXPECT_EQ(root["huge"].type(), FieldType::kDouble);
  EXPECT_EQ(root["huge"].AsDouble(), std::nullopt);
  EXPECT_EQ(root.ToJson(), R"({"big":123456789012345678901234567890,"huge":1e400})");
}

TEST(RecordFields, EncodingFollowsTheDocumentedLayout) {
  std::string tape;
  FieldTapeWriter w(&tape);
  w.BeginObject();
  w.Name("a");
  w.Int(1);
  w.Name("b");
  w.String("xy");
  w.EndObject();
  const std::string expected = std::string("\x01", 1) +        // version
                               std::string("\x08", 1) +        // object
                               std::string("\x15\0\0\0", 4) +  // size 21
                               std::string("\x02\0\0\0", 4) +  // 2 members
                               std::string(
                                   "\x01"
                                   "a",
                                   2) +                                    // name
                               std::string("\x03\x01\0\0\0\0\0\0\0", 9) +  // int 1
                               std::string(
                                   "\x01"
                                   "b",
                                   2) +                       // name
                               std::string("\x05\x02xy", 4);  // string "xy"
  EXPECT_EQ(tape, expected);
}

TEST(RecordFields, LongStringsUseMultiByteLengths) {
  std::string tape;
  FieldTapeWriter w(&tape);
  const std::string long_text(300, 'z');
  w.BeginObject();
  w.Name(long_text);
  w.String(long_text);
  w.Name("after");
  w.Int(3);
  w.EndObject();
  ASSERT_OK(ValidateFieldTape(tape));
  FieldValue root = FieldValue::Root(tape);
  EXPECT_EQ(root[long_text].AsString(), long_text);
  EXPECT_EQ(root["after"].AsInt64(), 3);
}

Status Validate(const std::string& tape) {
  return ValidateFieldTape(tape);
}

TEST(RecordFields, EveryTruncationIsCorruption) {
  const std::string tape = EveryTypeTape();
  for (size_t n = 1; n < tape.size(); ++n) {
    Status s = Validate(tape.substr(0, n));
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << "prefix of " << n << " bytes";
  }
  EXPECT_OK(Validate(""));  // no fields
}

TEST(RecordFields, HostileTapesAreCorruptionWithAReason) {
  const std::string good = EveryTypeTape();
  auto message = [](const std::string& tape) { return Validate(tape).message(); };
  std::string v = good;
  v[0] = 2;
  EXPECT_EQ(message(v), "malformed field tape at byte 0: version 2, this build reads 1");
  EXPECT_EQ(message(good + "x"), "malformed field tape at byte " + std::to_string(good.size()) +
                                     ": 1 bytes after the root value");
  EXPECT_EQ(message(std::string("\x01\x09", 2)), "malformed field tape at byte 1: unknown tag 9");
  // Object claiming 1 member but holding 2 (size covers both).
  v = good;
  v[6] = 1;
  EXPECT_NE(message(v).find("container holds more than its 1 members"), std::string::npos)
      << message(v);
  // Container size beyond the tape.
  v = good;
  v[5] = '\x7f';
  EXPECT_NE(message(v).find("does not fit"), std::string::npos) << message(v);
  // Overlong varint string length.
  EXPECT_NE(message(std::string("\x01\x05\xff\xff\xff\xff\x7f", 7)).find("overlong"),
            std::string::npos);
  // Non-finite double.
  std::string inf_tape("\x01\x04", 2);
  double inf = INFINITY;
  inf_tape.append(reinterpret_cast<const char*>(&inf), 8);
  EXPECT_NE(message(inf_tape).find("non-finite"), std::string::npos);
}

// An array containing an array ... `depth` containers deep.
std::string Nested(int depth) {
  std::string tape;
  FieldTapeWriter w(&tape);
  for (int i = 0; i < depth; ++i) w.BeginArray();
  for (int i = 0; i < depth; ++i) w.EndArray();
  return tape;
}

TEST(RecordFields, NestingIsBounded) {
  EXPECT_OK(Validate(Nested(kMaxFieldDepth)));
  // One more level, written by hand (the writer refuses it in debug builds).
  std::string deeper = "\x01";
  const std::string inner = Nested(kMaxFieldDepth).substr(1);
  const uint32_t size = static_cast<uint32_t>(4 + inner.size());
  deeper.push_back('\x07');
  deeper.append(reinterpret_cast<const char*>(&size), 4);
  const uint32_t one = 1;
  deeper.append(reinterpret_cast<const char*>(&one), 4);
  deeper += inner;
  EXPECT_NE(Validate(deeper).message().find("nested deeper than 1024"), std::string::npos)
      << Validate(deeper).message();
}

TEST(RecordFields, EveryByteFlipIsRejectedOrSafeToRead) {
  const std::string good = EveryTypeTape();
  int accepted = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string v = good;
      v[i] = static_cast<char>(v[i] ^ (1 << bit));
      Status s = Validate(v);
      if (!s.ok()) {
        EXPECT_EQ(s.code(), StatusCode::kCorruption);
        continue;
      }
      ++accepted;  // e.g. a flipped letter or number: walking it must stay in bounds
      FieldValue root = FieldValue::Root(v);
      EXPECT_FALSE(root.ToJson().empty());
      root.ForEachMember([](std::string_view, FieldValue value) { (void)value.ToJson(); });
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(RecordAccessors, TypedReadsOfTopLevelFields) {
  Record r = WithFields(EveryTypeTape());
  EXPECT_EQ(*r.GetInt64("ts"), 5);
  EXPECT_EQ(*r.GetString("uid"), "u1");
  EXPECT_EQ(*r.GetDouble("d"), 2.5);
  EXPECT_EQ(*r.GetDouble("i"), -42.0);
  EXPECT_EQ(*r.GetBool("t"), true);
  EXPECT_EQ(r.field("o")["p"]["q"].AsInt64(), 7);
  EXPECT_EQ(r.object().size(), 10u);
}

TEST(RecordAccessors, ErrorsAreSentencesNamingTheField) {
  Record r = WithFields(EveryTypeTape());
  EXPECT_EQ(r.GetInt64("amount").status().message(), "field 'amount' is missing");
  EXPECT_EQ(r.GetInt64("s").status().message(), "field 's' is a string, not an integer");
  EXPECT_EQ(r.GetInt64("d").status().message(), "field 'd' is a double, not an integer");
  EXPECT_EQ(r.GetDouble("n").status().message(), "field 'n' is null, not a number");
  EXPECT_EQ(r.GetString("i").status().message(), "field 'i' is an integer, not a string");
  EXPECT_EQ(r.GetBool("o").status().message(), "field 'o' is an object, not a boolean");
  EXPECT_EQ(r.GetInt64("a").status().code(), StatusCode::kInvalidArgument);

  std::string tape;
  FieldTapeWriter w(&tape);
  w.BeginObject();
  w.Name("big");
  w.NumberText("99999999999999999999");
  w.EndObject();
  Record big = WithFields(tape);
  EXPECT_EQ(big.GetInt64("big").status().message(),
            "field 'big' is 99999999999999999999, beyond the 64-bit range");
  EXPECT_DOUBLE_EQ(*big.GetDouble("big"), 1e20);
}

TEST(RecordAccessors, RawJsonIsTheTapeAsJsonUnlessAPayloadWasKept) {
  Record r = WithFields(EveryTypeTape());
  EXPECT_EQ(r.raw_json(), FieldValue::Root(r.fields).ToJson());
  EXPECT_EQ(r.raw_json_cache, r.raw_json());  // made once
  r.payload = R"({"uid": "u1"})";
  EXPECT_EQ(r.raw_json(), R"({"uid": "u1"})");
}

TEST(RecordAccessors, RecordsOfJobsThatReadNoFieldsSaySo) {
  Record r;
  r.payload = "";
  EXPECT_TRUE(r.field("uid").is_missing());
  EXPECT_EQ(r.raw_json(), "");
  EXPECT_EQ(r.GetInt64("amount").status().message(),
            "field 'amount' cannot be read: records carry no fields because the job's "
            "definition sets reads_fields = false; set it to true");
}

}  // namespace
}  // namespace keyflow
