#include "worker/api/json_output.h"

#include <charconv>
#include <cmath>

#include "common/record_fields.h"

namespace keyflow {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at p[0] (>= 0x80), or 0 if it is invalid.
size_t ValidSequenceLength(const unsigned char* p, size_t remaining) {
  unsigned char b0 = p[0];
  auto cont = [&](size_t i) { return i < remaining && (p[i] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (b0 == 0xE0 && p[1] < 0xA0) return 0;  // overlong
    if (b0 == 0xED && p[1] > 0x9F) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (b0 == 0xF0 && p[1] < 0x90) return 0;  // overlong
    if (b0 == 0xF4 && p[1] > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view utf8) {
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  const size_t n = utf8.size();
  out->reserve(out->size() + n + 2);
  out->push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied verbatim
  size_t i = 0;
  auto flush = [&](size_t upto) { out->append(utf8.data() + run, upto - run); };
  while (i < n) {
    unsigned char c = p[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t len = ValidSequenceLength(p + i, n - i);
      if (len > 0) {
        i += len;
        continue;
      }
      flush(i);
      out->append(kReplacement);
      run = ++i;
      continue;
    }
    flush(i);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else {
      const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out->append(esc, sizeof(esc));
    }
    run = ++i;
  }
  flush(n);
  out->push_back('"');
}

void AppendJsonInt(std::string* out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendJsonUint(std::string* out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendJsonDouble(std::string* out, double v) {
  field_tape::AppendJsonDouble(v, out);
}

void AppendJsonBool(std::string* out, bool v) {
  out->append(v ? "true" : "false");
}

void AppendJsonKey(std::string* out, const Key& key, KeyType type) {
  if (type == KeyType::kString) {
    AppendJsonString(out, key.bytes());
  } else {
    AppendJsonInt(out, key.AsInt64());
  }
}

}  // namespace keyflow
