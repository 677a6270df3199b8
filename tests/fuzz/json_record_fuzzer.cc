// Fuzz target: JSON Lines records (worker/sources/json_record_parser.h), every line of every
// input file a file source reads.
//
// Input: mode byte, then one line (any bytes, including newlines and NULs).
//   mode bits 0-1: key type (string, int, long; 3 = string).
//   mode bit 2:    keep the line as payload.
//   mode bit 3:    keep fields (the field tape of a job that reads fields).
//   mode bit 4:    with fields: also parse with a projection (JsonRecordFormat::fields =
//                  "a", "amount" and the key field), as for a job that declares its fields.
// Properties: never crashes; errors are InvalidArgument; the zero-copy Parse (line followed by
// padding in the caller's buffer, as FileSplitReader calls it) and the copying Parse agree on
// the outcome and the record; a parsed record's key group is the one the key hashes to. With
// fields: the tape is valid, holds the key and timestamp fields, and its ToJson parses back to
// the same tape. With a projection: the same outcome, key and timestamp as without, and a tape
// that is the full one restricted to the listed members, in order.
// A parsed line is never IsIncompleteJsonObject (worker/sources/json_prefix.h), and its proper
// prefixes (the line without its closing '}', half of it, one cut chosen by the input) are,
// unless blank: the file reader takes such a prefix for a half-written last line, not a bad
// record, so a record cut anywhere must be recognised as cut.
// (The error *message* may differ: simdjson looks at the first padding byte of an unbalanced
// document — a '}' there makes it report "unbalanced" early; see
// tests/worker/sources/json_record_parser_regression_test.cc.)
#include <cstdint>
#include <string>

#include "common/key_group_assignment.h"
#include "common/record_fields.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/sources/json_prefix.h"
#include "worker/sources/json_record_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  JsonRecordFormat format;
  format.key_type = fuzz::KeyTypeOf(in.mode & 3);
  format.keep_payload = (in.mode >> 2) & 1;
  format.keep_fields = (in.mode >> 3) & 1;
  JsonRecordParser parser(format, fuzz::kMaxParallelism);

  Record copied;
  Status s1 = parser.Parse(in.bytes, &copied);

  // The file reader's buffer: the line, then arbitrary readable bytes (here: the next "line").
  std::string buffer(in.bytes);
  buffer.append(kJsonPadding, '}');
  Record zero_copy;
  Status s2 =
      parser.Parse(std::string_view(buffer.data(), in.bytes.size()), buffer.size(), &zero_copy);

  KF_CHECK(s1.ok() == s2.ok()) << "copying parse: " << s1.ToString()
                               << "; zero-copy parse: " << s2.ToString();
  if (!s1.ok()) {
    KF_CHECK(s1.code() == StatusCode::kInvalidArgument) << s1.ToString();
    return 0;
  }
  KF_CHECK(copied.key == zero_copy.key);
  KF_CHECK(copied.key_group == zero_copy.key_group);
  KF_CHECK(copied.timestamp == zero_copy.timestamp);
  KF_CHECK(copied.payload == zero_copy.payload);
  KF_CHECK(copied.fields == zero_copy.fields);
  KF_CHECK(copied.payload == (format.keep_payload ? in.bytes : std::string_view()));
  KF_CHECK(copied.fields.empty() == !format.keep_fields);
  if (format.keep_fields) {
    Status valid = ValidateFieldTape(copied.fields);
    KF_CHECK(valid.ok()) << valid.ToString();
    KF_CHECK(!copied.field(format.key_field).is_missing());
    KF_CHECK(copied.field(format.timestamp_field).AsInt64() == copied.timestamp.millis());
    Record again;
    const std::string json = copied.object().ToJson();
    Status reparsed = parser.Parse(json, &again);
    KF_CHECK(reparsed.ok()) << json << ": " << reparsed.ToString();
    KF_CHECK(again.fields == copied.fields) << json << " from " << in.bytes;
    KF_CHECK(again.key == copied.key);
    if ((in.mode >> 4) & 1) {
      JsonRecordFormat projected_format = format;
      projected_format.fields = {"a", "amount", format.key_field};
      JsonRecordParser projecting(projected_format, fuzz::kMaxParallelism);
      Record projected;
      Status sp = projecting.Parse(in.bytes, &projected);
      KF_CHECK(sp.ok()) << sp.ToString();
      KF_CHECK(projected.key == copied.key);
      KF_CHECK(projected.timestamp == copied.timestamp);
      KF_CHECK(ValidateFieldTape(projected.fields).ok());
      std::string expected = "{";
      copied.object().ForEachMember([&](std::string_view name, FieldValue value) {
        if (name != "a" && name != "amount" && name != format.key_field) return;
        if (expected.size() > 1) expected += ',';
        field_tape::AppendJsonString(name, &expected);
        expected += ':' + value.ToJson();
      });
      expected += '}';
      KF_CHECK(projected.object().ToJson() == expected) << expected << " from " << in.bytes;
    }
  } else if ((in.mode >> 4) & 1) {
    // A projection changes nothing without fields.
    JsonRecordFormat projected_format = format;
    projected_format.fields = {"a"};
    JsonRecordParser projecting(projected_format, fuzz::kMaxParallelism);
    Record projected;
    KF_CHECK(projecting.Parse(in.bytes, &projected).ok());
    KF_CHECK(projected == copied);
  }
  const std::string_view line = in.bytes;
  KF_CHECK(!IsIncompleteJsonObject(line)) << line;
  const size_t start = line.find_first_not_of(" \t\r\n");
  const size_t end = line.find_last_not_of(" \t\r\n");
  KF_CHECK(start != std::string_view::npos && line[end] == '}') << line;
  for (size_t cut : {end, start + 1 + (end - start) / 2, start + 1 + in.mode % (end - start)}) {
    if (cut > start && cut <= end) {
      KF_CHECK(IsIncompleteJsonObject(line.substr(0, cut))) << "cut at " << cut << ": " << line;
    }
  }
  if (format.key_type != KeyType::kString) KF_CHECK_EQ(copied.key.size(), 8u);
  Result<KeyGroupId> g = AssignToKeyGroup(copied.key, format.key_type, fuzz::kMaxParallelism);
  KF_CHECK(g.ok()) << g.status().ToString();
  KF_CHECK(*g == copied.key_group);
  KF_CHECK_GE(copied.key_group.value(), 0);
  KF_CHECK_LT(copied.key_group.value(), fuzz::kMaxParallelism);
  return 0;
}
