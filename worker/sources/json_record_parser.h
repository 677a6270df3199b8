// JsonRecordParser: one JSON Lines line -> one Record (key, key group, timestamp, and, when the
// job reads fields, the raw line and its field tape).
//
// Format: every line is a JSON object. The key is the top-level field `key_field`
// (default "uid"), the event timestamp the top-level field `timestamp_field` (default "ts"),
// epoch milliseconds; with an empty `timestamp_field` the caller sets the timestamp (the Kafka
// source's ts=kafka) and every member, "ts" too, is an ordinary field. Other fields are allowed and
// ignored, but the whole line must be valid JSON (a malformed value anywhere makes the line
// malformed).
//
//   key type string   the field must be a JSON string; the key is its UTF-8 text (escapes
//                     decoded). A JSON number is rejected (use --key-type long for numbers).
//   key type int/long the field must be a JSON integer in the type's range (int: 32 bits, long:
//                     64 bits), or, for convenience, a JSON string holding exactly such a decimal
//                     integer ("42", "-7"; no spaces, no '+', no fraction): IDs are often quoted
//                     in exports because they exceed JavaScript's 2^53.
//   timestamp         a JSON integer (any int64). Fractions, exponents and strings are rejected.
//
// keep_fields (the job reads fields, JobSpec::reads_fields): the same single walk also writes
// the whole object, key and timestamp included, into Record::fields (common/record_fields.h:
// strings unescaped, integers as int64, other numbers as doubles, integers beyond 64 bits as
// their text); Record::raw_json() renders it as JSON text. Off, nothing extra is written. With
// a projection (`fields`, the job's declared fields) only the listed top-level members are
// written, in source order; the key and timestamp fields only if listed.
//
// A field that appears twice is an error. Errors are InvalidArgument with the reason only
// ("missing field 'uid'", "field 'ts' is not an integer (epoch milliseconds)",
// "invalid JSON: ...", "invalid UTF-8"); the reader adds "file:line".
//
// Uses simdjson's On-Demand API; the line must be followed by kJsonPadding readable bytes
// (any content), which FileSplitReader's buffer guarantees; Parse(line, out) copies instead.
//
// Threading: one parser per thread (it owns simdjson's reusable buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/key.h"
#include "common/key_group_assignment.h"
#include "common/record.h"
#include "common/status.h"

namespace keyflow {

// Readable bytes a line needs after its end for the zero-copy Parse (SIMDJSON_PADDING).
inline constexpr size_t kJsonPadding = 64;

struct JsonRecordFormat {
  std::string key_field = "uid";
  std::string timestamp_field = "ts";  // empty: none (the caller sets Record::timestamp)
  KeyType key_type = KeyType::kString;
  // False: the key is not read here — `key_field` is an ordinary member and Record::key stays
  // empty (a graph job keys its records after the operators before its KeyBy).
  bool extract_key = true;
  bool keep_payload = false;  // Record::payload = the line as read (without its terminator)
  bool keep_fields = false;   // Record::fields = the line's field tape
  // With keep_fields: only these top-level members go into the tape (JobSpec::fields); the
  // others are still validated, then dropped. Empty: every member.
  std::vector<std::string> fields;
};

class JsonRecordParser {
 public:
  // Preconditions: max_parallelism is valid (ValidateMaxParallelism); the key field non-empty,
  // the timestamp field different from it.
  JsonRecordParser(JsonRecordFormat format, int32_t max_parallelism);
  ~JsonRecordParser();
  JsonRecordParser(const JsonRecordParser&) = delete;
  JsonRecordParser& operator=(const JsonRecordParser&) = delete;

  // Parses `line` (without line terminator) into *out. Precondition: the bytes
  // [line.data(), line.data() + padded_size) are readable and padded_size >= line.size() +
  // kJsonPadding. On error *out is unspecified.
  Status Parse(std::string_view line, size_t padded_size, Record* out);
  // Same, for a line without padding: copies it into an internal buffer first.
  Status Parse(std::string_view line, Record* out);

  const JsonRecordFormat& format() const { return format_; }
  const KeyGroupAssigner& assigner() const { return assigner_; }

 private:
  struct Impl;  // simdjson stays out of this header (it is large)
  JsonRecordFormat format_;
  KeyGroupAssigner assigner_;
  std::unique_ptr<Impl> impl_;  // also holds the reusable FieldTapeWriter
  std::string copy_;            // padded copy for Parse(line, out)
};

// A Record as a job that reads fields receives it (key, key group, timestamp, raw line and field
// tape) from one JSON line, e.g. for the unit tests of a function with the keyed operator test
// harness: ParseRecordWithFields(R"({"uid":"u1","ts":1000,"amount":5})"). Errors as Parse.
Result<Record> ParseRecordWithFields(std::string_view line, JsonRecordFormat format = {},
                                     int32_t max_parallelism = 128);

}  // namespace keyflow
