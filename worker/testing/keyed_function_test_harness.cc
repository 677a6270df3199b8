#include "worker/testing/keyed_function_test_harness.h"

#include <utility>

#include "common/job_library/keyed_pipeline.h"
#include "common/key_group_assignment.h"
#include "worker/api/stream_graph.h"
#include "worker/sources/json_record_parser.h"
#include "worker/testing/keyed_operator_test_harness.h"

namespace keyflow {

struct KeyedFunctionTestHarness::Impl {
  Impl(std::unique_ptr<KeyedFunction> function, Options o)
      : options(std::move(o)),
        parser(JsonRecordFormat{.key_field = options.key_field,
                                .timestamp_field = options.timestamp_field,
                                .key_type = options.key_type,
                                .keep_fields = true},
               options.max_parallelism),
        harness(std::move(function), {.key_type = options.key_type,
                                      .max_parallelism = options.max_parallelism,
                                      .parallelism = options.parallelism,
                                      .subtask = options.subtask,
                                      .params = options.params,
                                      .processing_time = options.processing_time,
                                      .job_name = options.job_name}) {}

  // Refuses a key of another subtask: the operator only holds its own key groups.
  Status CheckOwned(const Record& r) const {
    if (harness.key_groups().contains(r.key_group)) return Status::Ok();
    return InvalidArgument("key '" + KeyToString(r.key, options.key_type) + "' is in key group " +
                           std::to_string(r.key_group.value()) + ", not among the key groups " +
                           harness.key_groups().ToString() + " of subtask " +
                           std::to_string(options.subtask) + " of " +
                           std::to_string(options.parallelism));
  }

  Options options;
  JsonRecordParser parser;
  KeyedOperatorTestHarness harness;
  bool closed = false;
};

KeyedFunctionTestHarness::KeyedFunctionTestHarness(std::unique_ptr<KeyedFunction> function)
    : KeyedFunctionTestHarness(std::move(function), Options()) {}

KeyedFunctionTestHarness::KeyedFunctionTestHarness(std::unique_ptr<KeyedFunction> function,
                                                   Options options)
    : impl_(std::make_unique<Impl>(std::move(function), std::move(options))) {}

Result<std::unique_ptr<KeyedFunctionTestHarness>> KeyedFunctionTestHarness::ForJob(
    const JobDefinition& job, const std::map<std::string, std::string>& params, Options options) {
  if (!job.create && !job.graph) {
    return InvalidArgument("job '" + job.name + "' has neither a create nor a graph function");
  }
  KF_ASSIGN_OR_RETURN(JobParams resolved, ResolveJobParams(job, params));
  std::unique_ptr<KeyedFunction> function;
  options.key_field = job.key_field;
  options.key_type = job.key_type;
  if (job.graph) {
    // The keyed stage of the graph, keyed as its KeyBy says.
    StreamGraphBuilder g;
    StreamGraphOptions graph_options;
    if (job.reads_fields && job.fields) graph_options.declared_fields = job.fields(resolved);
    job.graph(g, resolved);
    Result<JobGraph> graph = g.Build(graph_options);
    if (!graph.ok()) {
      return InvalidArgument("job '" + job.name +
                             "' builds an invalid graph: " + graph.status().message());
    }
    Result<KeyedPipeline> pipeline = PlanKeyedPipeline(*graph);
    if (!pipeline.ok()) {
      return InvalidArgument("job '" + job.name + "': " + pipeline.status().message());
    }
    if (!pipeline->keyed) {
      return InvalidArgument("job '" + job.name +
                             "' has no KeyBy, so no keyed stage to test: call its Map, Filter and "
                             "FlatMap functions directly");
    }
    function = g.functions_of(pipeline->process).process();
    options.key_field = pipeline->key_by.key_field;
    options.key_type = pipeline->key_by.key_type;
  } else {
    function = job.create(resolved);
  }
  if (function == nullptr) {
    return InvalidArgument("job '" + job.name + "': create returned no function");
  }
  options.timestamp_field = job.timestamp_field;
  options.params = resolved.values();
  options.job_name = job.name;
  return std::make_unique<KeyedFunctionTestHarness>(std::move(function), std::move(options));
}

KeyedFunctionTestHarness::KeyedFunctionTestHarness(KeyedFunctionTestHarness&&) noexcept = default;
KeyedFunctionTestHarness& KeyedFunctionTestHarness::operator=(KeyedFunctionTestHarness&&) noexcept =
    default;
KeyedFunctionTestHarness::~KeyedFunctionTestHarness() {
  if (impl_ != nullptr && !impl_->closed) Close().IgnoreError();
}

Status KeyedFunctionTestHarness::Open() {
  return impl_->harness.Open();
}

Status KeyedFunctionTestHarness::Restore(const std::vector<std::string>& snapshots) {
  return impl_->harness.Restore(snapshots);
}

Status KeyedFunctionTestHarness::ProcessJson(std::string_view json_line) {
  Record record;
  KF_RETURN_IF_ERROR(impl_->parser.Parse(json_line, &record));
  KF_RETURN_IF_ERROR(impl_->CheckOwned(record));
  return impl_->harness.ProcessElement(record);
}

Status KeyedFunctionTestHarness::ProcessElement(std::string_view key, int64_t timestamp) {
  Record record;
  KF_ASSIGN_OR_RETURN(record.key, ParseKey(key, impl_->options.key_type));
  record.timestamp = Timestamp(timestamp);
  return ProcessElement(std::move(record));
}

Status KeyedFunctionTestHarness::ProcessElement(Record record) {
  KF_ASSIGN_OR_RETURN(record.key_group, AssignToKeyGroup(record.key, impl_->options.key_type,
                                                         impl_->options.max_parallelism));
  KF_RETURN_IF_ERROR(impl_->CheckOwned(record));
  return impl_->harness.ProcessElement(record);
}

void KeyedFunctionTestHarness::ProcessWatermark(int64_t watermark) {
  impl_->harness.ProcessWatermark(watermark);
}

void KeyedFunctionTestHarness::SetProcessingTime(int64_t time) {
  impl_->harness.SetProcessingTime(time);
}

void KeyedFunctionTestHarness::EndInput() {
  impl_->harness.EndInput();
}

Status KeyedFunctionTestHarness::Close() {
  impl_->closed = true;
  return impl_->harness.Close();
}

Status KeyedFunctionTestHarness::failure() const {
  return impl_->harness.failure();
}

Result<std::string> KeyedFunctionTestHarness::Snapshot() const {
  return impl_->harness.Snapshot();
}

std::vector<std::string> KeyedFunctionTestHarness::ExtractOutput() {
  return impl_->harness.ExtractOutput();
}

std::vector<OutputRecord> KeyedFunctionTestHarness::ExtractOutputRecords() {
  return impl_->harness.ExtractOutputRecords();
}

}  // namespace keyflow
