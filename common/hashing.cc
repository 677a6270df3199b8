#include "common/hashing.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <string>

namespace keyflow {
namespace {

// Decodes one UTF-8 sequence starting at p[0] (which is >= 0x80). Returns the number of bytes
// consumed (2..4) and the code point, or 0 when the sequence is invalid.
inline int DecodeMultiByte(const unsigned char* p, size_t remaining, uint32_t* cp) {
  unsigned char b0 = p[0];
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (remaining < 2 || (p[1] & 0xC0) != 0x80) return 0;
    *cp = ((b0 & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    return 2;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (remaining < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    uint32_t c = ((b0 & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    if (c < 0x800) return 0;                   // overlong
    if (c >= 0xD800 && c <= 0xDFFF) return 0;  // UTF-16 surrogates are not text
    *cp = c;
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (remaining < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) {
      return 0;
    }
    uint32_t c =
        ((b0 & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    if (c < 0x10000 || c > 0x10FFFF) return 0;  // overlong or beyond Unicode
    *cp = c;
    return 4;
  }
  return 0;  // continuation byte, C0/C1 or F5..FF lead
}

constexpr uint32_t k31_2 = 31u * 31u;
constexpr uint32_t k31_3 = 31u * 31u * 31u;
constexpr uint32_t k31_4 = 31u * 31u * 31u * 31u;

}  // namespace

bool JavaStringHashUtf8(std::string_view utf8, int32_t* hash) {
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  size_t n = utf8.size();
  size_t i = 0;
  uint32_t h = 0;
  while (i < n) {
    // ASCII fast path, 4 bytes per step: h*31^4 + b0*31^3 + b1*31^2 + b2*31 + b3.
    if (i + 4 <= n) {
      uint32_t w;
      std::memcpy(&w, p + i, 4);
      if ((w & 0x80808080u) == 0) {
        h = h * k31_4 + p[i] * k31_3 + p[i + 1] * k31_2 + p[i + 2] * 31u + p[i + 3];
        i += 4;
        continue;
      }
    }
    unsigned char b = p[i];
    if (b < 0x80) {
      h = h * 31u + b;
      ++i;
      continue;
    }
    uint32_t cp;
    int len = DecodeMultiByte(p + i, n - i, &cp);
    if (len == 0) return false;
    i += static_cast<size_t>(len);
    if (cp < 0x10000) {
      h = h * 31u + cp;
    } else {
      uint32_t v = cp - 0x10000;
      h = h * 31u + (0xD800u + (v >> 10));
      h = h * 31u + (0xDC00u + (v & 0x3FFu));
    }
  }
  *hash = static_cast<int32_t>(h);
  return true;
}

Status ValidateUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp;
    int len = DecodeMultiByte(p + i, n - i, &cp);
    if (len == 0) {
      return InvalidArgument("invalid UTF-8 at byte " + std::to_string(i) +
                             " (keys and records must be UTF-8 text)");
    }
    i += static_cast<size_t>(len);
  }
  return Status::Ok();
}

uint64_t HashBytes(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

uint64_t Checksum64(const void* data, size_t size) {
  return XXH3_64bits(data, size);
}

StreamingChecksum::StreamingChecksum() : state_(XXH3_createState()) {
  KF_CHECK(state_ != nullptr);
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}
StreamingChecksum::~StreamingChecksum() {
  XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}
void StreamingChecksum::Update(const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}
uint64_t StreamingChecksum::Digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace keyflow
