// Two keyed inputs with shared state and timers (Flink's KeyedCoProcessFunction): the function of
// `a.Connect(b).KeyBy(field_a, field_b).Process(...)` (worker/api/stream_graph.h). Records of both
// inputs with the same key see the same state; ProcessElement1/2 and OnTimer never run
// concurrently (one task thread), and the operator's watermark is the minimum of its two inputs'.
#pragma once

#include "common/status.h"
#include "common/types.h"
#include "worker/api/keyed_process_function.h"

namespace keyflow {

template <typename IN1, typename IN2, typename OUT>
class KeyedCoProcessFunction {
 public:
  virtual ~KeyedCoProcessFunction() = default;
  // Registers state; runs once, before any element and before a restore.
  virtual Status Open(RuntimeContext& runtime) {
    (void)runtime;
    return Status::Ok();
  }
  // An element of the first / second input, with its key current.
  virtual void ProcessElement1(const IN1& value, Context& ctx, Collector<OUT>& out) = 0;
  virtual void ProcessElement2(const IN2& value, Context& ctx, Collector<OUT>& out) = 0;
  virtual void OnTimer(Timestamp timestamp, OnTimerContext& ctx, Collector<OUT>& out) {
    (void)timestamp, (void)ctx, (void)out;
  }
  // The end of both inputs, after the final watermark fired every event-time timer.
  virtual void EndInput(Context& ctx, Collector<OUT>& out) { (void)ctx, (void)out; }
  virtual void Close() {}
};

struct Record;
struct OutputRecord;
using KeyedCoFunction = KeyedCoProcessFunction<Record, Record, OutputRecord>;

}  // namespace keyflow
