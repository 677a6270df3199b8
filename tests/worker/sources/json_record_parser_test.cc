#include "worker/sources/json_record_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/record_fields.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;

JsonRecordFormat Format(KeyType type = KeyType::kString) {
  JsonRecordFormat f;
  f.key_type = type;
  return f;
}

Record ParseOk(JsonRecordParser& parser, std::string_view line) {
  Record r;
  Status s = parser.Parse(line, &r);
  EXPECT_OK(s) << line << " -> " << s.ToString();
  return r;
}

Status ParseError(JsonRecordParser& parser, std::string_view line) {
  Record r;
  return parser.Parse(line, &r);
}

TEST(JsonRecordParser, ReadsStringKeyTimestampAndKeyGroup) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  Record r = ParseOk(parser, R"({"uid":"user-42","ts":1700000000123,"action":"click"})");
  EXPECT_EQ(r.key, Key::FromBytes("user-42"));
  EXPECT_EQ(r.timestamp, Timestamp(1700000000123));
  EXPECT_EQ(r.key_group,
            *AssignToKeyGroup(Key::FromBytes("user-42"), KeyType::kString, kMaxParallelism));
  EXPECT_EQ(r.payload, "");
}

TEST(JsonRecordParser, KeyGroupOfStringKeyMatchesFlink) {
  // "hello".hashCode() = 99162322; murmurHash -> key group for M = 128, as pinned in
  // tests/common/key_group_assignment_test.cc through AssignToKeyGroup.
  JsonRecordParser parser(Format(), kMaxParallelism);
  Record r = ParseOk(parser, R"({"ts":0,"uid":"hello"})");
  EXPECT_EQ(r.key_group, ComputeKeyGroupForKeyHash(99162322, kMaxParallelism));
}

TEST(JsonRecordParser, KeepsTheRawLineAsPayloadWhenAsked) {
  JsonRecordFormat f = Format();
  f.keep_payload = true;
  JsonRecordParser parser(f, kMaxParallelism);
  std::string line = R"({"uid":"a", "ts":5, "v":[1,2,3]})";
  EXPECT_EQ(ParseOk(parser, line).payload, line);
}

TEST(JsonRecordParser, UsesConfiguredFieldNames) {
  JsonRecordFormat f = Format();
  f.key_field = "user";
  f.timestamp_field = "time";
  JsonRecordParser parser(f, kMaxParallelism);
  Record r = ParseOk(parser, R"({"uid":"ignored","user":"u1","ts":"x","time":77})");
  EXPECT_EQ(r.key, Key::FromBytes("u1"));
  EXPECT_EQ(r.timestamp, Timestamp(77));
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":1})"), InvalidArgument("missing field 'user'"));
}

// An empty timestamp field: the caller sets the time (the Kafka source's ts=kafka). No time
// field is required, and a "ts" member is an ordinary field (here a string, kept in the tape).
TEST(JsonRecordParser, WithoutATimestampFieldTheTimeIsLeftToTheCallerAndTsIsAnOrdinaryField) {
  JsonRecordFormat f = Format();
  f.timestamp_field.clear();
  f.keep_fields = true;
  JsonRecordParser parser(f, kMaxParallelism);
  Record r;
  r.timestamp = Timestamp(1234);
  ASSERT_OK(parser.Parse(R"({"uid":"u1","ts":"not a time","":7})", &r));
  EXPECT_EQ(r.key, Key::FromBytes("u1"));
  EXPECT_EQ(r.timestamp, Timestamp(1234)) << "untouched: the caller's to set";
  EXPECT_EQ(r.raw_json(), R"({"uid":"u1","ts":"not a time","":7})");
  ASSERT_OK(parser.Parse(R"({"uid":"u2"})", &r));
  EXPECT_EQ(r.key, Key::FromBytes("u2"));
  EXPECT_EQ(ParseError(parser, R"({"ts":1})"), InvalidArgument("missing field 'uid'"));
}

