// sessions: per key, a session window with an inactivity gap (Flink's
// EventTimeSessionWindows.withGap(gap) followed by a ProcessWindowFunction), written as the
// KeyedProcessFunction a Flink user writes to do it by hand: event-time timers, a ListState
// buffering the session's elements, ValueStates for the session's bounds, and a field read from
// every record (`field`, default "amount").
//
// A session is a run of a key's records, each less than `gap` after the latest one before it;
// it closes when the watermark passes its last record + gap (the timer). One output record per
// session, at the session's end:
//   {"key":K,"start":S,"end":E,"events":N,"sum":A,"max":M}
// S = the session's smallest timestamp, E = last record's timestamp + gap (the timer's time; the
// output record's timestamp), N = records, A/M = sum and maximum of the integer field `field` over
// the records that have one (null when none has). Records behind the watermark are late: counted
// (`keyflow status` shows late records) and dropped, as Flink's windows drop them without
// allowed lateness.
//
//   keyflow run --job-library build/lib/keyflow/examples/libsessions.so --job sessions
//       --param gap=30min --input events/ --output out/ --checkpoint-interval 10s --wait
#include <keyflow/keyflow.h>

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::Duration;
using keyflow::ListState;
using keyflow::ListStateDescriptor;
using keyflow::OutputRecord;
using keyflow::Record;
using keyflow::RuntimeContext;
using keyflow::Status;
using keyflow::Timestamp;
using keyflow::ValueState;
using keyflow::ValueStateDescriptor;

class Sessions final : public keyflow::KeyedFunction {
 public:
  Sessions(Duration gap, std::string field) : gap_(gap), field_(std::move(field)) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(start_, runtime.GetState(ValueStateDescriptor<int64_t>("start")));
    KF_ASSIGN_OR_RETURN(end_, runtime.GetState(ValueStateDescriptor<int64_t>("end")));
    KF_ASSIGN_OR_RETURN(values_, runtime.GetListState(ListStateDescriptor<int64_t>("values")));
    KF_ASSIGN_OR_RETURN(events_, runtime.GetState(ValueStateDescriptor<int64_t>("events", 0)));
    return Status::Ok();
  }

  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
    keyflow::TimerService& timers = ctx.timer_service();
    if (r.timestamp <= timers.CurrentWatermark()) {  // its session may have closed already
      runtime_->late_records().Inc();
      return;
    }
    std::optional<int64_t> end = end_->Value();
    if (end && r.timestamp.millis() >= *end) {  // a gap since the last record: close that session
      timers.DeleteEventTimeTimer(Timestamp(*end - 1));
      CloseSession(ctx.current_key(), out);
      end.reset();
    }
    std::optional<int64_t> start = end ? start_->Value() : std::nullopt;
    if (!start || r.timestamp.millis() < *start) start_->Update(r.timestamp.millis());
    if (!end || r.timestamp.millis() + gap_.millis() > *end) {  // extend: move the timer
      if (end) timers.DeleteEventTimeTimer(Timestamp(*end - 1));
      end = r.timestamp.millis() + gap_.millis();
      end_->Update(*end);
      timers.RegisterEventTimeTimer(Timestamp(*end - 1));  // fires once the watermark >= end - 1
    }
    if (std::optional<int64_t> v = r.field(field_).AsInt64()) values_->Add(*v);
    events_->Update(*events_->Value() + 1);
  }

  void OnTimer(Timestamp, keyflow::OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    CloseSession(ctx.current_key(), out);  // only the session's latest timer is registered
  }

 private:
  void CloseSession(const keyflow::Key& key, Collector<OutputRecord>& out) {
    int64_t end = *end_->Value();
    keyflow::JsonObject session;
    session.Add("key", key, runtime_->key_type())
        .Add("start", *start_->Value())
        .Add("end", end)
        .Add("events", *events_->Value());
    int64_t sum = 0, max = 0, n = 0;
    for (int64_t v : values_->Get()) {
      sum += v;
      max = n++ == 0 ? v : std::max(max, v);
    }
    if (n > 0) {
      session.Add("sum", sum).Add("max", max);
    } else {
      session.AddNull("sum").AddNull("max");
    }
    out.Collect(OutputRecord(std::move(session), Timestamp(end)));
    start_->Clear();
    end_->Clear();
    values_->Clear();
    events_->Clear();
  }

  const Duration gap_;
  const std::string field_;
  RuntimeContext* runtime_ = nullptr;
  ValueState<int64_t>* start_ = nullptr;
  ValueState<int64_t>* end_ = nullptr;  // last record's timestamp + gap
  ListState<int64_t>* values_ = nullptr;
  ValueState<int64_t>* events_ = nullptr;
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition job;
  job.name = "sessions";
  job.description =
      "per key, one record per session of activity (records less than `gap` apart, event time) "
      "with its bounds, record count, and sum and maximum of an integer field";
  job.params = {
      {"gap", keyflow::ParamType::kDuration, "30min", "inactivity that ends a session"},
      {"field", keyflow::ParamType::kString, "amount", "the integer field summed per session"},
  };
  job.reads_fields = true;
  job.create = [](const keyflow::JobParams& p) {
    return std::make_unique<Sessions>(p.GetDuration("gap"), p.GetString("field"));
  };
  return {job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
