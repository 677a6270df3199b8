// spend-by-tier: a job as a dataflow graph (JobDefinition::graph) — stateless operators before a
// KeyBy on a field they compute, then a keyed event-time window:
//
//   source -> Filter "with-amount" -> Map "tier" =KeyBy(tier)=> Process "window-sum" -> sink
//
//   with-amount  keeps the records whose "amount" is an integer (null or missing: dropped);
//   tier         makes a new record {"tier":T,"amount":A}: T is "refund" (A < 0), "small"
//                (A < 300), "medium" (A < 700) or "large";
//   window-sum   per tier and tumbling window of `interval` (event time), the number of records
//                and their sum, emitted when the watermark passes the window's end:
//                  {"tier":T,"window_end":E,"count":N,"sum":S}
//
// Filter and Map run chained in the source's task (no serialisation between them); the KeyBy
// routes what Map emits by its "tier" field to the subtask that owns the tier's key group.
// Records behind the watermark are late: counted (`keyflow status`) and dropped.
//
//   keyflow run --job-library build/lib/keyflow/examples/libspend-by-tier.so --job spend-by-tier
//       --param interval=5s --input events/ --output out/ --wait
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

// A window's count and sum.
struct Aggregate {
  int64_t count = 0;
  int64_t sum = 0;
  void Write(keyflow::BinaryWriter& w) const {
    w.I64(count);
    w.I64(sum);
  }
  bool Read(keyflow::BinaryReader& r) {
    count = r.I64();
    sum = r.I64();
    return r.ok();
  }
};

bool HasAmount(const Record& r) {
  return r.field("amount").AsInt64().has_value();
}

Record Tier(const Record& in) {
  const int64_t amount = *in.field("amount").AsInt64();
  const char* tier = amount < 0     ? "refund"
                     : amount < 300 ? "small"
                     : amount < 700 ? "medium"
                                    : "large";
  Record out;
  keyflow::FieldTapeWriter w(&out.fields);
  w.BeginObject();
  w.Name("tier");
  w.String(tier);
  w.Name("amount");
  w.Int(amount);
  w.EndObject();
  return out;  // the runtime keeps the input's timestamp and keys it by "tier"
}

// floor(ts / size) * size, also for negative timestamps.
int64_t WindowStart(int64_t ts, int64_t size) {
  int64_t q = ts / size;
  if (ts % size != 0 && ts < 0) --q;
  return q * size;
}

class WindowSum final : public keyflow::KeyedFunction {
 public:
  explicit WindowSum(keyflow::Duration size) : size_(size.millis()) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(window_,
                        runtime.GetState(keyflow::ValueStateDescriptor<Aggregate>("window")));
    return Status::Ok();
  }

  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>&) override {
    const Timestamp last(WindowStart(r.timestamp.millis(), size_) + size_ - 1);
    if (last <= ctx.timer_service().CurrentWatermark()) {
      runtime_->late_records().Inc();
      return;
    }
    window_->SetCurrentNamespace(Namespace(last.millis()));
    Aggregate a = window_->Value().value_or(Aggregate{});
    if (a.count == 0) ctx.timer_service().RegisterEventTimeTimer(last);
    a.count += 1;
    a.sum += *r.field("amount").AsInt64();
    window_->Update(a);
  }

  void OnTimer(Timestamp t, keyflow::OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    window_->SetCurrentNamespace(Namespace(t.millis()));
    const Aggregate a = window_->Value().value_or(Aggregate{});
    window_->Clear();
    out.Collect(keyflow::JsonObject()
                    .Add("tier", ctx.current_key(), runtime_->key_type())
                    .Add("window_end", t.millis() + 1)
                    .Add("count", a.count)
                    .Add("sum", a.sum));
  }

 private:
  const int64_t size_;
  RuntimeContext* runtime_ = nullptr;
  keyflow::ValueState<Aggregate>* window_ = nullptr;  // namespace: the window's last ms
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition job;
  job.name = "spend-by-tier";
  job.description =
      "a graph: keeps records with an integer amount, maps each to its spending tier, and per "
      "tier and tumbling window (event time) emits the count and sum of the amounts";
  job.params = {
      {"interval", keyflow::ParamType::kDuration, "1min", "the tumbling window's size"},
  };
  job.reads_fields = true;
  job.fields = [](const keyflow::JobParams&) { return std::vector<std::string>{"amount"}; };
  job.graph = [](keyflow::StreamGraphBuilder& g, const keyflow::JobParams& p) {
    const keyflow::Duration interval = p.GetDuration("interval");
    g.Source()
        .Filter("with-amount", HasAmount)
        .Map("tier", Tier)
        .KeyBy("tier")
        .Process("window-sum", [interval] { return std::make_unique<WindowSum>(interval); })
        .Sink();
  };
  return {job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
