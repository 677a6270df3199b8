// Record fields: the "field tape", a compact binary encoding of one JSON value tree, and
// FieldValue, the read-only view a keyed function reads a record's fields through.
//
// The source parses each JSON line once and, when the job reads fields (JobSpec::reads_fields),
// writes the line's object into a tape during that one walk (FieldTapeWriter,
// common/field_tape_writer.h). The tape travels through the shuffle next to the key (worker/
// README.md, "Data plane"); the keyed side reads it in place, without parsing.
//
// Tape format, version 1 (all little-endian; varint = unsigned LEB128, at most 5 bytes):
//   tape   := u8 version (= kFieldTapeVersion), value
//   value  := u8 tag, body
//     0 null        (no body)
//     1 false       (no body)
//     2 true        (no body)
//     3 int         int64
//     4 double      IEEE-754 binary64 (always finite)
//     5 string      varint length, the unescaped UTF-8 bytes
//     6 number      varint length, the number's JSON text: integers beyond 64 bits and numbers
//                   beyond double's range, kept exactly as written
//     7 array       u32 size, u32 count, count values
//     8 object      u32 size, u32 count, count members := varint name length, name bytes
//                   (unescaped), value; in source order (a duplicate name: the first wins)
//   `size` is the number of bytes after the size field up to the end of the container, so a
//   lookup skips a member in O(1). Nesting is at most kMaxFieldDepth containers deep.
//
// Trust: the accessors below do no bounds checks. A tape from elsewhere (the network) must pass
// ValidateFieldTape first; the shuffle decoder does that once per record (a corrupt tape is a
// Corruption of the frame, never undefined behaviour).
//
// Header-only except ValidateFieldTape (record_fields.cc), so a job library needs no link
// dependency to read fields. Threading: a FieldValue is an immutable view, valid while the tape
// (the Record) lives.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace keyflow {

inline constexpr uint8_t kFieldTapeVersion = 1;
inline constexpr int kMaxFieldDepth = 1024;  // simdjson's default maximum depth

enum class FieldType : uint8_t { kMissing, kNull, kBool, kInt, kDouble, kString, kArray, kObject };
// "missing", "null", "a boolean", "an integer", "a double", "a string", "an array", "an object".
inline std::string_view FieldTypeName(FieldType type);

// OK if `tape` is a well-formed version-1 tape (the empty tape, "no fields", is also OK);
// otherwise Corruption saying what is wrong and where.
Status ValidateFieldTape(std::string_view tape);

namespace field_tape {
enum Tag : uint8_t {
  kNull = 0,
  kFalse = 1,
  kTrue = 2,
  kInt = 3,
  kDouble = 4,
  kString = 5,
  kNumber = 6,
  kArray = 7,
  kObject = 8,
};
inline constexpr size_t kContainerHeader = 1 + 4 + 4;  // tag, size, count

inline uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// Reads a varint of a trusted tape and advances p.
inline uint32_t LoadVarint(const char*& p) {
  uint32_t v = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t b = static_cast<uint8_t>(*p++);
    v |= static_cast<uint32_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}
// The bytes after the value at p.
inline const char* SkipValue(const char* p) {
  switch (static_cast<uint8_t>(*p)) {
    case kInt:
    case kDouble:
      return p + 9;
    case kString:
    case kNumber: {
      const char* q = p + 1;
      uint32_t n = LoadVarint(q);
      return q + n;
    }
    case kArray:
    case kObject:
      return p + 5 + LoadU32(p + 1);
    default:
      return p + 1;
  }
}
inline bool IsIntegerText(std::string_view text) {
  return text.find_first_of(".eE") == std::string_view::npos;
}
inline void AppendJson(const char* value, std::string* out);  // defined below
}  // namespace field_tape

class FieldValue {
 public:
  FieldValue() = default;  // missing
  // The root value of `tape` (missing for the empty tape). Precondition: the tape is valid.
  static FieldValue Root(std::string_view tape) {
    return FieldValue(tape.size() > 1 ? tape.data() + 1 : nullptr);
  }