TEST(JsonRecordParser, UnicodeKeysAreUtf8TextWithEscapesDecoded) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  Record raw = ParseOk(parser, "{\"uid\":\"caf\xC3\xA9-\xF0\x9F\x98\x80\",\"ts\":1}");
  Record escaped = ParseOk(parser, R"({"uid":"caf\u00e9-\ud83d\ude00","ts":1})");
  EXPECT_EQ(raw.key.bytes(), "caf\xC3\xA9-\xF0\x9F\x98\x80");
  EXPECT_EQ(escaped.key, raw.key);
  EXPECT_EQ(escaped.key_group, raw.key_group);
  Record quote = ParseOk(parser, R"({"uid":"a\"b\\c\nd","ts":1})");
  EXPECT_EQ(quote.key.bytes(), "a\"b\\c\nd");
  Record empty = ParseOk(parser, R"({"uid":"","ts":1})");
  EXPECT_EQ(empty.key, Key::FromBytes(""));
  std::string long_key(100, 'k');
  EXPECT_EQ(ParseOk(parser, R"({"uid":")" + long_key + R"(","ts":1})").key.bytes(), long_key);
}

TEST(JsonRecordParser, ExtraFieldsOfAnyTypeAreIgnored) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  Record r = ParseOk(parser, R"( { "a":{"b":[1,-2.5e3,true,false,null,{"c":"d"}]}, "uid" : "k" ,)"
                             R"("big":123456789012345678901234567890, "ts" : -5 , "z":[] } )");
  EXPECT_EQ(r.key, Key::FromBytes("k"));
  EXPECT_EQ(r.timestamp, Timestamp(-5));
}

TEST(JsonRecordParser, MissingFieldsAreNamed) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  EXPECT_EQ(ParseError(parser, R"({"ts":1})"), InvalidArgument("missing field 'uid'"));
  EXPECT_EQ(ParseError(parser, R"({"uid":"a"})"), InvalidArgument("missing field 'ts'"));
  EXPECT_EQ(ParseError(parser, R"({})"), InvalidArgument("missing field 'uid'"));
}

TEST(JsonRecordParser, WrongTypesAreRejected) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  const Status not_string = InvalidArgument(
      "field 'uid' is not a string (key type string; use "
      "--key-type int or long for numeric "
      "keys)");
  EXPECT_EQ(ParseError(parser, R"({"uid":42,"ts":1})"), not_string);
  EXPECT_EQ(ParseError(parser, R"({"uid":null,"ts":1})"), not_string);
  EXPECT_EQ(ParseError(parser, R"({"uid":["a"],"ts":1})"), not_string);
  const Status ts_not_int = InvalidArgument("field 'ts' is not an integer (epoch milliseconds)");
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":1.5})"), ts_not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":1e3})"), ts_not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":"1700000000000"})"), ts_not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":null})"), ts_not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":{"ms":1}})"), ts_not_int);
}

TEST(JsonRecordParser, TimestampCoversInt64AndRejectsBeyond) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  EXPECT_EQ(ParseOk(parser, R"({"uid":"a","ts":9223372036854775807})").timestamp,
            Timestamp(INT64_MAX));
  EXPECT_EQ(ParseOk(parser, R"({"uid":"a","ts":-9223372036854775808})").timestamp,
            Timestamp(INT64_MIN));
  const Status out_of_range = InvalidArgument("field 'ts' is out of range for a 64-bit integer");
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":9223372036854775808})"), out_of_range);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":-9223372036854775809})"), out_of_range);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":123456789012345678901234567890})"), out_of_range);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":-123456789012345678901234567890})"),
            out_of_range);
}

