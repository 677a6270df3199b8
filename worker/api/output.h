// What a keyed function emits (Flink's Collector + TimestampedCollector).
//
//   out.Collect(JsonObject().Add("user", ctx.current_key(), runtime.key_type())
//                           .Add("sum", total).Add("cause", "timer"));   // a JSON object
//   out.Collect(std::string("{\"raw\":true}"));                          // a raw line
//   out.Collect(OutputRecord(line, Timestamp(t)));                       // an explicit time
//
// An output record has an event timestamp or none. Unless the function sets one, the runtime
// gives it the time of what is being processed, as Flink's TimestampedCollector does: the
// element's event timestamp in ProcessElement, the timer's time in an event-time OnTimer, the
// final watermark in EndInput — and none in a processing-time OnTimer (Flink erases it there:
// the wall clock is no event time). Sinks receive the line and the timestamp, if any, and decide
// what to do without one; the file sink writes the line (JSON Lines), the print sink prints it
// (worker/sinks/README.md).
//
// Threading: built and collected on the task thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/key.h"
#include "common/types.h"

namespace keyflow {

class JsonArray;

// Builds one JSON object, member by member, in the order added. Strings are escaped (invalid
// UTF-8 becomes U+FFFD), doubles are written in their shortest exact form with ".0" when it is
// an integer (600.0; NaN and infinities as null). Adding a name twice writes it twice (callers
// keep names unique). Nested values: Add(name, JsonObject) and Add(name, JsonArray).
class JsonObject {
 public:
  JsonObject& Add(std::string_view name, std::string_view value);
  JsonObject& Add(std::string_view name, const char* value) {
    return Add(name, std::string_view(value));
  }
  JsonObject& Add(std::string_view name, const std::string& value) {
    return Add(name, std::string_view(value));
  }
  JsonObject& Add(std::string_view name, int64_t value);
  JsonObject& Add(std::string_view name, int32_t value) { return Add(name, int64_t{value}); }
  JsonObject& Add(std::string_view name, uint64_t value);
  JsonObject& Add(std::string_view name, double value);
  JsonObject& Add(std::string_view name, bool value);
  // A key as its JSON value: a string for string keys, a number for int/long keys.
  JsonObject& Add(std::string_view name, const Key& key, KeyType type);
  JsonObject& AddNull(std::string_view name);
  // A nested object or array (their builders are consumed).
  JsonObject& Add(std::string_view name, JsonObject object);
  JsonObject& Add(std::string_view name, JsonArray array);
  // `json` must be one valid JSON value (e.g. a nested object built by another JsonObject).
  JsonObject& AddRaw(std::string_view name, std::string_view json);

  // The object's text, e.g. {"user":"u1","sum":42}. The builder is empty afterwards.
  std::string Build();

 private:
  void Name(std::string_view name);
  std::string text_;
};

// Builds one JSON array, element by element, with the value rules of JsonObject:
//
//   JsonObject().Add("user", "u1").Add("amounts", JsonArray().Add(600.0).Add(int64_t{12}))
//   // {"user":"u1","amounts":[600.0,12]}
class JsonArray {
 public:
  JsonArray& Add(std::string_view value);
  JsonArray& Add(const char* value) { return Add(std::string_view(value)); }
  JsonArray& Add(const std::string& value) { return Add(std::string_view(value)); }
  JsonArray& Add(int64_t value);
  JsonArray& Add(int32_t value) { return Add(int64_t{value}); }
  JsonArray& Add(uint64_t value);
  JsonArray& Add(double value);
  JsonArray& Add(bool value);
  JsonArray& Add(const Key& key, KeyType type);
  JsonArray& Add(JsonObject object);
  JsonArray& Add(JsonArray array);
  JsonArray& AddNull();
  // `json` must be one valid JSON value.
  JsonArray& AddRaw(std::string_view json);

  // The array's text, e.g. [1,"a",null]. The builder is empty afterwards.
  std::string Build();

 private:
  std::string& Next();
  std::string text_;
};

// One output record: a line of text (a JSON object for the file sink's JSON Lines) and its
// timestamp. A function that leaves it nullopt gets the time of what is being processed, filled
// in by the runtime (still nullopt in a processing-time timer).
struct OutputRecord {
  OutputRecord(std::string text) : line(std::move(text)) {}  // NOLINT: implicit on purpose
  OutputRecord(JsonObject object) : line(object.Build()) {}  // NOLINT: implicit on purpose
  OutputRecord(std::string text, Timestamp ts) : line(std::move(text)), timestamp(ts) {}
  OutputRecord(JsonObject object, Timestamp ts) : line(object.Build()), timestamp(ts) {}

  std::string line;  // without a line terminator
  std::optional<Timestamp> timestamp;

  friend bool operator==(const OutputRecord&, const OutputRecord&) = default;
};

}  // namespace keyflow
