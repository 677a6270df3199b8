#include "worker/jobs/count_window_function.h"

#include "worker/api/json_output.h"

namespace keyflow {
namespace {

// The open window of one key: one state entry, so a record costs one lookup.
struct CountWindow {
  int64_t count = 0;
  int64_t start = 0;     // S
  int64_t deadline = 0;  // D = S + timeout, the timer's time
  void Write(BinaryWriter& w) const {
    w.I64(count);
    w.I64(start);
    w.I64(deadline);
  }
  bool Read(BinaryReader& r) {
    count = r.I64();
    start = r.I64();
    deadline = r.I64();
    return r.ok();
  }
};

class CountWindowFunction final : public KeyedFunction {
 public:
  CountWindowFunction(int64_t count, int64_t timeout_ms, bool event_time)
      : max_count_(count), timeout_(Duration::Millis(timeout_ms)), event_time_(event_time) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(window_, runtime.GetState(ValueStateDescriptor<CountWindow>("window")));
    return Status::Ok();
  }

  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
    TimerService& timers = ctx.timer_service();
    if (event_time_ && r.timestamp <= timers.CurrentWatermark()) runtime_->late_records().Inc();
    Timestamp now = event_time_ ? r.timestamp : timers.CurrentProcessingTime();
    std::optional<CountWindow> w = window_->Value();
    if (w && event_time_ && r.timestamp.millis() >= w->deadline) {
      Emit(ctx.current_key(), *w, w->deadline, "timeout", out);
      timers.DeleteEventTimeTimer(Timestamp(w->deadline));
      w.reset();
    }
    if (!w) {
      w = CountWindow{0, now.millis(), (now + timeout_).millis()};
      Register(timers, Timestamp(w->deadline));
    }
    if (++w->count >= max_count_) {
      Emit(ctx.current_key(), *w, now.millis(), "count", out);
      Delete(timers, Timestamp(w->deadline));
      window_->Clear();
    } else {
      window_->Update(*w);
    }
  }

  void OnTimer(Timestamp t, OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    std::optional<CountWindow> w = window_->Value();
    if (!w || w->deadline != t.millis()) return;  // closed by count, or an older timer
    Emit(ctx.current_key(), *w, t.millis(), "timeout", out);
    window_->Clear();
  }

  void EndInput(Context& ctx, Collector<OutputRecord>& out) override {
    if (event_time_) return;  // the final watermark closed every window
    int64_t now = ctx.timer_service().CurrentProcessingTime().millis();
    Status s = runtime_->ApplyToAllKeys("window", kVoidNamespace, [&](const Key& key) {
      std::optional<CountWindow> w = window_->Value();
      Emit(key, *w, now, "end-of-input", out);
      ctx.timer_service().DeleteProcessingTimeTimer(Timestamp(w->deadline));
      window_->Clear();
      return Status::Ok();
    });
    KF_CHECK(s.ok()) << s.ToString();
  }

 private:
  void Register(TimerService& timers, Timestamp t) {
    event_time_ ? timers.RegisterEventTimeTimer(t) : timers.RegisterProcessingTimeTimer(t);
  }
  void Delete(TimerService& timers, Timestamp t) {
    event_time_ ? timers.DeleteEventTimeTimer(t) : timers.DeleteProcessingTimeTimer(t);
  }
  void Emit(const Key& key, const CountWindow& w, int64_t time, std::string_view cause,
            Collector<OutputRecord>& out) {
    std::string line;
    line.reserve(96);
    line += "{\"key\":";
    AppendJsonKey(&line, key, runtime_->key_type());
    line += ",\"count\":";
    line += std::to_string(w.count);
    line += ",\"start\":";
    line += std::to_string(w.start);
    line += ",\"time\":";
    line += std::to_string(time);
    line += ",\"cause\":\"";
    line += cause;
    line += "\",\"subtask\":";
    line += std::to_string(runtime_->subtask_index().value());
    line += '}';
    out.Collect(std::move(line));
  }

  const int64_t max_count_;
  const Duration timeout_;
  const bool event_time_;
  RuntimeContext* runtime_ = nullptr;
  ValueState<CountWindow>* window_ = nullptr;
};

}  // namespace

std::unique_ptr<KeyedFunction> MakeCountWindowFunction(const JobParams& params) {
  return std::make_unique<CountWindowFunction>(params.GetInt("count"),
                                               params.GetDuration("timeout").millis(),
                                               params.GetString("time") == "event");
}

}  // namespace keyflow