TEST(JsonRecordParser, IntKeysAcceptIntegersAndNumericStringsInRange) {
  JsonRecordParser parser(Format(KeyType::kInt), kMaxParallelism);
  Record r = ParseOk(parser, R"({"uid":-7,"ts":1})");
  EXPECT_EQ(r.key, Key::FromInt64(-7));
  EXPECT_EQ(r.key_group, *AssignToKeyGroup(Key::FromInt64(-7), KeyType::kInt, kMaxParallelism));
  EXPECT_EQ(ParseOk(parser, R"({"uid":"-7","ts":1})").key, Key::FromInt64(-7));
  EXPECT_EQ(ParseOk(parser, R"({"uid":2147483647,"ts":1})").key, Key::FromInt64(INT32_MAX));
  EXPECT_EQ(ParseOk(parser, R"({"uid":"-2147483648","ts":1})").key, Key::FromInt64(INT32_MIN));

  const Status out_of_range = InvalidArgument(
      "field 'uid' is out of range for key type int (32-bit); "
      "use --key-type long");
  EXPECT_EQ(ParseError(parser, R"({"uid":2147483648,"ts":1})"), out_of_range);
  EXPECT_EQ(ParseError(parser, R"({"uid":"-2147483649","ts":1})"), out_of_range);
  EXPECT_EQ(ParseError(parser, R"({"uid":99999999999999999999,"ts":1})"), out_of_range);

  const Status not_int = InvalidArgument("field 'uid' is not an integer (key type int)");
  EXPECT_EQ(ParseError(parser, R"({"uid":1.0,"ts":1})"), not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":"12a","ts":1})"), not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":" 12","ts":1})"), not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":"+12","ts":1})"), not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":"","ts":1})"), not_int);
  EXPECT_EQ(ParseError(parser, R"({"uid":true,"ts":1})"), not_int);
}

TEST(JsonRecordParser, LongKeysCoverInt64) {
  JsonRecordParser parser(Format(KeyType::kLong), kMaxParallelism);
  Record r = ParseOk(parser, R"({"uid":9223372036854775807,"ts":1})");
  EXPECT_EQ(r.key, Key::FromInt64(INT64_MAX));
  EXPECT_EQ(r.key_group,
            *AssignToKeyGroup(Key::FromInt64(INT64_MAX), KeyType::kLong, kMaxParallelism));
  EXPECT_EQ(ParseOk(parser, R"({"uid":"-9223372036854775808","ts":1})").key,
            Key::FromInt64(INT64_MIN));
  const Status out_of_range =
      InvalidArgument("field 'uid' is out of range for key type long (64-bit)");
  EXPECT_EQ(ParseError(parser, R"({"uid":9223372036854775808,"ts":1})"), out_of_range);
  EXPECT_EQ(ParseError(parser, R"({"uid":"9223372036854775808","ts":1})"), out_of_range);
}

TEST(JsonRecordParser, InvalidJsonIsRejectedWhereverItIs) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  const std::vector<std::string> lines = {
      R"({"uid":"a","ts":1)",                          // unterminated object
      R"({"uid":"a" "ts":1})",                         // missing comma
      R"({"uid":"a","ts":1,})",                        // trailing comma
      R"({"uid":"a","ts":1}})",                        // extra brace
      R"({"uid":"a","ts":1} {"b":2})",                 // two objects
      R"({"uid":"a","ts":01})",                        // leading zero
      R"({"uid":"a","ts":1x})",                        // junk in a number
      R"({"uid":"a","ts":1,"x":tru})",                 // bad literal in an ignored field
      R"({"uid":"a","ts":1,"x":nul})",                 // bad literal in an ignored field
      R"({"uid":"a","ts":1,"x":[1,}})",                // bad array in an ignored field
      R"({"uid":"a","ts":1,"x":"\q"})",                // bad escape in an ignored field
      "{\"uid\":\"a\",\"ts\":1,\"x\":\"tab\there\"}",  // unescaped control
                                                       // character
      R"({"uid":"\ud800","ts":1})",                    // lone surrogate escape
      R"({uid:"a","ts":1})",                           // unquoted name
  };
  for (const std::string& line : lines) {
    Status s = ParseError(parser, line);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << line;
    EXPECT_EQ(s.message().rfind("invalid JSON: ", 0), 0u) << line << " -> " << s.message();
  }
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":1} x)").message().rfind("invalid JSON: ", 0), 0u);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":1}})"),
            InvalidArgument("invalid JSON: unexpected content after the object"));
}

