// The chaining benchmark's jobs (scripts/bench.sh --chaining): the same logic as a graph whose
// Map and Filter run chained in the source's task before the KeyBy, and inside one keyed
// function. Built with keyflow_add_job as libchain-jobs.so.
//
//   chain-graph   Source -> Map "double" ({"uid":U,"amount":2A}) -> Filter "keep" (2A % 10 != 0)
//                 =KeyBy(uid)=> Process "sum" -> sink
//   chain-inline  KeyBy(uid) -> one function that makes the same record, applies the same
//                 filter and sums
// Both keep per key the sum of what passed, emitted at the end of input: {"uid":U,"sum":S}.
#include <keyflow/keyflow.h>

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::OutputRecord;
using keyflow::Record;

constexpr keyflow::Timestamp kAtTheEnd(4'000'000'000'000);

Record Double(const Record& in, std::string_view uid) {
  Record out;
  keyflow::FieldTapeWriter w(&out.fields);
  w.BeginObject();
  w.Name("uid");
  w.String(uid);
  w.Name("amount");
  w.Int(2 * in.field("amount").AsInt64().value_or(0));
  w.EndObject();
  return out;
}

bool Keep(const Record& r) {
  return *r.field("amount").AsInt64() % 10 != 0;
}

class Sum final : public keyflow::KeyedFunction {
 public:
  explicit Sum(bool inline_logic) : inline_(inline_logic) {}
  keyflow::Status Open(keyflow::RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(sum_, runtime.GetState(keyflow::ValueStateDescriptor<int64_t>("sum")));
    return keyflow::Status::Ok();
  }
  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>&) override {
    int64_t amount = 0;
    if (inline_) {
      const Record mapped = Double(r, r.field("uid").AsString().value_or(""));
      if (!Keep(mapped)) return;
      amount = *mapped.field("amount").AsInt64();
    } else {
      amount = *r.field("amount").AsInt64();
    }
    std::optional<int64_t> sum = sum_->Value();
    if (!sum) ctx.timer_service().RegisterEventTimeTimer(kAtTheEnd);
    sum_->Update(sum.value_or(0) + amount);
  }
  void OnTimer(keyflow::Timestamp, keyflow::OnTimerContext& ctx,
               Collector<OutputRecord>& out) override {
    out.Collect(keyflow::JsonObject()
                    .Add("uid", ctx.current_key(), runtime_->key_type())
                    .Add("sum", sum_->Value().value_or(0)));
  }

 private:
  const bool inline_;
  keyflow::RuntimeContext* runtime_ = nullptr;
  keyflow::ValueState<int64_t>* sum_ = nullptr;
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition graph;
  graph.name = "chain-graph";
  graph.description = "Map and Filter chained before the KeyBy, then a sum per key";
  graph.reads_fields = true;
  graph.fields = [](const keyflow::JobParams&) {
    return std::vector<std::string>{"uid", "amount"};
  };
  keyflow::JobDefinition inline_job = graph;
  graph.graph = [](keyflow::StreamGraphBuilder& g, const keyflow::JobParams&) {
    g.Source()
        .Map("double",
             [](const Record& r) { return Double(r, r.field("uid").AsString().value_or("")); })
        .Filter("keep", Keep)
        .KeyBy("uid")
        .Process("sum", [] { return std::make_unique<Sum>(false); })
        .Sink();
  };
  inline_job.name = "chain-inline";
  inline_job.description = "the same Map and Filter inside the keyed function, then the sum";
  inline_job.create = [](const keyflow::JobParams&) { return std::make_unique<Sum>(true); };
  return {graph, inline_job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
