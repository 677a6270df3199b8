// running-sum: per key, the running sum of an integer field (`field`, default "amount"),
// emitted on an event-time timer at the end of every `interval` (default 1min) in which the key
// had records — Flink's "continuous" aggregate written as a KeyedProcessFunction. This is also
// the benchmark job of scripts/bench.sh that reads one field of every record.
//
// Event time is cut into intervals [k*interval, (k+1)*interval). A record adds its field to the
// sum of its interval and registers an event-time timer at the interval's last millisecond L;
// the timer, fired by the watermark, adds the interval's sum to the key's running total and
// emits
//   {"key":K,"time":E,"sum":S}
// E = L + 1, the interval's end, S = the sum of `field` over the key's records with timestamp
// < E. The result depends only on the input, not on when the watermark arrives. Records without
// an integer `field` count as 0; records behind the watermark are late: counted (`keyflow
// status`) and dropped.
//
// State, as a Flink user writes it (all of it in the key's plain keyed state, no namespace):
//   open   ValueState<OpenInterval>  the interval the key's records are in now, and its sum
//   total  ValueState<long>          the sum of every interval emitted so far
// Out-of-order records can make a key have records in two intervals before the first is
// emitted; the record of an interval other than `open` goes to `other`, a ValueState scoped to
// that interval with a namespace (as Flink's window state is). That is the rare case: the
// common one touches only `open`, one entry per key, which the runtime prefetches.
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

// The interval a key's records are in now: its last millisecond and the sum so far.
struct OpenInterval {
  int64_t last = 0;
  int64_t sum = 0;
  void Write(keyflow::BinaryWriter& w) const {
    w.I64(last);
    w.I64(sum);
  }
  bool Read(keyflow::BinaryReader& r) {
    last = r.I64();
    sum = r.I64();
    return r.ok();
  }
};

class RunningSum final : public keyflow::KeyedFunction {
 public:
  RunningSum(std::string field, keyflow::Duration interval)
      : field_(std::move(field)), interval_(interval.millis()) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(open_, runtime.GetState(ValueStateDescriptor<OpenInterval>("open")));
    KF_ASSIGN_OR_RETURN(total_, runtime.GetState(ValueStateDescriptor<int64_t>("total", 0)));
    KF_ASSIGN_OR_RETURN(other_, runtime.GetState(ValueStateDescriptor<int64_t>("other")));
    return Status::Ok();
  }

  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>&) override {
    Timestamp last(IntervalStart(r.timestamp.millis(), interval_) + interval_ - 1);
    if (last <= ctx.timer_service().CurrentWatermark()) {
      runtime_->late_records().Inc();  // its interval was emitted already
      return;
    }
    int64_t value = r.field(field_).AsInt64().value_or(0);
    std::optional<OpenInterval> open = open_->Value();
    if (!open) {  // the key's first record of an interval: it becomes the open one
      open_->Update(OpenInterval{last.millis(), value});
      ctx.timer_service().RegisterEventTimeTimer(last);
    } else if (open->last == last.millis()) {  // the common case
      open->sum += value;
      open_->Update(*open);
    } else {  // another interval of the key is open (out-of-order input)
      other_->SetCurrentNamespace(Namespace(last.millis()));
      std::optional<int64_t> sum = other_->Value();
      if (!sum) ctx.timer_service().RegisterEventTimeTimer(last);
      other_->Update(sum.value_or(0) + value);
    }
  }

  // Timers fire in timestamp order, so the intervals of a key are added in order.
  void OnTimer(Timestamp t, keyflow::OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    int64_t interval_sum = 0;
    std::optional<OpenInterval> open = open_->Value();
    if (open && open->last == t.millis()) {
      interval_sum += open->sum;
      open_->Clear();
    }
    other_->SetCurrentNamespace(Namespace(t.millis()));
    if (std::optional<int64_t> other = other_->Value()) {
      interval_sum += *other;
      other_->Clear();
    }
    int64_t sum = *total_->Value() + interval_sum;
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
  ValueState<OpenInterval>* open_ = nullptr;  // the interval the key's records are in now
  ValueState<int64_t>* total_ = nullptr;      // every emitted interval of the key
  ValueState<int64_t>* other_ = nullptr;      // other open intervals (namespace = their last ms)
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
  // Only `field` travels: the sources drop every other field of the input before the shuffle.
  job.fields = [](const keyflow::JobParams& p) {
    return std::vector<std::string>{p.GetString("field")};
  };
  job.create = [](const keyflow::JobParams& p) {
    return std::make_unique<RunningSum>(p.GetString("field"), p.GetDuration("interval"));
  };
  return {job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
