// Graph jobs (JobDefinition::graph) for tests/integration/graph_jobs_test.cc. Built with
// keyflow_add_job as libgraph-jobs.so.
//
//   words     FlatMap "split" (one record {"word":W} per space-separated word of "text") ->
//             Filter "not-the" (drops "the") =KeyBy(word)=> Process "count" ({"word":W,
//             "count":N} per word at the end of input) -> Filter "frequent" (N >= 2) -> Map
//             "format" -> sink: {"w":W,"n":N,"bytes":<W's UTF-8 bytes>}
//   rekey     Map "pick" ({"k":<the input's "k">}, the field as it is, or none) =KeyBy(k, long)=>
//             Process "count": per key {"k":K,"count":N} at the end; a record without an
//             integer "k" is a bad record (skipped and counted, or the job fails)
//   throws    Map "explode" throws std::runtime_error("boom: <text>") on a record whose "text" is
//             "boom", otherwise as words without the filter
//   unstable  a graph whose operator uid holds the process id: every process builds another one
//   lengths   no KeyBy: FlatMap "split" -> Filter "not-the" -> Map "length" ({"w":W,"len":<W's
//             UTF-8 bytes>}) -> sink, one output record per word
//   pass      no KeyBy, no operator: source -> sink, every record as it came
//   pass-no-fields  pass with reads_fields = false: refused at run
//   shape     an invalid or not yet runnable graph, per --param shape=...
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/field_tape_writer.h"
#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"
#include "worker/api/stream_graph.h"

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::JobDefinition;
using keyflow::JobParams;
using keyflow::KeyedFunction;
using keyflow::OutputRecord;
using keyflow::Record;
using keyflow::StreamGraphBuilder;

// Fires at the final watermark, which ends every input.
constexpr keyflow::Timestamp kAtTheEnd(4'000'000'000'000);

Record OneField(std::string_view name, std::string_view text) {
  Record out;
  keyflow::FieldTapeWriter w(&out.fields);
  w.BeginObject();
  w.Name(name);
  w.String(text);
  w.EndObject();
  return out;
}

void Split(const Record& in, Collector<Record>& out) {
  std::string_view text = in.field("text").AsString().value_or("");
  while (!text.empty()) {
    const size_t space = text.find(' ');
    std::string_view word = text.substr(0, space);
    if (!word.empty()) out.Collect(OneField("word", word));
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  }
}

// Per key, how many records; emitted at the end of input as {<field>:K,"count":N}.
class CountPerKey final : public KeyedFunction {
 public:
  explicit CountPerKey(std::string field) : field_(std::move(field)) {}
  keyflow::Status Open(keyflow::RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(count_,
                        runtime.GetState(keyflow::ValueStateDescriptor<int64_t>("count", 0)));
    return keyflow::Status::Ok();
  }
  void ProcessElement(const Record&, Context& ctx, Collector<OutputRecord>&) override {
    const int64_t n = *count_->Value() + 1;
    if (n == 1) ctx.timer_service().RegisterEventTimeTimer(kAtTheEnd);
    count_->Update(n);
  }
  void OnTimer(keyflow::Timestamp, keyflow::OnTimerContext& ctx,
               Collector<OutputRecord>& out) override {
    out.Collect(keyflow::JsonObject()
                    .Add(field_, ctx.current_key(), runtime_->key_type())
                    .Add("count", *count_->Value()));
  }

 private:
  const std::string field_;
  keyflow::RuntimeContext* runtime_ = nullptr;
  keyflow::ValueState<int64_t>* count_ = nullptr;
};

keyflow::KeyedFunctionFactory Counter(std::string field) {
  return [field] { return std::make_unique<CountPerKey>(field); };
}

JobDefinition Job(std::string name, std::function<void(StreamGraphBuilder&, const JobParams&)> g) {
  JobDefinition job;
  job.name = std::move(name);
  job.description = "a graph job of the graph tests";
  job.reads_fields = true;
  job.graph = std::move(g);
  return job;
}

