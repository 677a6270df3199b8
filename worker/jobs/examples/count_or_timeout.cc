// count-or-timeout: per uid, one output record when 500 records have arrived or 12 hours after
// the first one, whichever comes first (the project's reference job), written line by
// line like its Flink original — a KeyedProcessFunction with two ValueStates and a
// processing-time timer:
//
//   public class CountOrTimeout extends KeyedProcessFunction<String, Event, String> {
//     private transient ValueState<Long> count;   // records of the open window
//     private transient ValueState<Long> timer;   // when the open window times out
//
//     public void open(Configuration parameters) {
//       count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
//       timer = getRuntimeContext().getState(new ValueStateDescriptor<>("timer", Long.class));
//     }
//
//     public void processElement(Event e, Context ctx, Collector<String> out) throws Exception {
//       Long current = count.value();
//       if (current == null) {                                   // the key's first record
//         current = 0L;
//         long t = ctx.timerService().currentProcessingTime() + timeout;
//         ctx.timerService().registerProcessingTimeTimer(t);
//         timer.update(t);
//       }
//       current += 1;
//       if (current >= maxCount) {                              // 500 arrived: emit, no timeout
//         out.collect(ctx.getCurrentKey() + "," + current + ",count");
//         ctx.timerService().deleteProcessingTimeTimer(timer.value());
//         count.clear();
//         timer.clear();
//       } else {
//         count.update(current);
//       }
//     }
//
//     public void onTimer(long t, OnTimerContext ctx, Collector<String> out) throws Exception {
//       out.collect(ctx.getCurrentKey() + "," + count.value() + ",timeout");
//       count.clear();
//       timer.clear();
//     }
//   }
//
// The one addition: a bounded input ends, and processing-time timers do not fire after the end
// of input (neither in Flink nor here), so EndInput emits the windows still open (cause
// "end-of-input") instead of dropping them.
//
// Output, one JSON object per window:
//   {"uid":K,"count":N,"time":T,"cause":"count"|"timeout"|"end-of-input"}
// T is the processing time (epoch ms) at which the window closed.
//
//   keyflow run --job-library build/lib/keyflow/examples/libcount-or-timeout.so
//       --job count-or-timeout --param count=500 --param timeout=12h --input events/ --wait
#include <keyflow/keyflow.h>

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::OutputRecord;
using keyflow::Record;
using keyflow::RuntimeContext;
using keyflow::Status;
using keyflow::Timestamp;
using keyflow::ValueState;
using keyflow::ValueStateDescriptor;

class CountOrTimeout final : public keyflow::KeyedFunction {
 public:
  CountOrTimeout(int64_t max_count, keyflow::Duration timeout)
      : max_count_(max_count), timeout_(timeout) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(count_, runtime.GetState(ValueStateDescriptor<int64_t>("count")));
    KF_ASSIGN_OR_RETURN(timer_, runtime.GetState(ValueStateDescriptor<int64_t>("timer")));
    return Status::Ok();
  }

  void ProcessElement(const Record&, Context& ctx, Collector<OutputRecord>& out) override {
    std::optional<int64_t> current = count_->Value();
    if (!current) {  // the key's first record
      current = 0;
      Timestamp t = ctx.timer_service().CurrentProcessingTime() + timeout_;
      ctx.timer_service().RegisterProcessingTimeTimer(t);
      timer_->Update(t.millis());
    }
    *current += 1;
    if (*current >= max_count_) {  // 500 arrived: emit, and the window does not time out
      Emit(ctx.current_key(), *current, ctx.timer_service().CurrentProcessingTime(), "count", out);
      ctx.timer_service().DeleteProcessingTimeTimer(Timestamp(*timer_->Value()));
      count_->Clear();
      timer_->Clear();
    } else {
      count_->Update(*current);
    }
  }

  void OnTimer(Timestamp t, keyflow::OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    Emit(ctx.current_key(), *count_->Value(), t, "timeout", out);
    count_->Clear();
    timer_->Clear();
  }

  // Visits every key that still has a window (ApplyToAllKeys sets the current key).
  void EndInput(Context& ctx, Collector<OutputRecord>& out) override {
    Timestamp now = ctx.timer_service().CurrentProcessingTime();
    Status s =
        runtime_->ApplyToAllKeys("count", keyflow::kVoidNamespace, [&](const keyflow::Key& key) {
          Emit(key, *count_->Value(), now, "end-of-input", out);
          ctx.timer_service().DeleteProcessingTimeTimer(Timestamp(*timer_->Value()));
          count_->Clear();
          timer_->Clear();
          return Status::Ok();
        });
    if (!s.ok()) throw std::runtime_error(s.ToString());  // the runtime reports it as a failure
  }

 private:
  void Emit(const keyflow::Key& key, int64_t count, Timestamp time, std::string_view cause,
            Collector<OutputRecord>& out) {
    out.Collect(keyflow::JsonObject()
                    .Add("uid", key, runtime_->key_type())
                    .Add("count", count)
                    .Add("time", time.millis())
                    .Add("cause", cause));
  }

  const int64_t max_count_;
  const keyflow::Duration timeout_;
  RuntimeContext* runtime_ = nullptr;
  ValueState<int64_t>* count_ = nullptr;
  ValueState<int64_t>* timer_ = nullptr;
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition job;
  job.name = "count-or-timeout";
  job.description =
      "per key, one record when `count` records have arrived or `timeout` (processing time) "
      "after the first, whichever comes first";
  job.params = {
      {"count", keyflow::ParamType::kPositiveInt, "500", "records that close a window"},
      {"timeout", keyflow::ParamType::kDuration, "12h",
       "processing time after a window's first record that closes it"},
  };
  job.reads_fields = false;  // only the key: the sources ship no fields (the fastest path)
  job.create = [](const keyflow::JobParams& p) {
    return std::make_unique<CountOrTimeout>(p.GetInt("count"), p.GetDuration("timeout"));
  };
  return {job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
