// ChainedSinkWriter: the Map/Filter/FlatMap operators of a graph job between its keyed stage and
// its sink, in front of the sink (Flink chains them into the keyed task). Each record the process
// function emits — a JSON object line — is parsed into a Record's fields, run through the
// operators (worker/operators/record_chain.h) on the keyed task's thread, and each record that
// comes out is written to the sink as compact JSON (Record::raw_json()) with the emitted
// record's timestamp, or none if it had none. Checkpoints and commits are the sink's: the
// operators hold no state.
//
// A line that is not a JSON object (a function that emits raw text) cannot be read by the
// operators: `on_bad_line` decides (skip it and count it, or fail the task, per --on-bad-record).
//
// Threading: the keyed task's thread, like every SinkWriter.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "worker/operators/record_chain.h"
#include "worker/sinks/sink_writer.h"
#include "worker/sources/json_record_parser.h"

namespace keyflow {

class ChainedSinkWriter final : public SinkWriter {
 public:
  ChainedSinkWriter(std::unique_ptr<RecordChain> chain, std::unique_ptr<SinkWriter> sink,
                    std::function<Status(const Status& why)> on_bad_line);

  Status Write(const OutputRecord& record) override;
  Status Flush() override { return sink_->Flush(); }
  Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId id) override {
    return sink_->PrepareCommit(id);
  }
  std::vector<std::string> PendingCommittables() const override {
    return sink_->PendingCommittables();
  }
  Status NotifyCheckpointComplete(CheckpointId id) override {
    return sink_->NotifyCheckpointComplete(id);
  }
  Status FinishAndCommit() override { return sink_->FinishAndCommit(); }

 private:
  std::unique_ptr<RecordChain> chain_;
  std::unique_ptr<SinkWriter> sink_;
  std::function<Status(const Status&)> on_bad_line_;
  JsonRecordParser parser_;
  Record parsed_;
};

}  // namespace keyflow
