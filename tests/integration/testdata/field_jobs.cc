// A job library whose function reads record fields, for tests/integration/record_fields_test.cc
// (issue 10, requirement 1: fields parsed once at the source reach the function through the
// shuffle). Built with keyflow_add_job as libfield-jobs.so.
//
//   fields-echo   per record: {"key":K,"ts":T,"amount":<GetInt64("amount")> or the error,
//                 "city":<address.city> or null,"tags":<size of tags>,"missing_is_null":<bool>,
//                 "raw":<raw_json()>}
//   sum-amount    reads the numeric field "amount" of every record; at the end of input one
//                 line per subtask {"records":N,"sum":S} (a job reading one numeric field, for
//                 measuring against count-window; not fault tolerant: no state)
//   projected-echo  declares the fields it reads (JobDefinition::fields, from --param
//                 fields=a,b; default "amount,address"): per record {"key":K,"ts":T,
//                 "raw":<raw_json()>}, which then holds only those fields
#include <memory>
#include <string>
#include <vector>

#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::FieldValue;
using keyflow::JobDefinition;
using keyflow::JobParams;
using keyflow::KeyedFunction;
using keyflow::OutputRecord;
using keyflow::Record;

class FieldsEcho final : public KeyedFunction {
 public:
  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
    keyflow::JsonObject line;
    line.Add("key", ctx.current_key(), keyflow::KeyType::kString);
    line.Add("ts", r.timestamp.millis());
    keyflow::Result<int64_t> amount = r.GetInt64("amount");
    if (amount.ok()) {
      line.Add("amount", *amount);
    } else {
      line.Add("amount_error", amount.status().message());
    }
    FieldValue city = r.field("address")["city"];
    if (auto text = city.AsString()) line.Add("city", *text);
    line.Add("tags", static_cast<int64_t>(r.field("tags").size()));
    line.Add("missing_is_null", r.field("nothing").is_null());
    line.Add("raw", r.raw_json());
    out.Collect(std::move(line));
  }
};

class SumAmount final : public KeyedFunction {
 public:
  void ProcessElement(const Record& r, Context&, Collector<OutputRecord>&) override {
    ++records_;
    if (auto amount = r.field("amount").AsInt64()) sum_ += *amount;
  }
  void EndInput(Context&, Collector<OutputRecord>& out) override {
    out.Collect(keyflow::JsonObject().Add("records", records_).Add("sum", sum_));
  }

 private:
  int64_t records_ = 0;
  int64_t sum_ = 0;
};

class RawEcho final : public KeyedFunction {
 public:
  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
    out.Collect(keyflow::JsonObject()
                    .Add("key", ctx.current_key(), keyflow::KeyType::kString)
                    .Add("ts", r.timestamp.millis())
                    .Add("raw", r.raw_json()));
  }
};

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1) {
    out.push_back(text.substr(start, comma - start));
  }
  out.push_back(text.substr(start));
  return out;
}

std::vector<JobDefinition> Jobs() {
  JobDefinition echo;
  echo.name = "fields-echo";
  echo.description = "per record, the fields it read and the raw JSON";
  echo.reads_fields = true;
  echo.create = [](const JobParams&) -> std::unique_ptr<KeyedFunction> {
    return std::make_unique<FieldsEcho>();
  };
  JobDefinition sum;
  sum.name = "sum-amount";
  sum.description = "reads the field amount of every record; one sum per subtask at the end";
  sum.reads_fields = true;
  sum.create = [](const JobParams&) -> std::unique_ptr<KeyedFunction> {
    return std::make_unique<SumAmount>();
  };
  JobDefinition projected;
  projected.name = "projected-echo";
  projected.description = "per record, its raw JSON, holding only the declared fields";
  projected.params = {{"fields", keyflow::ParamType::kString, "amount,address",
                       "the fields the job declares, comma-separated"}};
  projected.reads_fields = true;
  projected.fields = [](const JobParams& p) { return SplitCommas(p.GetString("fields")); };
  projected.create = [](const JobParams&) -> std::unique_ptr<KeyedFunction> {
    return std::make_unique<RawEcho>();
  };
  return {echo, sum, projected};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
