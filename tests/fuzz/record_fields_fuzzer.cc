// Fuzz target: field tapes (common/record_fields.h, ValidateFieldTape), the `fields` of every
// record a peer worker sends when the job reads fields.
//
// Input: mode byte (unused, kept for a uniform corpus layout), then the tape.
// Properties: validation never crashes and fails only with Corruption; a tape it accepts is
// safe to read with every accessor (checked by walking every value under ASan), and its
// ToJson is deterministic.
#include <cstdint>
#include <string>

#include "common/record_fields.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void Walk(keyflow::FieldValue v, int depth) {
  using keyflow::FieldType;
  (void)v.type();
  (void)v.AsInt64();
  (void)v.AsDouble();
  (void)v.AsString();
  (void)v.AsBool();
  (void)v.encoded();
  if (depth > 64) return;  // deeper values are still checked by ToJson below
  if (v.type() == FieldType::kObject) {
    v.ForEachMember([&](std::string_view name, keyflow::FieldValue m) {
      KF_CHECK(!v[name].is_missing());
      Walk(m, depth + 1);
    });
  } else if (v.type() == FieldType::kArray) {
    for (size_t i = 0; i < v.size() && i < 64; ++i) Walk(v[i], depth + 1);
    KF_CHECK(v[v.size()].is_missing());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  Status s = ValidateFieldTape(in.bytes);
  if (!s.ok()) {
    KF_CHECK(s.code() == StatusCode::kCorruption) << s.ToString();
    return 0;
  }
  FieldValue root = FieldValue::Root(in.bytes);
  Walk(root, 0);
  KF_CHECK(root.ToJson() == root.ToJson());
  return 0;
}