  FieldType type() const {
    if (p_ == nullptr) return FieldType::kMissing;
    switch (tag()) {
      case field_tape::kNull:
        return FieldType::kNull;
      case field_tape::kFalse:
      case field_tape::kTrue:
        return FieldType::kBool;
      case field_tape::kInt:
        return FieldType::kInt;
      case field_tape::kDouble:
        return FieldType::kDouble;
      case field_tape::kString:
        return FieldType::kString;
      case field_tape::kNumber:
        return field_tape::IsIntegerText(Text()) ? FieldType::kInt : FieldType::kDouble;
      case field_tape::kArray:
        return FieldType::kArray;
      default:
        return FieldType::kObject;
    }
  }
  bool is_missing() const { return p_ == nullptr; }
  bool is_null() const { return p_ != nullptr && tag() == field_tape::kNull; }

  // JSON integers in the int64 range (an integer beyond 64 bits is kInt but has no int64).
  std::optional<int64_t> AsInt64() const {
    if (p_ == nullptr || tag() != field_tape::kInt) return std::nullopt;
    int64_t v;
    std::memcpy(&v, p_ + 1, sizeof v);
    return v;
  }
  // Integers (converted, maybe rounded) and doubles; nullopt for a number beyond double's range.
  std::optional<double> AsDouble() const {
    if (p_ == nullptr) return std::nullopt;
    if (tag() == field_tape::kDouble) {
      double v;
      std::memcpy(&v, p_ + 1, sizeof v);
      return v;
    }
    if (tag() == field_tape::kInt) return static_cast<double>(*AsInt64());
    if (tag() != field_tape::kNumber) return std::nullopt;
    std::string_view text = Text();
    double v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || !std::isfinite(v)) return std::nullopt;
    return v;
  }
  std::optional<std::string_view> AsString() const {
    if (p_ == nullptr || tag() != field_tape::kString) return std::nullopt;
    return Text();
  }
  std::optional<bool> AsBool() const {
    if (p_ == nullptr || (tag() != field_tape::kTrue && tag() != field_tape::kFalse)) {
      return std::nullopt;
    }
    return tag() == field_tape::kTrue;
  }

  // The member called `member` (the first, if the object has it twice); missing if there is
  // none or this is not an object. O(members), each skipped in O(1).
  FieldValue operator[](std::string_view member) const {
    if (p_ == nullptr || tag() != field_tape::kObject) return {};
    const char* q = p_ + field_tape::kContainerHeader;
    for (uint32_t i = 0, n = size(); i < n; ++i) {
      uint32_t len = field_tape::LoadVarint(q);
      if (std::string_view(q, len) == member) return FieldValue(q + len);
      q = field_tape::SkipValue(q + len);
    }
    return {};
  }
  // Element `index` of an array; missing if out of range or this is not an array.
  FieldValue operator[](size_t index) const {
    if (p_ == nullptr || tag() != field_tape::kArray || index >= size()) return {};
    const char* q = p_ + field_tape::kContainerHeader;
    for (size_t i = 0; i < index; ++i) q = field_tape::SkipValue(q);
    return FieldValue(q);
  }
  // Members of an object or elements of an array; 0 for anything else.
  size_t size() const {
    if (p_ == nullptr || (tag() != field_tape::kArray && tag() != field_tape::kObject)) return 0;
    return field_tape::LoadU32(p_ + 5);
  }
  // fn(std::string_view name, FieldValue value) for each member, in source order.
  template <class Fn>
  void ForEachMember(Fn fn) const {
    if (p_ == nullptr || tag() != field_tape::kObject) return;
    const char* q = p_ + field_tape::kContainerHeader;
    for (uint32_t i = 0, n = size(); i < n; ++i) {
      uint32_t len = field_tape::LoadVarint(q);
      FieldValue value(q + len);
      fn(std::string_view(q, len), value);
      q = field_tape::SkipValue(q + len);
    }
  }
  // fn(FieldValue element) for each element of an array, in order.
  template <class Fn>
  void ForEachElement(Fn fn) const {
    if (p_ == nullptr || tag() != field_tape::kArray) return;
    const char* q = p_ + field_tape::kContainerHeader;
    for (uint32_t i = 0, n = size(); i < n; ++i) {
      fn(FieldValue(q));
      q = field_tape::SkipValue(q);
    }
  }

  // The value as compact JSON text (strings escaped, doubles in shortest round-trip form with a
  // ".0" or exponent, numbers beyond int64/double as written); "" when missing.
  std::string ToJson() const {
    std::string out;
    if (p_ != nullptr) field_tape::AppendJson(p_, &out);
    return out;
  }

  // The encoded bytes of this value (its tag and body); for copying a value into another tape.
  std::string_view encoded() const {
    if (p_ == nullptr) return {};
    return std::string_view(p_, static_cast<size_t>(field_tape::SkipValue(p_) - p_));
  }

 private:
  explicit FieldValue(const char* p) : p_(p) {}
  uint8_t tag() const { return static_cast<uint8_t>(*p_); }
  std::string_view Text() const {  // string or number text
    const char* q = p_ + 1;
    uint32_t n = field_tape::LoadVarint(q);
    return std::string_view(q, n);
  }

  const char* p_ = nullptr;  // at the value's tag; nullptr = missing
};