TEST(JsonRecordParser, NonObjectLinesAreRejected) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  for (std::string_view line : {"[1,2]", "\"uid\"", "42", "null", "true"}) {
    EXPECT_EQ(ParseError(parser, line), InvalidArgument("line is not a JSON object")) << line;
  }
}

TEST(JsonRecordParser, InvalidUtf8IsRejectedAnywhere) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  EXPECT_EQ(ParseError(parser, "{\"uid\":\"a\xFF\",\"ts\":1}"), InvalidArgument("invalid UTF-8"));
  EXPECT_EQ(ParseError(parser, "{\"uid\":\"a\",\"ts\":1,\"n\":\"\xC3\"}"),
            InvalidArgument("invalid UTF-8"));
  EXPECT_EQ(ParseError(parser,
                       "{\"uid\":\"\xED\xA0\x80\",\"ts\":1}"),  // encoded surrogate
            InvalidArgument("invalid UTF-8"));
  EXPECT_EQ(ParseError(parser, "{\"uid\":\"\xC0\xAF\",\"ts\":1}"),  // overlong '/'
            InvalidArgument("invalid UTF-8"));
}

TEST(JsonRecordParser, DuplicateKeyOrTimestampFieldIsAnError) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","ts":1,"uid":"b"})"),
            InvalidArgument("duplicate field 'uid'"));
  EXPECT_EQ(ParseError(parser, R"({"ts":1,"uid":"a","ts":2})"),
            InvalidArgument("duplicate field 'ts'"));
}

TEST(JsonRecordParser, EscapedFieldNamesMatch) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  Record r = ParseOk(parser, R"({"u\u0069d":"k","\u0074s":3})");
  EXPECT_EQ(r.key, Key::FromBytes("k"));
  EXPECT_EQ(r.timestamp, Timestamp(3));
}

TEST(JsonRecordParser, ZeroCopyParseOnAPaddedBufferEqualsCopyingParse) {
  JsonRecordParser parser(Format(), kMaxParallelism);
  // Two lines in one buffer: the first is parsed in place; the bytes after it (the next line) are
  // its padding.
  std::string buf = R"({"uid":"a","ts":1})"
                    "\n"
                    R"({"uid":"b","ts":2})";
  buf.resize(buf.size() + kJsonPadding, '\0');
  Record in_place;
  size_t first = buf.find('\n');
  ASSERT_OK(parser.Parse(std::string_view(buf.data(), first), buf.size(), &in_place));
  Record copied = ParseOk(parser, buf.substr(0, first));
  EXPECT_EQ(in_place, copied);
  EXPECT_EQ(in_place.key, Key::FromBytes("a"));
}

// keep_fields: the one walk over the line also writes its field tape.
JsonRecordFormat WithFields(KeyType type = KeyType::kString) {
  JsonRecordFormat f = Format(type);
  f.keep_fields = true;
  return f;
}

Record ParseWithFields(JsonRecordParser& parser, std::string_view line) {
  Record r = ParseOk(parser, line);
  EXPECT_OK(ValidateFieldTape(r.fields));
  return r;
}

