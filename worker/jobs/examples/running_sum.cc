// running-sum: per key, the running sum of an integer field (`field`, default "amount"),
// emitted on an event-time timer at the end of every `interval` (default 1min) in which the key
// had records — Flink's "continuous" aggregate written as a KeyedProcessFunction. This is also
// the benchmark job of scripts/bench.sh that reads one field of every record.
//
// Event time is cut into intervals [k*interval, (k+1)*interval). A record adds its field to the
// sum of its interval (a ValueState scoped to the interval with a namespace, as Flink's window
// state is) and registers the interval's timer at its last millisecond; the timer, fired by the
// watermark, adds the interval to the key's running total (a ValueState without namespace) and
// emits
//   {"key":K,"time":E,"sum":S}
// E = the interval's end, S = the sum of `field` over the key's records with timestamp < E. The
// result depends only on the input, not on when the watermark arrives. Records without an integer
// `field` count as 0; records behind the watermark are late: counted (`keyflow status`) and
// dropped.
//
//   keyflow run --job-library build/lib/keyflow/examples/librunning-sum.so --job running-sum
//       --param field=amount --param interval=5min --input events/ --output out/ --wait
#include <keyflow/keyflow.h>

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::Namespace;
using keyflow::OutputRecord;
using keyflow::Record;
using keyflow::RuntimeContext;
using keyflow::Status;
using keyflow::Timestamp;
using keyflow::ValueState;
using keyflow::ValueStateDescriptor;

// floor(ts / size) * size, also for negative timestamps.
int64_t IntervalStart(int64_t ts, int64_t size) {
  int64_t q = ts / size;
  if (ts % size != 0 && ts < 0) --q;
  return q * size;
}

class RunningSum final : public keyflow::KeyedFunction {
 public:
  RunningSum(std::string field, keyflow::Duration interval)
      : field_(std::move(field)), interval_(interval.millis()) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    ASSIGN_OR_RETURN(total_, runtime.GetState(ValueStateDescriptor<int64_t>("total", 0)));
    ASSIGN_OR_RETURN(interval_sum_,
                     runtime.GetState(ValueStateDescriptor<int64_t>("interval-sum")));
    return Status::Ok();
  }

  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>&) override {
    Namespace interval(IntervalStart(r.timestamp.millis(), interval_));
    Timestamp last(interval.value() + interval_ - 1);  // the interval's last millisecond
    if (last <= ctx.timer_service().CurrentWatermark()) {
      runtime_->late_records().Inc();  // its interval was emitted already
      return;
    }
    int64_t value = r.field(field_).AsInt64().value_or(0);
    interval_sum_->SetCurrentNamespace(interval);
    std::optional<int64_t> sum = interval_sum_->Value();
    // The key's first record in this interval registers the interval's timer (registering it
    // again would be a no-op, but a lookup in the timer queue for every record).
    if (!sum) ctx.timer_service().RegisterEventTimeTimer(last, interval);
    interval_sum_->Update(sum.value_or(0) + value);
  }

  void OnTimer(Timestamp t, keyflow::OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    interval_sum_->SetCurrentNamespace(ctx.timer_namespace());
    int64_t sum = *total_->Value() + interval_sum_->Value().value_or(0);
    interval_sum_->Clear();
    total_->Update(sum);
    out.Collect(keyflow::JsonObject()
                    .Add("key", ctx.current_key(), runtime_->key_type())
                    .Add("time", t.millis() + 1)
                    .Add("sum", sum));
  }

 private:
  const std::string field_;
  const int64_t interval_;
  RuntimeContext* runtime_ = nullptr;
  ValueState<int64_t>* total_ = nullptr;         // every emitted interval of the key
  ValueState<int64_t>* interval_sum_ = nullptr;  // per interval (namespace = interval start)
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition job;
  job.name = "running-sum";
  job.description =
      "per key, the running sum of an integer field, emitted at the end of every interval "
      "(event time) in which the key had records";
  job.params = {
      {"field", keyflow::ParamType::kString, "amount", "the integer field to sum"},
      {"interval", keyflow::ParamType::kDuration, "1min", "how often the sum is emitted"},
  };
  job.reads_fields = true;
  job.create = [](const keyflow::JobParams& p) {
    return std::make_unique<RunningSum>(p.GetString("field"), p.GetDuration("interval"));
  };
  return {job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
