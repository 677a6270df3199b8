// Helpers that append JSON values to a std::string: for JsonObject (worker/api/output.h), for
// sinks writing JSON Lines and for jobs rendering their output records. Part of the job SDK.
//
// Strings: '"' and '\' are backslash-escaped, control characters (U+0000..U+001F) become
// \u00XX (lowercase hex), every other valid UTF-8 sequence is copied as is (including
// non-ASCII text and U+007F). Bytes that are not valid UTF-8 are replaced by U+FFFD, one per
// bad byte, so the output is always valid JSON.
// Numbers: integers in decimal; doubles in the shortest form that reads back to the same value,
// with ".0" when that form is an integer (600.0: a double stays a double when read back, as in
// a record's raw_json()), and `null` for NaN and infinities (JSON has no such numbers).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/key.h"

namespace keyflow {

void AppendJsonString(std::string* out, std::string_view utf8);
void AppendJsonInt(std::string* out, int64_t v);
void AppendJsonUint(std::string* out, uint64_t v);
void AppendJsonDouble(std::string* out, double v);
void AppendJsonBool(std::string* out, bool v);
// A key as its JSON value: a string for kString keys, a number for kInt/kLong keys.
void AppendJsonKey(std::string* out, const Key& key, KeyType type);

}  // namespace keyflow
