#include "common/key.h"

#include <charconv>
#include <cstdlib>
#include <limits>

namespace keyflow {

std::string_view KeyTypeName(KeyType t) {
  switch (t) {
    case KeyType::kString:
      return "string";
    case KeyType::kInt:
      return "int";
    case KeyType::kLong:
      return "long";
  }
  return "?";
}

Result<KeyType> ParseKeyType(std::string_view name) {
  if (name == "string") return KeyType::kString;
  if (name == "int") return KeyType::kInt;
  if (name == "long") return KeyType::kLong;
  return InvalidArgument("unknown key type '" + std::string(name) +
                         "'; use one of: string, int, long");
}

Key Key::FromBytes(std::string_view bytes) {
  Key k;
  k.AssignBytes(bytes);
  return k;
}

Key Key::FromInt64(int64_t v) {
  Key k;
  std::memcpy(k.buf_, &v, 8);  // little-endian host (x86-64, aarch64)
  k.buf_[15] = 8;
  return k;
}

int64_t Key::AsInt64() const {
  KF_CHECK_EQ(size(), 8u) << "not an int/long key";
  int64_t v;
  std::memcpy(&v, data(), 8);
  return v;
}

void Key::AssignBytes(std::string_view bytes) {
  std::memset(buf_, 0, sizeof(buf_));
  if (bytes.size() <= kInlineCapacity) {
    if (!bytes.empty()) std::memcpy(buf_, bytes.data(), bytes.size());
    buf_[15] = static_cast<char>(bytes.size());
    return;
  }
  KF_CHECK_LE(bytes.size(), std::numeric_limits<uint32_t>::max()) << "key too long";
  char* p = static_cast<char*>(std::malloc(bytes.size()));
  KF_CHECK(p != nullptr) << "out of memory allocating a key of " << bytes.size() << " bytes";
  std::memcpy(p, bytes.data(), bytes.size());
  uint32_t n = static_cast<uint32_t>(bytes.size());
  std::memcpy(buf_, &p, sizeof(p));
  std::memcpy(buf_ + 8, &n, sizeof(n));
  buf_[15] = static_cast<char>(kHeapTag);
}

void Key::FreeHeap() {
  std::free(const_cast<char*>(heap_ptr()));
}

std::string KeyToString(const Key& key, KeyType type) {
  switch (type) {
    case KeyType::kString:
      return std::string(key.bytes());
    case KeyType::kInt:
    case KeyType::kLong:
      return std::to_string(key.AsInt64());
  }
  return {};
}

Result<Key> ParseKey(std::string_view text, KeyType type) {
  if (type == KeyType::kString) {
    KF_RETURN_IF_ERROR(ValidateUtf8(text));
    return Key::FromBytes(text);
  }
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return OutOfRange("key '" + std::string(text) + "' is out of range for key type " +
                      std::string(KeyTypeName(type)));
  }
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return InvalidArgument("key '" + std::string(text) + "' is not a valid " +
                           std::string(KeyTypeName(type)) + " (expected a decimal integer)");
  }
  if (type == KeyType::kInt &&
      (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
    return OutOfRange("key '" + std::string(text) +
                      "' is out of range for key type int (must fit in 32 bits)");
  }
  return Key::FromInt64(v);
}

}  // namespace keyflow
