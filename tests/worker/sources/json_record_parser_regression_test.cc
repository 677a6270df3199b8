// Regression tests from fuzzing JsonRecordParser (tests/fuzz/json_record_fuzzer.cc).
//
// crash-095c80f5: the zero-copy Parse (line followed by the reader's next bytes, as
// FileSplitReader calls it) and the copying Parse (zero padding) reported different errors for
// an unbalanced line. simdjson's On-Demand parser looks at the first byte after a document
// whose last structural character is '}' and, if it is '}' too, checks that the document is
// balanced (simdjson issue 1834). The outcome must not depend on what follows the line: the
// line is rejected either way, and a valid line is accepted whatever follows it.
#include <gtest/gtest.h>

#include <string>

#include "tests/testutil/status_matchers.h"
#include "worker/sources/json_record_parser.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;

// Parses `line` the way FileSplitReader does: in place, followed by `next` bytes of the buffer.
Status ParseFollowedBy(JsonRecordParser& parser, std::string_view line, char next, Record* out) {
  std::string buffer(line);
  buffer.append(kJsonPadding, next);
  return parser.Parse(std::string_view(buffer.data(), line.size()), buffer.size(), out);
}

TEST(JsonRecordParserRegressionTest, RejectsAnUnbalancedLineWhateverBytesFollowIt) {
  JsonRecordParser parser(JsonRecordFormat{}, kMaxParallelism);
  const std::string line = R"({"uid":"user-1","ts":1700000000{"uid":"user-1","ts":170000000000})";
  Record copied;
  Status s = parser.Parse(line, &copied);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  for (char next : {'\0', '}', ' ', '\n', '{', '"'}) {
    Record r;
    Status in_place = ParseFollowedBy(parser, line, next, &r);
    EXPECT_EQ(in_place.code(), StatusCode::kInvalidArgument)
        << "followed by '" << next << "': " << in_place.ToString();
  }
}

TEST(JsonRecordParserRegressionTest, AcceptsAValidLineWhateverBytesFollowIt) {
  JsonRecordParser parser(JsonRecordFormat{}, kMaxParallelism);
  const std::string line = R"({"uid":"user-1","ts":1700000000,"v":{"a":[1,{"b":2}]}})";
  for (char next : {'\0', '}', ']', ' ', '\n', '{', '"', ','}) {
    Record r;
    Status s = ParseFollowedBy(parser, line, next, &r);
    ASSERT_OK(s) << "followed by '" << next << "': " << s.ToString();
    EXPECT_EQ(r.key, Key::FromBytes("user-1"));
    EXPECT_EQ(r.timestamp, Timestamp(1700000000));
  }
}

}  // namespace
}  // namespace keyflow
