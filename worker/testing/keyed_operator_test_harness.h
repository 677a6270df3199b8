// KeyedOperatorTestHarness: drives one KeyedProcessOperator on the calling thread with records,
// watermarks and a manual processing-time clock, and snapshots/restores it (Flink's
// KeyedOneInputStreamOperatorTestHarness). A 12-hour timer is tested by moving the clock.
//
//   KeyedOperatorTestHarness h(MakeCountWindowFunction(params), {.parallelism = 1});
//   ASSERT_TRUE(h.Open().ok());
//   ASSERT_TRUE(h.ProcessElement("uid-1", 1000).ok());
//   h.SetProcessingTime(43'200'000);     // fires the processing-time timer
//   EXPECT_EQ(h.ExtractOutput(), ...);                  // the lines
//   EXPECT_EQ(h.ExtractOutputRecords(), ...);           // lines with their output timestamps
//
// A failing function (Open's error, an exception) does not throw out of the harness: Open and
// ProcessElement return the failure, and failure() holds the first one (also one from a timer
// or EndInput).
//
// Test support (library keyflow::testing): used by unit tests and fuzzers, never linked into the
// binaries.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/processing_time_service.h"
#include "worker/operators/keyed_process_operator.h"

namespace keyflow {

class KeyedOperatorTestHarness {
 public:
  struct Options {
    KeyType key_type = KeyType::kString;
    int32_t max_parallelism = 128;
    int32_t parallelism = 1;
    int32_t subtask = 0;
    std::optional<KeyGroupRange> key_groups;  // default: the subtask's Flink range
    std::map<std::string, std::string> params;
    int64_t processing_time = 0;        // initial manual processing time
    std::string job_name = "test-job";  // for failure messages
    std::string library_name;           // for failure messages (empty: none)
  };

  KeyedOperatorTestHarness(std::unique_ptr<RecordFunction> function, Options options);

  Status Open();
  // Restores the part of each snapshot that falls into this harness's range (call after Open,
  // before any element). Snapshots are the bytes Snapshot() returned.
  Status Restore(const std::vector<std::string>& snapshots);

  // Builds the record (key parsed for the key type, key group computed) and processes it.
  Status ProcessElement(std::string_view key, int64_t timestamp);
  Status ProcessElement(const Record& record);
  void ProcessWatermark(int64_t watermark);
  // Moves the manual processing time and runs the due processing-time timers.
  void SetProcessingTime(int64_t time);
  void EndInput();
  // The function's Close (the destructor calls it otherwise).
  Status Close() { return operator_->Close(); }
  // The function's first failure (OK while none).
  const Status& failure() const { return operator_->failure(); }

  Result<std::string> Snapshot() const;

  // Output lines emitted so far (and forgets them).
  std::vector<std::string> ExtractOutput();
  // Output records emitted so far, with the timestamps the runtime gave them (and forgets them).
  std::vector<OutputRecord> ExtractOutputRecords();
  KeyedProcessOperator& op() { return *operator_; }
  ManualProcessingTimeService& processing_time() { return processing_time_; }
  const KeyGroupRange& key_groups() const { return operator_->config().key_groups; }

 private:
  struct VectorCollector final : Collector<OutputRecord> {
    void Collect(OutputRecord v) override { records.push_back(std::move(v)); }
    std::vector<OutputRecord> records;
  };

  Options options_;
  ManualProcessingTimeService processing_time_;
  VectorCollector output_;
  std::unique_ptr<KeyedProcessOperator> operator_;
  bool started_ = false;
};

}  // namespace keyflow
