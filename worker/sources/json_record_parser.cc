#include "worker/sources/json_record_parser.h"

#include <simdjson.h>

#include <charconv>
#include <cstring>
#include <limits>

#include "common/check.h"
#include "common/field_tape_writer.h"

namespace keyflow {
namespace {

namespace ondemand = simdjson::ondemand;
using simdjson::error_code;

static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING);

std::string Quote(std::string_view s) {
  return "'" + std::string(s) + "'";
}

Status JsonError(error_code e) {
  if (e == simdjson::UTF8_ERROR) return InvalidArgument("invalid UTF-8");
  return InvalidArgument(std::string("invalid JSON: ") + simdjson::error_message(e));
}

std::string_view TrimTrailingSpace(std::string_view raw) {
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\r' || raw.back() == '\n')) {
    raw.remove_suffix(1);
  }
  return raw;
}

// True if `raw` (a number token, maybe followed by whitespace) matches JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view raw) {
  raw = TrimTrailingSpace(raw);
  size_t i = 0;
  auto digit = [&](size_t j) { return j < raw.size() && raw[j] >= '0' && raw[j] <= '9'; };
  if (i < raw.size() && raw[i] == '-') ++i;
  if (!digit(i)) return false;
  if (raw[i] == '0') {
    ++i;
  } else {
    while (digit(i)) ++i;
  }
  if (i < raw.size() && raw[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < raw.size() && (raw[i] == 'e' || raw[i] == 'E')) {
    ++i;
    if (i < raw.size() && (raw[i] == '+' || raw[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == raw.size();
}

// Walks a value so that a malformed value anywhere fails the line (On-Demand only validates
// what it visits). kWrite (a job that reads fields): also writes the value to *tape in the same
// walk. `depth` counts the containers around the value.
template <bool kWrite>
error_code WalkValue(ondemand::value value, FieldTapeWriter* tape, int depth) {
  ondemand::json_type type;
  if (error_code e = value.type().get(type)) return e;
  switch (type) {
    case ondemand::json_type::object: {
      if (kWrite && depth >= kMaxFieldDepth) return simdjson::DEPTH_ERROR;
      ondemand::object object;
      if (error_code e = value.get_object().get(object)) return e;
      if constexpr (kWrite) tape->BeginObject();
      for (auto field_result : object) {
        ondemand::field field;
        if (error_code e = std::move(field_result).get(field)) return e;
        std::string_view name;
        if (error_code e = field.unescaped_key().get(name)) return e;
        if constexpr (kWrite) tape->Name(name);
        if (error_code e = WalkValue<kWrite>(field.value(), tape, depth + 1)) return e;
      }
      if constexpr (kWrite) tape->EndObject();
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::array: {
      if (kWrite && depth >= kMaxFieldDepth) return simdjson::DEPTH_ERROR;
      ondemand::array array;
      if (error_code e = value.get_array().get(array)) return e;
      if constexpr (kWrite) tape->BeginArray();
      for (auto element_result : array) {
        ondemand::value element;
        if (error_code e = element_result.get(element)) return e;
        if (error_code e = WalkValue<kWrite>(element, tape, depth + 1)) return e;
      }
      if constexpr (kWrite) tape->EndArray();
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::number: {
      ondemand::number number;
      error_code e = value.get_number().get(number);
      // simdjson 3.0 rejects integers beyond 64 bits (and doubles beyond its range), which are
      // valid JSON: the tape keeps their text.
      if (e == simdjson::NUMBER_ERROR && IsJsonNumber(value.raw_json_token())) {
        if constexpr (kWrite) tape->NumberText(TrimTrailingSpace(value.raw_json_token()));
        return simdjson::SUCCESS;
      }
      if (e) return e;
      if constexpr (kWrite) {
        switch (number.get_number_type()) {
          case ondemand::number_type::signed_integer:
            tape->Int(number.get_int64());
            break;
          case ondemand::number_type::unsigned_integer: {  // 2^63 .. 2^64-1
            char text[24];
            char* end = std::to_chars(text, text + sizeof text, number.get_uint64()).ptr;
            tape->NumberText(std::string_view(text, static_cast<size_t>(end - text)));
            break;
          }
          default: {
            // simdjson 3.0.1's get_number() misreads some long decimals (184467440737095520.0
            // as 0): read the token's text with from_chars, which rounds correctly.
            const std::string_view text = TrimTrailingSpace(value.raw_json_token());
            double d = 0;
            if (std::from_chars(text.data(), text.data() + text.size(), d).ec != std::errc()) {
              d = number.get_double();
            }
            tape->Double(d);
          }
        }
      }
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::string: {
      std::string_view s;
      if (error_code e = value.get_string().get(s)) return e;
      if constexpr (kWrite) tape->String(s);
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::boolean: {
      bool b;
      error_code e = value.get_bool().get(b);
      if (e == simdjson::INCORRECT_TYPE) {
        return value.raw_json_token().substr(0, 1) == "t" ? simdjson::T_ATOM_ERROR
                                                          : simdjson::F_ATOM_ERROR;
      }
      if (e) return e;
      if constexpr (kWrite) tape->Bool(b);
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::null: {
      bool is_null = false;
      error_code e = value.is_null().get(is_null);
      if (e == simdjson::INCORRECT_TYPE || (!e && !is_null)) return simdjson::N_ATOM_ERROR;
      if (e) return e;
      if constexpr (kWrite) tape->Null();
      return simdjson::SUCCESS;
    }
  }
  return simdjson::TAPE_ERROR;
}

// Reads a JSON integer (not a fraction, not an exponent form) into *out.
// Returns SUCCESS, INCORRECT_TYPE (not an integer), NUMBER_OUT_OF_RANGE or a JSON error.
error_code ReadInteger(ondemand::value& value, int64_t* out) {
  error_code e = value.get_int64().get(*out);
  if (e != simdjson::INCORRECT_TYPE && e != simdjson::NUMBER_OUT_OF_RANGE &&
      e != simdjson::NUMBER_ERROR) {
    return e;
  }
  // simdjson reports fractions, exponents and integers beyond 64 bits alike (and cannot read
  // the latter at all): tell them apart by the token's text. A failed get does not consume it.
  std::string_view raw = value.raw_json_token();
  if (!IsJsonNumber(raw)) return simdjson::NUMBER_ERROR;
  for (char c : raw) {
    if (c == '.' || c == 'e' || c == 'E') return simdjson::INCORRECT_TYPE;
  }
  return simdjson::NUMBER_OUT_OF_RANGE;
}

// Strict decimal integer text: optional '-', digits, nothing else.
bool ParseDecimal(std::string_view text, int64_t* out, bool* out_of_range) {
  *out_of_range = false;
  if (text.empty() || text[0] == '+') return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (ptr != text.data() + text.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    *out_of_range = true;
    return false;
  }
  return ec == std::errc();
}

}  // namespace

struct JsonRecordParser::Impl {
  ondemand::parser parser;
  FieldTapeWriter tape;

  Status KeyNotAnInteger(const JsonRecordFormat& f) const {
    return InvalidArgument("field " + Quote(f.key_field) + " is not an integer (key type " +
                           std::string(KeyTypeName(f.key_type)) + ")");
  }
  Status KeyOutOfRange(const JsonRecordFormat& f) const {
    return InvalidArgument(
        "field " + Quote(f.key_field) + " is out of range for key type " +
        std::string(KeyTypeName(f.key_type)) +
        (f.key_type == KeyType::kInt ? " (32-bit); use --key-type long" : " (64-bit)"));
  }

  // kFields: `tape` receives the value as it appears in the line.
  template <bool kFields>
  Status ReadKey(const JsonRecordFormat& f, const KeyGroupAssigner& assigner, ondemand::value value,
                 Record* out, FieldTapeWriter* tape) {
    if (f.key_type == KeyType::kString) {
      std::string_view text;
      error_code e = value.get_string().get(text);
      if (e == simdjson::INCORRECT_TYPE) {
        return InvalidArgument("field " + Quote(f.key_field) +
                               " is not a string (key type string; use --key-type int or long "
                               "for numeric keys)");
      }
      if (e) return JsonError(e);
      KeyGroupId group;
      // Raw bytes were validated by simdjson; this catches escaped lone surrogates (\ud800).
      if (!assigner.AssignString(text, &group)) {
        return InvalidArgument("field " + Quote(f.key_field) + " is not valid UTF-8 text");
      }
      out->key = Key::FromBytes(text);
      out->key_group = group;
      if (kFields && tape != nullptr) tape->String(text);
      return Status::Ok();
    }

    ondemand::json_type type;
    if (error_code e = value.type().get(type)) return JsonError(e);
    int64_t v = 0;
    if (type == ondemand::json_type::number) {
      error_code e = ReadInteger(value, &v);
      if (e == simdjson::INCORRECT_TYPE) return KeyNotAnInteger(f);
      if (e == simdjson::NUMBER_OUT_OF_RANGE) return KeyOutOfRange(f);
      if (e) return JsonError(e);
      if (kFields && tape != nullptr) tape->Int(v);
    } else if (type == ondemand::json_type::string) {
      std::string_view text;
      if (error_code e = value.get_string().get(text)) return JsonError(e);
      bool out_of_range = false;
      if (!ParseDecimal(text, &v, &out_of_range)) {
        return out_of_range ? KeyOutOfRange(f) : KeyNotAnInteger(f);
      }
      if (kFields && tape != nullptr) tape->String(text);
    } else {
      return KeyNotAnInteger(f);
    }
    if (f.key_type == KeyType::kInt &&
        (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
      return KeyOutOfRange(f);
    }
    out->key = Key::FromInt64(v);
    out->key_group = assigner.Assign(out->key);
    return Status::Ok();
  }

  template <bool kFields>
  Status ReadTimestamp(const JsonRecordFormat& f, ondemand::value value, Record* out,
                       FieldTapeWriter* tape) {
    ondemand::json_type type;
    if (error_code e = value.type().get(type)) return JsonError(e);
    if (type != ondemand::json_type::number) {
      return InvalidArgument("field " + Quote(f.timestamp_field) +
                             " is not an integer (epoch milliseconds)");
    }
    int64_t ts = 0;
    error_code e = ReadInteger(value, &ts);
    if (e == simdjson::INCORRECT_TYPE) {
      return InvalidArgument("field " + Quote(f.timestamp_field) +
                             " is not an integer (epoch milliseconds)");
    }
    if (e == simdjson::NUMBER_OUT_OF_RANGE) {
      return InvalidArgument("field " + Quote(f.timestamp_field) +
                             " is out of range for a 64-bit integer");
    }
    if (e) return JsonError(e);
    out->timestamp = Timestamp(ts);
    if (kFields && tape != nullptr) tape->Int(ts);
    return Status::Ok();
  }

  // Whether member `name` goes into the tape: every member without a projection.
  static bool Kept(const JsonRecordFormat& f, std::string_view name) {
    if (f.fields.empty()) return true;
    for (const std::string& kept : f.fields) {
      if (kept == name) return true;
    }
    return false;
  }

  // The members of the line's object. kFields: the same walk writes them to Record::fields
  // (one instantiation per mode, so that a job reading no fields runs exactly the code it ran
  // before fields existed).
  template <bool kFields>
  Status ReadObject(const JsonRecordFormat& f, const KeyGroupAssigner& assigner,
                    ondemand::document& doc, ondemand::object& object, Record* out) {
    FieldTapeWriter* const tape = kFields ? &this->tape : nullptr;
    if constexpr (kFields) {
      tape->Reset(&out->fields);
      tape->BeginObject();
    }
    bool have_key = false;
    bool have_ts = false;
    for (auto field_result : object) {
      ondemand::field field;
      if (error_code e = std::move(field_result).get(field)) return JsonError(e);
      std::string_view name;
      if (error_code e = field.unescaped_key().get(name)) return JsonError(e);
      // The member's tape: null when the job's projection drops it (it is still validated).
      FieldTapeWriter* member_tape = nullptr;
      if constexpr (kFields) {
        if (Kept(f, name)) {
          member_tape = tape;
          member_tape->Name(name);
        }
      }
      if (f.extract_key && name == f.key_field) {
        if (have_key) return InvalidArgument("duplicate field " + Quote(f.key_field));
        have_key = true;
        KF_RETURN_IF_ERROR(ReadKey<kFields>(f, assigner, field.value(), out, member_tape));
      } else if (name == f.timestamp_field && !f.timestamp_field.empty()) {
        if (have_ts) return InvalidArgument("duplicate field " + Quote(f.timestamp_field));
        have_ts = true;
        KF_RETURN_IF_ERROR(ReadTimestamp<kFields>(f, field.value(), out, member_tape));
      } else if (error_code e = member_tape != nullptr
                                    ? WalkValue<kFields>(field.value(), member_tape, 1)
                                    : WalkValue<false>(field.value(), nullptr, 1)) {
        return JsonError(e);
      }
    }
    // Anything after the object ("{...} x", "{...}}") is not JSON Lines.
    if (!doc.current_location().error()) {
      return InvalidArgument("invalid JSON: unexpected content after the object");
    }
    if (!have_key && f.extract_key) return InvalidArgument("missing field " + Quote(f.key_field));
    if (!have_ts && !f.timestamp_field.empty()) {
      return InvalidArgument("missing field " + Quote(f.timestamp_field));
    }
    if constexpr (kFields) {
      tape->EndObject();
    } else {
      out->fields.clear();
    }
    return Status::Ok();
  }
};

JsonRecordParser::JsonRecordParser(JsonRecordFormat format, int32_t max_parallelism)
    : format_(std::move(format)),
      assigner_(format_.key_type, max_parallelism),
      impl_(std::make_unique<Impl>()) {
  KF_CHECK(!format_.key_field.empty());
  KF_CHECK(format_.key_field != format_.timestamp_field)
      << "key and timestamp field are both '" << format_.key_field << "'";
}

JsonRecordParser::~JsonRecordParser() = default;

Status JsonRecordParser::Parse(std::string_view line, Record* out) {
  copy_.assign(line.data(), line.size());
  copy_.resize(line.size() + kJsonPadding);
  return Parse(std::string_view(copy_.data(), line.size()), copy_.size(), out);
}

Status JsonRecordParser::Parse(std::string_view line, size_t padded_size, Record* out) {
  KF_DCHECK(padded_size >= line.size() + kJsonPadding);
  ondemand::document doc;
  if (error_code e = impl_->parser.iterate(line.data(), line.size(), padded_size).get(doc)) {
    return JsonError(e);
  }
  ondemand::object object;
  if (error_code e = doc.get_object().get(object)) {
    if (e == simdjson::INCORRECT_TYPE) return InvalidArgument("line is not a JSON object");
    return JsonError(e);
  }
  KF_RETURN_IF_ERROR(format_.keep_fields
                         ? impl_->ReadObject<true>(format_, assigner_, doc, object, out)
                         : impl_->ReadObject<false>(format_, assigner_, doc, object, out));
  if (format_.keep_payload) {
    out->payload.assign(line.data(), line.size());
  } else {
    out->payload.clear();
  }
  return Status::Ok();
}

Result<Record> ParseRecordWithFields(std::string_view line, JsonRecordFormat format,
                                     int32_t max_parallelism) {
  format.keep_fields = true;
  JsonRecordParser parser(std::move(format), max_parallelism);
  Record record;
  KF_RETURN_IF_ERROR(parser.Parse(line, &record));
  return record;
}

}  // namespace keyflow
