// KeyedFunctionTestHarness: unit-test a keyed function without a cluster (Flink's
// KeyedOneInputStreamOperatorTestHarness). It runs the function inside keyflow's real keyed
// operator — heap state, timers, watermarks, snapshots — on the calling thread, with a manual
// processing-time clock, so a test of a 12-hour timer moves the clock instead of waiting.
//
//   #include <keyflow/testing.h>
//
//   keyflow::KeyedFunctionTestHarness h(std::make_unique<MyFunction>());
//   ASSERT_TRUE(h.Open().ok());
//   ASSERT_TRUE(h.ProcessJson(R"({"uid":"u1","ts":1000,"amount":5})").ok());
//   h.ProcessWatermark(60'000);                      // fires event-time timers <= 60 s
//   h.SetProcessingTime(43'200'000);                 // fires processing-time timers
//   EXPECT_EQ(h.ExtractOutput(), std::vector<std::string>{R"({"uid":"u1","sum":5})"});
//
// Or the function of a job definition, with the job's key and time fields and its parameters
// resolved as `keyflow run` would: KeyedFunctionTestHarness::ForJob(job, {{"gap", "10s"}}).
//
// A failing function never throws out of the harness: Open and ProcessJson/ProcessElement return
// the failure (an exception becomes a Status naming the call), and failure() keeps the first one,
// also one raised in a timer or in EndInput. Snapshot() and Restore() round-trip the state and
// timers as a checkpoint would (also into a harness with another parallelism: rescaling).
//
// Installed with the SDK: link keyflow::testing (find_package(keyflow)) into a test executable.
// Only SDK headers are included here; the runtime is behind Impl.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/key.h"
#include "common/record.h"
#include "common/status.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace keyflow {

// KeyedFunctionTestHarness::Options.
struct KeyedFunctionTestHarnessOptions {
  // How ProcessJson reads a line: the key from `key_field` (of `key_type`), the event time
  // (milliseconds) from `timestamp_field`; every field is readable with Record::field().
  std::string key_field = "uid";
  KeyType key_type = KeyType::kString;
  std::string timestamp_field = "ts";
  // The subtask the function runs as: it gets the key groups of subtask `subtask` of
  // `parallelism` (a key of another subtask is refused).
  int32_t max_parallelism = 128;
  int32_t parallelism = 1;
  int32_t subtask = 0;
  // The job's parameters (RuntimeContext::params()).
  std::map<std::string, std::string> params;
  int64_t processing_time = 0;  // the initial manual processing time (ms)
  std::string job_name = "test-job";
};

class KeyedFunctionTestHarness {
 public:
  using Options = KeyedFunctionTestHarnessOptions;

  explicit KeyedFunctionTestHarness(std::unique_ptr<KeyedFunction> function);
  KeyedFunctionTestHarness(std::unique_ptr<KeyedFunction> function, Options options);
  // The function `job.create` makes from `params` (validated and defaulted as `keyflow run`
  // does: InvalidArgument naming a wrong one), with the job's key field, key type and time field.
  // For a graph job (JobDefinition::graph): the function of its keyed stage (its Process), keyed
  // by its KeyBy's field and type — the Map/Filter/FlatMap operators around it are plain
  // functions, tested directly. `options` gives the rest (its key and time fields and params are
  // replaced).
  static Result<std::unique_ptr<KeyedFunctionTestHarness>> ForJob(
      const JobDefinition& job, const std::map<std::string, std::string>& params = {},
      Options options = {});

  KeyedFunctionTestHarness(KeyedFunctionTestHarness&&) noexcept;
  KeyedFunctionTestHarness& operator=(KeyedFunctionTestHarness&&) noexcept;
  ~KeyedFunctionTestHarness();  // closes the function if the test did not

  // The function's Open (state registration).
  Status Open();
  // Restores snapshots taken with Snapshot() (of one or several harnesses, e.g. of the subtasks
  // of another parallelism): the key groups of this harness's subtask. After Open, before the
  // first element.
  Status Restore(const std::vector<std::string>& snapshots);

  // One record of a JSON object line, read as the job's sources read it (Options).
  Status ProcessJson(std::string_view json_line);
  // One record with only a key and an event time (no fields).
  Status ProcessElement(std::string_view key, int64_t timestamp);
  // A record built by the test. Its key group is computed from its key.
  Status ProcessElement(Record record);
  // Advances the event-time clock: fires the event-time timers at or before `watermark`.
  void ProcessWatermark(int64_t watermark);
  // Moves the manual processing time and fires the processing-time timers due by then.
  void SetProcessingTime(int64_t time);
  // The end of a bounded input: the final watermark (every event-time timer fires), then the
  // function's EndInput.
  void EndInput();
  // The function's Close.
  Status Close();
  // The function's first failure; OK while none.
  Status failure() const;

  // The keyed state and timers of this subtask, as a checkpoint stores them.
  Result<std::string> Snapshot() const;

  // What the function emitted since the last call (and forgets it): the lines, or the records
  // with the timestamps the runtime gave them.
  std::vector<std::string> ExtractOutput();
  std::vector<OutputRecord> ExtractOutputRecords();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace keyflow