TEST(JsonRecordParserFields, KeepsEveryFieldAndTheRawLine) {
  JsonRecordParser parser(WithFields(), kMaxParallelism);
  const std::string line =
      R"({"uid":"u\u0031", "ts":1700000000123, "amount":42, "price":-2.5e1, "ok":true,)"
      R"( "no":false, "nothing":null, "note":"a\"b\\c\n", "tags":["x",1,[2.0]],)"
      R"( "address":{"city":"Z\u00fcrich","zip":8001}})";
  Record r = ParseWithFields(parser, line);
  EXPECT_EQ(r.key, Key::FromBytes("u1"));
  EXPECT_EQ(r.timestamp, Timestamp(1700000000123));
  EXPECT_TRUE(r.payload.empty());  // the line itself is not kept: raw_json() renders the tape
  EXPECT_EQ(r.raw_json(), r.object().ToJson());
  EXPECT_EQ(*r.GetString("uid"), "u1");  // the key and timestamp are fields too
  EXPECT_EQ(*r.GetInt64("ts"), 1700000000123);
  EXPECT_EQ(*r.GetInt64("amount"), 42);
  EXPECT_EQ(*r.GetDouble("price"), -25.0);
  EXPECT_EQ(r.field("price").type(), FieldType::kDouble);
  EXPECT_EQ(*r.GetBool("ok"), true);
  EXPECT_EQ(*r.GetBool("no"), false);
  EXPECT_TRUE(r.field("nothing").is_null());
  EXPECT_TRUE(r.field("absent").is_missing());
  EXPECT_EQ(*r.GetString("note"), "a\"b\\c\n");
  EXPECT_EQ(r.field("tags").size(), 3u);
  EXPECT_EQ(r.field("tags")[2][size_t{0}].AsDouble(), 2.0);
  EXPECT_EQ(r.field("address")["city"].AsString(), "Z\xc3\xbcrich");
  EXPECT_EQ(r.field("address")["zip"].AsInt64(), 8001);
  EXPECT_EQ(r.object().ToJson(),
            R"({"uid":"u1","ts":1700000000123,"amount":42,"price":-25.0,"ok":true,"no":false,)"
            R"("nothing":null,"note":"a\"b\\c\n","tags":["x",1,[2.0]],)"
            "\"address\":{\"city\":\"Z\xc3\xbcrich\",\"zip\":8001}}");
}

TEST(JsonRecordParserFields, NumbersBeyondInt64KeepTheirText) {
  JsonRecordParser parser(WithFields(), kMaxParallelism);
  Record r = ParseWithFields(
      parser, R"({"uid":"a","ts":1,"u":18446744073709551615,)"
              R"("big":123456789012345678901234567890 ,"min":-9223372036854775808})");
  EXPECT_EQ(r.field("u").type(), FieldType::kInt);
  EXPECT_EQ(r.field("u").AsInt64(), std::nullopt);
  EXPECT_EQ(r.field("u").ToJson(), "18446744073709551615");
  EXPECT_EQ(r.field("big").ToJson(), "123456789012345678901234567890");
  EXPECT_EQ(r.field("min").AsInt64(), INT64_MIN);
  EXPECT_EQ(r.GetInt64("big").status().message(),
            "field 'big' is 123456789012345678901234567890, beyond the 64-bit range");
}

TEST(JsonRecordParserFields, IntegerKeysKeepTheirJsonForm) {
  JsonRecordParser parser(WithFields(KeyType::kLong), kMaxParallelism);
  Record from_number = ParseWithFields(parser, R"({"uid":7,"ts":1})");
  EXPECT_EQ(from_number.key, Key::FromInt64(7));
  EXPECT_EQ(from_number.field("uid").AsInt64(), 7);
  Record from_string = ParseWithFields(parser, R"({"uid":"7","ts":1})");
  EXPECT_EQ(from_string.key, Key::FromInt64(7));
  EXPECT_EQ(from_string.field("uid").AsString(), "7");
}

TEST(JsonRecordParserFields, MalformedLinesStayErrors) {
  JsonRecordParser parser(WithFields(), kMaxParallelism);
  for (std::string_view line : {
           R"({"uid":"a","ts":1,"x":[1,2})",
           R"({"uid":"a","ts":1,"x":tru})",
           R"({"uid":"a","ts":1,"x":nul})",
           R"({"uid":"a","ts":1,"x":01})",
           R"({"uid":"a","ts":1,"x":{"y":}})",
           R"({"uid":"a","ts":1} x)",
           R"({"uid":"a","ts":1,"uid":"b"})",
           R"({"ts":1,"x":1})",
       }) {
    Record r;
    EXPECT_EQ(parser.Parse(line, &r).code(), StatusCode::kInvalidArgument) << line;
  }
}

