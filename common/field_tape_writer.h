// FieldTapeWriter: writes one field tape (format in common/record_fields.h) value by value, in
// the order of a JSON walk. The JSON record parser drives it during its one pass over a line;
// the generator and tests build tapes with it directly:
//
//   FieldTapeWriter w(&record.fields);
//   w.BeginObject();
//   w.Name("uid");    w.String("u1");
//   w.Name("amount"); w.Int(42);
//   w.EndObject();    // record.fields is now a complete tape
//
// Header-only (a job library can build test records without linking anything). Preconditions
// (DCHECKed): exactly one root value; inside an object, Name() before each value; containers
// closed in order; at most kMaxFieldDepth levels; the tape stays below 4 GiB.
//
// Threading: one writer per thread. Reusable: Reset() starts a new tape and keeps the capacity
// of its container stack.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/binary_io.h"
#include "common/check.h"
#include "common/record_fields.h"

namespace keyflow {

class FieldTapeWriter {
 public:
  FieldTapeWriter() = default;
  explicit FieldTapeWriter(std::string* out) { Reset(out); }

  // Starts a new tape in *out (cleared first).
  void Reset(std::string* out) {
    out_ = out;
    out_->clear();
    out_->push_back(static_cast<char>(kFieldTapeVersion));
    open_.clear();
  }

  void Null() { Tag(field_tape::kNull); }
  void Bool(bool v) { Tag(v ? field_tape::kTrue : field_tape::kFalse); }
  void Int(int64_t v) {
    Tag(field_tape::kInt);
    Raw(&v, sizeof v);
  }
  // Precondition: v is finite (JSON has no infinities or NaN).
  void Double(double v) {
    Tag(field_tape::kDouble);
    Raw(&v, sizeof v);
  }
  void String(std::string_view s) {
    Tag(field_tape::kString);
    Text(s);
  }
  // A JSON number kept as its text (integers beyond 64 bits). Precondition: `text` is a JSON
  // number.
  void NumberText(std::string_view text) {
    Tag(field_tape::kNumber);
    Text(text);
  }

  void BeginObject() { Begin(field_tape::kObject); }
  // The next member's name. Precondition: directly inside an object.
  void Name(std::string_view name) {
    KF_DCHECK(!open_.empty() && open_.back().is_object);
    ++open_.back().count;
    Text(name);
  }
  void EndObject() { End(); }
  void BeginArray() { Begin(field_tape::kArray); }
  void EndArray() { End(); }

  // Containers not closed yet.
  size_t depth() const { return open_.size(); }

 private:
  struct Open {
    size_t offset;  // of the container's tag
    uint32_t count;
    bool is_object;
  };

  void Tag(uint8_t tag) {
    if (!open_.empty() && !open_.back().is_object) ++open_.back().count;
    out_->push_back(static_cast<char>(tag));
  }
  void Raw(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }
  void Text(std::string_view s) {
    KF_CHECK_LT(s.size(), size_t{1} << 32);
    BinaryWriter(out_).Bytes(s);  // varint length, bytes
  }
  void Begin(uint8_t tag) {
    KF_DCHECK(open_.size() < static_cast<size_t>(kMaxFieldDepth));
    Tag(tag);
    open_.push_back(Open{out_->size() - 1, 0, tag == field_tape::kObject});
    out_->append(8, '\0');  // size and count, patched by End()
  }
  void End() {
    KF_DCHECK(!open_.empty());
    const Open& o = open_.back();
    const size_t size = out_->size() - (o.offset + 5);
    KF_CHECK_LT(size, size_t{1} << 32);
    const uint32_t size32 = static_cast<uint32_t>(size);
    std::memcpy(out_->data() + o.offset + 1, &size32, 4);
    std::memcpy(out_->data() + o.offset + 5, &o.count, 4);
    open_.pop_back();
  }

  std::string* out_ = nullptr;
  std::vector<Open> open_;
};

}  // namespace keyflow
