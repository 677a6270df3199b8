#include "state/heap/state_table.h"

#include <limits>

namespace keyflow {

Status MalformedSnapshot(const std::string& what) {
  return Corruption(what + ": data is truncated or malformed");
}

Status CheckRestoredKey(const Key& key, KeyGroupId g, const KeyGroupAssigner& assigner) {
  KeyGroupId actual{0};
  switch (assigner.key_type()) {
    case KeyType::kString:
      if (!assigner.AssignString(key.bytes(), &actual)) {
        return Corruption("a string key is not valid UTF-8");
      }
      break;
    case KeyType::kInt:
    case KeyType::kLong: {
      if (key.size() != 8) {
        return Corruption("a key of type " + std::string(KeyTypeName(assigner.key_type())) +
                          " must be 8 bytes, found " + std::to_string(key.size()));
      }
      int64_t v = key.AsInt64();
      if (assigner.key_type() == KeyType::kInt &&
          (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
        return Corruption("int key " + std::to_string(v) + " does not fit in 32 bits");
      }
      actual = assigner.Assign(key);
      break;
    }
  }
  if (actual != g) {
    return Corruption("key '" + KeyToString(key, assigner.key_type()) + "' belongs to key group " +
                      std::to_string(actual.value()) + ", not to key group " +
                      std::to_string(g.value()));
  }
  return Status::Ok();
}

}  // namespace keyflow
