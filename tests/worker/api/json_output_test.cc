#include "worker/api/json_output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "common/record.h"
#include "worker/sources/json_record_parser.h"

#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

std::string Str(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(JsonOutput, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Str("plain"), "\"plain\"");
  EXPECT_EQ(Str(""), "\"\"");
  EXPECT_EQ(Str("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(Str("\n\t\r\b\f"), R"("\u000a\u0009\u000d\u0008\u000c")");
  EXPECT_EQ(Str(std::string("\x00\x01\x1f", 3)), R"("\u0000\u0001\u001f")");
  EXPECT_EQ(Str("\x7f/"), "\"\x7f/\"");  // DEL and '/' need no escape
}

TEST(JsonOutput, PassesValidUtf8Through) {
  std::string text = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE2\x80\xA8";
  EXPECT_EQ(Str(text), "\"" + text + "\"");
}

TEST(JsonOutput, ReplacesEachInvalidByteWithTheReplacementCharacter) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(Str("a\xFF"
                "b"),
            "\"a" + r + "b\"");
  EXPECT_EQ(Str("\xE2\x82"), "\"" + r + r + "\"");          // truncated sequence
  EXPECT_EQ(Str("\xC0\xAF"), "\"" + r + r + "\"");          // overlong '/'
  EXPECT_EQ(Str("\xED\xA0\x80"), "\"" + r + r + r + "\"");  // encoded surrogate
  EXPECT_EQ(Str("\xF4\x90\x80\x80"),
            "\"" + r + r + r + r + "\"");  // above U+10FFFF
  EXPECT_EQ(Str("\x80\"x"), "\"" + r + "\\\"x\"");
}

TEST(JsonOutput, StringsReadBackToTheSameText) {
  JsonRecordParser parser(JsonRecordFormat{}, 128);
  std::string all_ascii;
  for (int c = 1; c < 128; ++c) all_ascii.push_back(static_cast<char>(c));
  for (const std::string& text : {all_ascii, std::string("\xC3\xA9\xF0\x9F\x98\x80"),
                                  std::string("\0mid\0", 5), std::string("\\\"\\u0041")}) {
    std::string line = "{\"uid\":";
    AppendJsonString(&line, text);
    line += ",\"ts\":1}";
    Record r;
    Status s = parser.Parse(line, &r);
    ASSERT_OK(s) << line << " -> " << s.ToString();
    EXPECT_EQ(r.key.bytes(), text);
  }
}

TEST(JsonOutput, Numbers) {
  std::string out;
  AppendJsonInt(&out, std::numeric_limits<int64_t>::min());
  out += ' ';
  AppendJsonInt(&out, 42);
  out += ' ';
  AppendJsonUint(&out, std::numeric_limits<uint64_t>::max());
  out += ' ';
  AppendJsonDouble(&out, 0.1);
  out += ' ';
  AppendJsonDouble(&out, -2.5e300);
  out += ' ';
  AppendJsonDouble(&out, 3.0);
  out += ' ';
  AppendJsonDouble(&out, std::nan(""));
  out += ' ';
  AppendJsonDouble(&out, -std::numeric_limits<double>::infinity());
  out += ' ';
  AppendJsonBool(&out, true);
  EXPECT_EQ(out,
            "-9223372036854775808 42 18446744073709551615 0.1 -2.5e+300 3.0 "
            "null null true");
}

TEST(JsonOutput, KeysAreStringsOrNumbersByKeyType) {
  std::string out;
  AppendJsonKey(&out, Key::FromBytes("u\"1"), KeyType::kString);
  out += ',';
  AppendJsonKey(&out, Key::FromInt64(-12), KeyType::kInt);
  out += ',';
  AppendJsonKey(&out, Key::FromInt64(INT64_MAX), KeyType::kLong);
  EXPECT_EQ(out, R"("u\"1",-12,9223372036854775807)");
}

}  // namespace
}  // namespace keyflow
