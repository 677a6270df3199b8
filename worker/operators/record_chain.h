// RecordChain: stateless operators of a graph job run one after the other on one task thread
// (Map, Filter, FlatMap; Flink's operator chaining), without serialisation between them: those a
// source task runs between its reader and the KeyBy — every record that comes out of the last
// one is then keyed by the KeyBy's field, its key and key group set, before the task routes it —
// and those between the keyed stage and the sink (worker/sinks/chained_sink_writer.h), whose
// output is not keyed (Options::key_field empty). In a graph without a KeyBy the source task's
// chain forwards instead (Options::forward_key_group): every record it emits goes to the keyed
// task of the same subtask index, so it gets that task's first key group and an empty key.
//
// Semantics (as Flink's chained operators):
//   - an output record keeps the timestamp of the record it came from (a Map or FlatMap cannot
//     move a record in event time: watermarks were generated at the source);
//   - an output record of a Map or FlatMap carries the fields the function gave it; a `payload`
//     line of the input is dropped when its fields changed (raw_json() renders the fields);
//   - a function that throws fails the task, the message naming the operator and the call;
//   - a record whose key field is missing or of the wrong type is a bad record: `on_bad_key`
//     decides (skip and count, or fail, per --on-bad-record).
//
// Threading: one task thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/job_library/user_function_guard.h"
#include "common/key_group_assignment.h"
#include "common/record.h"
#include "common/status.h"
#include "worker/api/stream_graph.h"

namespace keyflow {

// The key of `record` from its top-level field `field`, with the parser's rules: a string key
// is a JSON string (valid UTF-8); an int/long key a JSON integer in range or a string holding
// exactly such a decimal integer. InvalidArgument naming the field otherwise.
Result<Key> KeyFromField(const Record& record, std::string_view field, KeyType type);

class RecordChain {
 public:
  struct Operator {
    OperatorKind kind = OperatorKind::kMap;  // kMap, kFilter or kFlatMap
    std::string uid;
    OperatorFunctions functions;
  };
  struct Options {
    std::string job_name;   // for messages
    std::string library;    // the job library's file name, for messages
    std::string key_field;  // empty: what the chain emits is not keyed
    KeyType key_type = KeyType::kString;
    // With key_field empty: the key group every emitted record gets (forwarded, not keyed).
    std::optional<KeyGroupId> forward_key_group;
    int32_t max_parallelism = 0;
    // Decides what a record without a valid key does: OK skips it (count it), an error fails
    // the task.
    std::function<Status(const Status& why)> on_bad_key;
  };

  // `keep_alive`: what the functions' code lives in (the job library), released after them.
  RecordChain(std::vector<Operator> operators, Options options,
              std::shared_ptr<const void> keep_alive);
  ~RecordChain();
  RecordChain(const RecordChain&) = delete;
  RecordChain& operator=(const RecordChain&) = delete;

  // Runs `in` through the operators; `emit` gets each (keyed) output record, in order. The first
  // error (of a function, of `emit`, of on_bad_key) is returned.
  Status Process(const Record& in, const std::function<Status(const Record&)>& emit);

  size_t size() const { return steps_.size(); }

 private:
  struct Step {
    Operator op;
    UserFunctionGuard guard;
    std::vector<Record> collected;  // FlatMap's outputs, reused
  };
  Status Push(size_t step, Record& record, const std::function<Status(const Record&)>& emit);
  Status EmitKeyed(Record& record, const std::function<Status(const Record&)>& emit);

  std::shared_ptr<const void> keep_alive_;  // first: destroyed after the functions
  std::vector<Step> steps_;
  Options options_;
  KeyGroupAssigner assigner_;
  Record scratch_;  // the input record, copied once so the chain may key it in place
};

}  // namespace keyflow
