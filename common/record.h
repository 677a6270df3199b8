// Record: one input element of a keyed job, as it travels from a source subtask through the
// shuffle to the keyed operator (Flink's StreamRecord with the key already extracted).
//
// The source extracts the key and the event timestamp (JSON Lines: `uid`/`ts` by default) and
// computes the key group once; the router, the receiver's key context and the state backend
// reuse it. When the job reads fields (JobDefinition::reads_fields), the source also writes
//   fields   the line's object as a field tape (common/record_fields.h), during the same single
//            parse; the key and timestamp fields are fields too
// and the tape travels through the shuffle (the raw line does not: it would double the bytes
// per record). raw_json() is the record as compact JSON text, made from the tape on first use:
// the line's members in source order, escapes and number forms normalised (`"\u00e9"` is `"é"`,
// `1E2` is `100.0`). Without fields every field reads as missing (the fastest path).
// `payload` is an opaque line a source may keep besides (JsonRecordFormat::keep_payload); when
// set, raw_json() returns it as is.
//
// Reading fields, e.g. in a KeyedProcessFunction:
//   KF_ASSIGN_OR_RETURN(int64_t amount, record.GetInt64("amount"));   // an error is a sentence
//   FieldValue city = record.field("address")["city"];             // kMissing if absent
//   if (auto name = city.AsString()) ...
//
// Header-only. Threading: a value type; FieldValues returned by field() are views into
// `fields`, valid while the Record lives and is not modified.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/key.h"
#include "common/record_fields.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

struct Record {
  Key key;
  KeyGroupId key_group{0};
  Timestamp timestamp;
  std::string payload;
  std::string fields;  // field tape; empty when the job reads no fields
  // raw_json()'s text, made on first use. Whoever changes `fields` of a Record that may have been
  // read clears it (the keyed task does for every record it reuses its Record for).
  mutable std::string raw_json_cache;

  // The top-level field `name`; kMissing if absent (or if the record carries no fields).
  FieldValue field(std::string_view name) const { return object()[name]; }
  // The whole record as an object value (ForEachMember, ToJson); kMissing without fields.
  FieldValue object() const { return FieldValue::Root(fields); }
  // The record as JSON text: `payload` if the source kept the line, else the fields as compact
  // JSON (made once, then cached); empty when the record carries neither. The view is valid
  // while the Record lives and is not modified.
  std::string_view raw_json() const {
    if (!payload.empty() || fields.empty()) return payload;
    if (raw_json_cache.empty()) raw_json_cache = object().ToJson();
    return raw_json_cache;
  }

  // Typed reads of a top-level field. Errors (InvalidArgument) are sentences naming the field:
  // "field 'amount' is missing", "field 'amount' is a string, not an integer".
  Result<int64_t> GetInt64(std::string_view name) const {
    return Get<int64_t>(name, &FieldValue::AsInt64, "an integer");
  }
  // Integers and doubles.
  Result<double> GetDouble(std::string_view name) const {
    return Get<double>(name, &FieldValue::AsDouble, "a number");
  }
  Result<std::string_view> GetString(std::string_view name) const {
    return Get<std::string_view>(name, &FieldValue::AsString, "a string");
  }
  Result<bool> GetBool(std::string_view name) const {
    return Get<bool>(name, &FieldValue::AsBool, "a boolean");
  }

  friend bool operator==(const Record& a, const Record& b) {
    return a.key == b.key && a.key_group == b.key_group && a.timestamp == b.timestamp &&
           a.payload == b.payload && a.fields == b.fields;
  }

 private:
  template <typename T>
  Result<T> Get(std::string_view name, std::optional<T> (FieldValue::*read)() const,
                std::string_view wanted) const {
    FieldValue v = field(name);
    if (std::optional<T> x = (v.*read)()) return *x;
    return WrongType(name, v, wanted);
  }
  Status WrongType(std::string_view name, FieldValue v, std::string_view wanted) const {
    std::string field_name = "field '" + std::string(name) + "'";
    if (fields.empty()) {
      return InvalidArgument(field_name +
                             " cannot be read: records carry no fields because the job's "
                             "definition sets reads_fields = false; set it to true");
    }
    if (v.is_missing()) return InvalidArgument(field_name + " is missing");
    if (v.type() == FieldType::kInt && wanted != "a string" && wanted != "a boolean") {
      return InvalidArgument(field_name + " is " + v.ToJson() + ", beyond the 64-bit range");
    }
    if (v.type() == FieldType::kDouble && wanted == "a number") {
      return InvalidArgument(field_name + " is " + v.ToJson() + ", beyond the range of a double");
    }
    return InvalidArgument(field_name + " is " + std::string(FieldTypeName(v.type())) + ", not " +
                           std::string(wanted));
  }
};

}  // namespace keyflow