std::vector<JobDefinition> Jobs() {
  std::vector<JobDefinition> jobs;
  jobs.push_back(Job("words", [](StreamGraphBuilder& g, const JobParams&) {
    g.Source()
        .FlatMap("split", Split)
        .Filter("not-the",
                [](const Record& r) { return r.field("word").AsString().value_or("") != "the"; })
        .KeyBy("word")
        .Process("count", Counter("word"))
        .Filter("frequent", [](const Record& r) { return r.field("count").AsInt64() >= 2; })
        .Map("format",
             [](const Record& in) {
               const std::string_view word = in.field("word").AsString().value_or("");
               Record out;
               keyflow::FieldTapeWriter w(&out.fields);
               w.BeginObject();
               w.Name("w");
               w.String(word);
               w.Name("n");
               w.Int(in.field("count").AsInt64().value_or(-1));
               w.Name("bytes");
               w.Int(static_cast<int64_t>(word.size()));
               w.EndObject();
               return out;
             })
        .Sink();
  }));
  jobs.push_back(Job("rekey", [](StreamGraphBuilder& g, const JobParams&) {
    g.Source()
        .Map("pick",
             [](const Record& in) {
               Record out;
               keyflow::FieldTapeWriter w(&out.fields);
               w.BeginObject();
               if (auto k = in.field("k").AsInt64()) {
                 w.Name("k");
                 w.Int(*k);
               } else if (auto text = in.field("k").AsString()) {
                 w.Name("k");
                 w.String(*text);
               }
               w.EndObject();
               return out;
             })
        .KeyBy("k", keyflow::KeyType::kLong)
        .Process("count", Counter("k"))
        .Sink();
  }));
  jobs.push_back(Job("throws", [](StreamGraphBuilder& g, const JobParams&) {
    g.Source()
        .Map("explode",
             [](const Record& in) {
               std::string_view text = in.field("text").AsString().value_or("");
               if (text == "boom") throw std::runtime_error("boom: " + std::string(text));
               return OneField("word", text);
             })
        .KeyBy("word")
        .Process("count", Counter("word"))
        .Sink();
  }));
  jobs.push_back(Job("unstable", [](StreamGraphBuilder& g, const JobParams&) {
    g.Source()
        .Map("pid-" + std::to_string(getpid()), [](const Record& r) { return r; })
        .KeyBy("uid")
        .Process("count", Counter("uid"))
        .Sink();
  }));
  jobs.push_back(Job("lengths", [](StreamGraphBuilder& g, const JobParams&) {
    g.Source()
        .FlatMap("split", Split)
        .Filter("not-the",
                [](const Record& r) { return r.field("word").AsString().value_or("") != "the"; })
        .Map("length",
             [](const Record& in) {
               const std::string_view word = in.field("word").AsString().value_or("");
               Record out;
               keyflow::FieldTapeWriter w(&out.fields);
               w.BeginObject();
               w.Name("w");
               w.String(word);
               w.Name("len");
               w.Int(static_cast<int64_t>(word.size()));
               w.EndObject();
               return out;
             })
        .Sink();
  }));
  jobs.push_back(Job("pass", [](StreamGraphBuilder& g, const JobParams&) { g.Source().Sink(); }));
  JobDefinition no_fields =
      Job("pass-no-fields", [](StreamGraphBuilder& g, const JobParams&) { g.Source().Sink(); });
  no_fields.reads_fields = false;
  jobs.push_back(std::move(no_fields));
  JobDefinition shape = Job("shape", [](StreamGraphBuilder& g, const JobParams& p) {
    const std::string& s = p.GetString("shape");
    keyflow::DataStream in = g.Source();
    if (s == "two-stage") {
      in.KeyBy("uid")
          .Process("first", Counter("uid"))
          .KeyBy("count")
          .Process("second", Counter("count"))
          .Sink();
    } else if (s == "dangling") {
      in.Map("lost", [](const Record& r) { return r; });
      in.KeyBy("uid").Process("count", Counter("uid")).Sink();
    } else if (s == "unread-side-output") {
      in.KeyBy("uid").Process("count", Counter("uid"), {keyflow::OutputTag{"late"}}).Sink();
    } else if (s == "two-sinks") {
      keyflow::DataStream counts = in.KeyBy("uid").Process("count", Counter("uid"));
      counts.Sink();
      counts.Sink("copy");
    } else if (s == "union") {
      in.Map("a", [](const Record& r) { return r; })
          .Union(in.Map("b", [](const Record& r) { return r; }))
          .KeyBy("uid")
          .Process("count", Counter("uid"))
          .Sink();
    } else {
      throw std::invalid_argument("no such shape: " + s);
    }
  });
  shape.params = {
      {"shape",
       keyflow::ParamType::kChoice,
       "two-stage",
       "which graph",
       {"two-stage", "dangling", "unread-side-output", "two-sinks", "union", "throws"}}};
  jobs.push_back(std::move(shape));
  return jobs;
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
