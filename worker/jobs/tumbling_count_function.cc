#include "worker/jobs/tumbling_count_function.h"

#include "worker/api/json_output.h"

namespace keyflow {
namespace {

// floor(ts / size) * size, also for negative timestamps.
int64_t WindowStart(int64_t ts, int64_t size) {
  int64_t q = ts / size;
  if (ts % size != 0 && ts < 0) --q;
  return q * size;
}

class TumblingCountFunction final : public KeyedFunction {
 public:
  explicit TumblingCountFunction(int64_t size_ms) : size_(size_ms) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(count_, runtime.GetState(ValueStateDescriptor<int64_t>("count", 0)));
    return Status::Ok();
  }

  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>&) override {
    int64_t start = WindowStart(r.timestamp.millis(), size_);
    Timestamp max_timestamp(start + size_ - 1);
    if (max_timestamp <= ctx.timer_service().CurrentWatermark()) {
      runtime_->late_records().Inc();  // its window already fired
      return;
    }
    count_->SetCurrentNamespace(Namespace(start));
    count_->Update(*count_->Value() + 1);
    ctx.timer_service().RegisterEventTimeTimer(max_timestamp, Namespace(start));
  }

  void OnTimer(Timestamp, OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    int64_t start = ctx.timer_namespace().value();
    count_->SetCurrentNamespace(ctx.timer_namespace());
    int64_t n = *count_->Value();
    count_->Clear();
    if (n == 0) return;
    std::string line;
    line.reserve(96);
    line += "{\"key\":";
    AppendJsonKey(&line, ctx.current_key(), runtime_->key_type());
    line += ",\"window_start\":";
    line += std::to_string(start);
    line += ",\"window_end\":";
    line += std::to_string(start + size_);
    line += ",\"count\":";
    line += std::to_string(n);
    line += ",\"subtask\":";
    line += std::to_string(runtime_->subtask_index().value());
    line += '}';
    out.Collect(std::move(line));
  }

 private:
  const int64_t size_;
  RuntimeContext* runtime_ = nullptr;
  ValueState<int64_t>* count_ = nullptr;
};

}  // namespace

std::unique_ptr<KeyedFunction> MakeTumblingCountFunction(const JobParams& params) {
  return std::make_unique<TumblingCountFunction>(params.GetDuration("size").millis());
}

}  // namespace keyflow