TEST(JsonRecordParserFields, ToJsonParsesBackToTheSameFields) {
  JsonRecordParser parser(WithFields(), kMaxParallelism);
  Record first = ParseWithFields(
      parser, R"({ "ts" : 3, "uid" : "\ud83d\ude00", "d": 1E2, "e": 0.1, "s": "\t\u0001", )"
              R"("a": [[], {}, -0, 1e400] })");
  Record second = ParseWithFields(parser, first.object().ToJson());
  EXPECT_EQ(second.fields, first.fields) << first.object().ToJson();
  EXPECT_EQ(second.key, first.key);
}

TEST(JsonRecordParserFields, WithoutKeepFieldsNothingIsKept) {
  JsonRecordParser with(WithFields(), kMaxParallelism);
  JsonRecordParser without(JsonRecordFormat{}, kMaxParallelism);
  Record r;
  ASSERT_OK(with.Parse(R"({"uid":"a","ts":1,"x":2})", &r));
  ASSERT_FALSE(r.fields.empty());
  ASSERT_OK(without.Parse(R"({"uid":"a","ts":1,"x":2})", &r));  // the reused record
  EXPECT_TRUE(r.fields.empty());
  EXPECT_TRUE(r.payload.empty());
  EXPECT_TRUE(r.field("x").is_missing());
}

TEST(JsonRecordParserFields, DeeplyNestedValuesAreKept) {
  JsonRecordParser parser(WithFields(), kMaxParallelism);
  std::string deep(200, '[');
  deep += "1";
  deep += std::string(200, ']');
  Record r = ParseWithFields(parser, R"({"uid":"a","ts":1,"deep":)" + deep + "}");
  FieldValue v = r.field("deep");
  for (int i = 0; i < 200; ++i) v = v[size_t{0}];
  EXPECT_EQ(v.AsInt64(), 1);
}

TEST(JsonRecordParserFields, LongDecimalsAreReadExactly) {
  // simdjson 3.0.1's get_number() reads 184467440737095520.0 as 0 (found by the fuzzer's
  // ToJson round trip); the tape holds the correctly rounded double.
  JsonRecordParser parser(WithFields(), kMaxParallelism);
  Record r = ParseWithFields(
      parser, R"({"uid":"a","ts":1,"a":184467440737095520.0,"b":18446744073709551e1,"c":0.1})");
  EXPECT_EQ(r.field("a").AsDouble(), 184467440737095520.0);
  EXPECT_EQ(r.field("b").AsDouble(), 18446744073709551e1);
  EXPECT_EQ(r.field("c").AsDouble(), 0.1);
}

TEST(JsonRecordParserFields, ADuplicateNameKeepsBothAndTheFirstWins) {
  JsonRecordParser parser(WithFields(), kMaxParallelism);
  Record r = ParseWithFields(parser, R"({"uid":"a","ts":1,"x":1,"x":"two"})");
  EXPECT_EQ(r.field("x").AsInt64(), 1);
  EXPECT_EQ(r.object().size(), 4u);
  EXPECT_EQ(r.object().ToJson(), R"({"uid":"a","ts":1,"x":1,"x":"two"})");
}

TEST(JsonRecordParserFields, ParseRecordWithFieldsMakesATestRecord) {
  Result<Record> r = ParseRecordWithFields(R"({"uid":"u1","ts":1000,"amount":5})");
  ASSERT_OK(r);
  EXPECT_EQ(r->key, Key::FromBytes("u1"));
  EXPECT_EQ(r->timestamp, Timestamp(1000));
  EXPECT_EQ(*r->GetInt64("amount"), 5);
  EXPECT_EQ(r->raw_json(), R"({"uid":"u1","ts":1000,"amount":5})");
  EXPECT_EQ(ParseRecordWithFields(R"({"uid":"u1"})").status().message(), "missing field 'ts'");
}

