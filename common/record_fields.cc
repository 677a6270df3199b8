#include "common/record_fields.h"

#include <cmath>

namespace keyflow {
namespace {

// A bounds-checked walk over an untrusted tape. Every read checks the remaining bytes first;
// recursion is bounded by kMaxFieldDepth.
class TapeValidator {
 public:
  explicit TapeValidator(std::string_view tape)
      : begin_(tape.data()), p_(tape.data()), end_(tape.data() + tape.size()) {}

  Status Run() {
    if (p_ == end_) return Status::Ok();
    if (static_cast<uint8_t>(*p_) != kFieldTapeVersion) {
      return Fail("version " + std::to_string(static_cast<uint8_t>(*p_)) + ", this build reads " +
                  std::to_string(kFieldTapeVersion));
    }
    ++p_;
    if (!Value(0)) return error_;
    if (p_ != end_) return Fail(std::to_string(end_ - p_) + " bytes after the root value");
    return Status::Ok();
  }

 private:
  bool Value(int depth) {
    if (p_ == end_) return Set("value expected at the end");
    const uint8_t tag = static_cast<uint8_t>(*p_++);
    switch (tag) {
      case field_tape::kNull:
      case field_tape::kFalse:
      case field_tape::kTrue:
        return true;
      case field_tape::kInt:
        return Skip(8, "int");
      case field_tape::kDouble: {
        if (end_ - p_ < 8) return Set("truncated double");
        double v;
        std::memcpy(&v, p_, sizeof v);
        if (!std::isfinite(v)) return Set("non-finite double");
        p_ += 8;
        return true;
      }
      case field_tape::kString:
      case field_tape::kNumber:
        return Text(tag == field_tape::kString ? "string" : "number");
      case field_tape::kArray:
      case field_tape::kObject:
        return Container(tag == field_tape::kObject, depth + 1);
      default:
        --p_;
        return Set("unknown tag " + std::to_string(tag));
    }
  }

  bool Container(bool is_object, int depth) {
    if (depth > kMaxFieldDepth) return Set("nested deeper than " + std::to_string(kMaxFieldDepth));
    if (end_ - p_ < 8) return Set("truncated container header");
    const uint32_t size = field_tape::LoadU32(p_);
    const uint32_t count = field_tape::LoadU32(p_ + 4);
    if (size < 4 || size > static_cast<size_t>(end_ - p_) - 4) {
      return Set("container size " + std::to_string(size) + " does not fit");
    }
    const char* const container_end = p_ + 4 + size;
    const char* const saved_end = end_;
    end_ = container_end;  // children must stay inside the container
    p_ += 8;
    for (uint32_t i = 0; i < count; ++i) {
      if (is_object && !Text("member name")) return false;
      if (!Value(depth)) return false;
    }
    if (p_ != container_end)
      return Set("container holds more than its " + std::to_string(count) +
                 (is_object ? " members" : " elements"));
    end_ = saved_end;
    return true;
  }

  bool Text(const char* what) {
    uint32_t n = 0;
    for (int i = 0;; ++i) {
      if (p_ == end_) return Set(std::string("truncated ") + what + " length");
      const uint8_t b = static_cast<uint8_t>(*p_++);
      if (i == 4 && b > 0x0f) return Set(std::string("overlong ") + what + " length");
      n |= static_cast<uint32_t>(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) break;
    }
    return Skip(n, what);
  }

  bool Skip(size_t n, const char* what) {
    if (static_cast<size_t>(end_ - p_) < n) return Set(std::string("truncated ") + what);
    p_ += n;
    return true;
  }

  bool Set(std::string what) {
    error_ = Fail(what);
    return false;
  }
  Status Fail(const std::string& what) const {
    return Corruption("malformed field tape at byte " + std::to_string(p_ - begin_) + ": " + what);
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  Status error_;
};

}  // namespace

Status ValidateFieldTape(std::string_view tape) {
  return TapeValidator(tape).Run();
}

}  // namespace keyflow
