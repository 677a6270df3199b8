// Record: one input element of a keyed job, as it travels from a source subtask through the
// shuffle to the keyed operator (Flink's StreamRecord with the key already extracted).
//
// The source extracts the key and the event timestamp (JSON Lines: `uid`/`ts` by default) and
// computes the key group once; the router, the receiver's key context and the state backend
// reuse it. When the job reads fields (JobDefinition::reads_fields), the source also keeps
//   payload  the raw JSON line, as read (raw_json())
//   fields   the line's object as a field tape (common/record_fields.h), written during the
//            same single parse; the key and timestamp fields are fields too
// and both travel through the shuffle. Otherwise both are empty (the fastest path) and every
// field reads as missing.
//
// Reading fields, e.g. in a KeyedProcessFunction:
//   ASSIGN_OR_RETURN(int64_t amount, record.GetInt64("amount"));   // an error is a sentence
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

  // The top-level field `name`; kMissing if absent (or if the record carries no fields).
  FieldValue field(std::string_view name) const { return object()[name]; }
  // The whole record as an object value (ForEachMember, ToJson); kMissing without fields.
  FieldValue object() const { return FieldValue::Root(fields); }
  // The input line as read (JSON Lines), when the job reads fields; otherwise empty.
  std::string_view raw_json() const { return payload; }

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