// A projection (JsonRecordFormat::fields, the job's declared fields): only the listed top-level
// members reach the tape, in source order; the others are still validated, then dropped.
JsonRecordFormat Projected(std::vector<std::string> fields, KeyType type = KeyType::kString) {
  JsonRecordFormat f = WithFields(type);
  f.fields = std::move(fields);
  return f;
}

TEST(JsonRecordParserProjection, KeepsOnlyTheListedMembersInSourceOrder) {
  const std::string line =
      R"({"uid":"u1","ts":7,"x":[1,{"y":true}],"amount":5,"note":"abc","price":2.5})";
  JsonRecordParser amount(Projected({"amount"}), kMaxParallelism);
  Record r = ParseWithFields(amount, line);
  EXPECT_EQ(r.key, Key::FromBytes("u1"));  // key and timestamp are read whatever is listed
  EXPECT_EQ(r.timestamp, Timestamp(7));
  EXPECT_EQ(r.raw_json(), R"({"amount":5})");
  EXPECT_TRUE(r.field("uid").is_missing());
  EXPECT_TRUE(r.field("note").is_missing());

  // Listed order does not matter; the key and timestamp fields are kept when listed.
  JsonRecordParser three(Projected({"price", "uid", "ts"}), kMaxParallelism);
  EXPECT_EQ(ParseWithFields(three, line).raw_json(), R"({"uid":"u1","ts":7,"price":2.5})");
  // A nested member is kept whole; a listed name the line lacks is simply missing.
  JsonRecordParser nested(Projected({"x", "absent"}), kMaxParallelism);
  EXPECT_EQ(ParseWithFields(nested, line).raw_json(), R"({"x":[1,{"y":true}]})");
  // Nothing listed is on the line: an empty object, not "no fields".
  JsonRecordParser none(Projected({"absent"}), kMaxParallelism);
  Record empty = ParseWithFields(none, line);
  EXPECT_EQ(empty.raw_json(), "{}");
  EXPECT_EQ(empty.GetInt64("amount").status().message(), "field 'amount' is missing");
}

TEST(JsonRecordParserProjection, MatchesUnescapedNamesKeepsDuplicatesAndIntegerKeys) {
  JsonRecordFormat f = Projected({"amount", "id"}, KeyType::kLong);
  f.key_field = "id";
  JsonRecordParser by_id(f, kMaxParallelism);
  Record r = ParseWithFields(by_id, R"({"id":42,"ts":1,"am\u006funt":3,"amount":4,"b":0})");
  EXPECT_EQ(r.key, Key::FromInt64(42));
  EXPECT_EQ(r.raw_json(), R"({"id":42,"amount":3,"amount":4})");
  EXPECT_EQ(*r.GetInt64("amount"), 3);  // the first of two wins, as without a projection
}

TEST(JsonRecordParserProjection, ADroppedMemberMustStillBeValidJson) {
  JsonRecordParser parser(Projected({"amount"}), kMaxParallelism);
  for (std::string_view line : {
           R"({"uid":"a","ts":1,"x":[1,,2],"amount":5})",
           R"({"uid":"a","ts":1,"x":{"y":tru},"amount":5})",
           R"({"uid":"a","ts":1,"x":"\ud800","amount":5})",
           R"({"uid":"a","ts":1,"amount":5,"x":01})",
       }) {
    Status s = ParseError(parser, line);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << line;
    EXPECT_TRUE(s.message().starts_with("invalid JSON")) << line << " -> " << s.ToString();
  }
  // The key and timestamp are checked even when not listed.
  EXPECT_EQ(ParseError(parser, R"({"uid":1,"ts":1,"amount":5})").message(),
            "field 'uid' is not a string (key type string; use --key-type int or long for "
            "numeric keys)");
  EXPECT_EQ(ParseError(parser, R"({"uid":"a","amount":5})").message(), "missing field 'ts'");
}

}  // namespace
}  // namespace keyflow