inline std::string_view FieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kMissing:
      return "missing";
    case FieldType::kNull:
      return "null";
    case FieldType::kBool:
      return "a boolean";
    case FieldType::kInt:
      return "an integer";
    case FieldType::kDouble:
      return "a double";
    case FieldType::kString:
      return "a string";
    case FieldType::kArray:
      return "an array";
    case FieldType::kObject:
      return "an object";
  }
  return "unknown";
}

namespace field_tape {

inline void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[static_cast<unsigned char>(c) >> 4]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

inline void AppendJsonDouble(double v, std::string* out) {
  if (!std::isfinite(v)) {  // not representable in JSON; a valid tape never holds one
    out->append("null");
    return;
  }
  char buf[32];
  char* end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  std::string_view text(buf, static_cast<size_t>(end - buf));
  out->append(text);
  if (IsIntegerText(text)) out->append(".0");  // stays a double when read back
}

inline void AppendJson(const char* p, std::string* out) {
  switch (static_cast<uint8_t>(*p)) {
    case kNull:
      out->append("null");
      return;
    case kFalse:
      out->append("false");
      return;
    case kTrue:
      out->append("true");
      return;
    case kInt: {
      int64_t v;
      std::memcpy(&v, p + 1, sizeof v);
      char buf[24];
      out->append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
      return;
    }
    case kDouble: {
      double v;
      std::memcpy(&v, p + 1, sizeof v);
      AppendJsonDouble(v, out);
      return;
    }
    case kString:
    case kNumber: {
      const char* q = p + 1;
      uint32_t n = LoadVarint(q);
      if (static_cast<uint8_t>(*p) == kNumber) {
        out->append(q, n);
      } else {
        AppendJsonString(std::string_view(q, n), out);
      }
      return;
    }
    case kArray: {
      out->push_back('[');
      const char* q = p + kContainerHeader;
      for (uint32_t i = 0, n = LoadU32(p + 5); i < n; ++i) {
        if (i > 0) out->push_back(',');
        AppendJson(q, out);
        q = SkipValue(q);
      }
      out->push_back(']');
      return;
    }
    default: {
      out->push_back('{');
      const char* q = p + kContainerHeader;
      for (uint32_t i = 0, n = LoadU32(p + 5); i < n; ++i) {
        if (i > 0) out->push_back(',');
        uint32_t len = LoadVarint(q);
        AppendJsonString(std::string_view(q, len), out);
        out->push_back(':');
        AppendJson(q + len, out);
        q = SkipValue(q + len);
      }
      out->push_back('}');
      return;
    }
  }
}

}  // namespace field_tape
}  // namespace keyflow
