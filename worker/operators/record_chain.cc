#include "worker/operators/record_chain.h"

#include <charconv>
#include <limits>
#include <utility>

namespace keyflow {
namespace {

// A record the function made or changed: its raw JSON is rendered from its fields again.
void ForgetText(const Record& in, Record* out) {
  out->raw_json_cache.clear();
  if (!out->payload.empty() && out->fields != in.fields) out->payload.clear();
  out->timestamp = in.timestamp;
}

class VectorCollector final : public Collector<Record> {
 public:
  explicit VectorCollector(std::vector<Record>* out) : out_(out) {}
  void Collect(Record value) override { out_->push_back(std::move(value)); }

 private:
  std::vector<Record>* out_;
};

}  // namespace

Result<Key> KeyFromField(const Record& record, std::string_view field, KeyType type) {
  const std::string name = "field '" + std::string(field) + "'";
  FieldValue v = record.field(field);
  if (v.is_missing()) return InvalidArgument("the key " + name + " is missing");
  if (type == KeyType::kString) {
    std::optional<std::string_view> text = v.AsString();
    if (!text) {
      return InvalidArgument("the key " + name + " is " + std::string(FieldTypeName(v.type())) +
                             ", not a string (key type string)");
    }
    return Key::FromBytes(*text);
  }
  int64_t value = 0;
  if (std::optional<int64_t> i = v.AsInt64()) {
    value = *i;
  } else if (std::optional<std::string_view> text = v.AsString()) {
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (text->empty() || (*text)[0] == '+' || ptr != text->data() + text->size() ||
        ec != std::errc()) {
      return InvalidArgument("the key " + name + " is not an integer (key type " +
                             std::string(KeyTypeName(type)) + ")");
    }
  } else {
    return InvalidArgument("the key " + name + " is " + std::string(FieldTypeName(v.type())) +
                           ", not an integer (key type " + std::string(KeyTypeName(type)) + ")");
  }
  if (type == KeyType::kInt && (value < std::numeric_limits<int32_t>::min() ||
                                value > std::numeric_limits<int32_t>::max())) {
    return InvalidArgument("the key " + name + " is out of range for key type int (32-bit)");
  }
  return Key::FromInt64(value);
}

RecordChain::RecordChain(std::vector<Operator> operators, Options options,
                         std::shared_ptr<const void> keep_alive)
    : keep_alive_(std::move(keep_alive)),
      options_(std::move(options)),
      assigner_(options_.key_type, options_.max_parallelism) {
  steps_.reserve(operators.size());
  for (Operator& op : operators) {
    UserFunctionGuard guard(options_.job_name, options_.library, op.uid);
    steps_.push_back(Step{std::move(op), std::move(guard), {}});
  }
}

RecordChain::~RecordChain() {
  steps_.clear();  // the functions before the code they live in
}

Status RecordChain::Process(const Record& in, const std::function<Status(const Record&)>& emit) {
  scratch_ = in;
  return Push(0, scratch_, emit);
}

Status RecordChain::Push(size_t step, Record& record,
                         const std::function<Status(const Record&)>& emit) {
  if (step == steps_.size()) return EmitKeyed(record, emit);
  Step& s = steps_[step];
  switch (s.op.kind) {
    case OperatorKind::kFilter: {
      bool keep = false;
      KF_RETURN_IF_ERROR(
          s.guard.Call(UserCall::kFilter, [&] { keep = s.op.functions.filter(record); }));
      return keep ? Push(step + 1, record, emit) : Status::Ok();
    }
    case OperatorKind::kMap: {
      Record out;
      KF_RETURN_IF_ERROR(s.guard.Call(UserCall::kMap, [&] { out = s.op.functions.map(record); }));
      ForgetText(record, &out);
      return Push(step + 1, out, emit);
    }
    case OperatorKind::kFlatMap: {
      // A FlatMap may run again (re-entrantly) only at a later step, so its buffer is its own;
      // taken out while its records travel on, so a nested use finds an empty one.
      std::vector<Record> out = std::move(s.collected);
      out.clear();
      VectorCollector collector(&out);
      KF_RETURN_IF_ERROR(
          s.guard.Call(UserCall::kFlatMap, [&] { s.op.functions.flat_map(record, collector); }));
      Status status = Status::Ok();
      for (Record& r : out) {
        ForgetText(record, &r);
        status = Push(step + 1, r, emit);
        if (!status.ok()) break;
      }
      s.collected = std::move(out);
      return status;
    }
    default:
      return Internal("operator '" + s.op.uid + "' cannot be chained before a KeyBy");
  }
}

Status RecordChain::EmitKeyed(Record& record, const std::function<Status(const Record&)>& emit) {
  if (options_.key_field.empty()) {
    if (options_.forward_key_group.has_value()) {
      record.key_group = *options_.forward_key_group;
      record.key = Key();
    }
    return emit(record);
  }
  Result<Key> key = KeyFromField(record, options_.key_field, options_.key_type);
  if (!key.ok()) return options_.on_bad_key(key.status());
  if (options_.key_type == KeyType::kString) {
    if (!assigner_.AssignString(key->bytes(), &record.key_group)) {
      return options_.on_bad_key(
          InvalidArgument("the key field '" + options_.key_field + "' is not valid UTF-8 text"));
    }
  } else {
    record.key_group = assigner_.Assign(*key);
  }
  record.key = std::move(key).value();
  return emit(record);
}

}  // namespace keyflow
