// The user API of keyed jobs, in the spirit of Flink's KeyedProcessFunction.
//
//   class MyFunction : public KeyedFunction {     // KeyedProcessFunction<Record, OutputRecord>
//     Status Open(RuntimeContext& ctx) override {           // register state
//       KF_ASSIGN_OR_RETURN(count_, ctx.GetState(ValueStateDescriptor<int64_t>("count", 0)));
//       return Status::Ok();
//     }
//     void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
//       count_->Update(*count_->Value() + 1);                // state of ctx.current_key()
//       ctx.timer_service().RegisterEventTimeTimer(r.timestamp + Duration::Seconds(10));
//     }
//     void OnTimer(Timestamp t, OnTimerContext& ctx, Collector<OutputRecord>& out) override {
//       out.Collect(JsonObject().Add("count", *count_->Value()));   // timestamp: t
//     }
//   };
//
// The runtime sets the current key before every ProcessElement and OnTimer call; state handles
// and timers act on it, so user code never passes a key. ProcessElement, OnTimer and EndInput
// never run concurrently (one task thread). What a function emits: worker/api/output.h.
// A call that throws (or Open's error) fails the subtask with a message naming the job, the
// call and the error; the job then restarts or fails per its restart strategy.
#pragma once

#include <map>
#include <string>

#include "common/key.h"
#include "common/metrics.h"
#include "common/status.h"
#include "common/types.h"
#include "state/keyed_state_backend.h"
#include "state/namespace.h"

namespace keyflow {

template <typename OUT>
class Collector {
 public:
  virtual ~Collector() = default;
  virtual void Collect(OUT value) = 0;
};

enum class TimeDomain { kEventTime, kProcessingTime };

// Timers of the current key (Flink's TimerService). Window-style functions scope a timer with a
// namespace (e.g. the window start); plain functions use the default, kVoidNamespace.
// Implemented by the runtime (the keyed operator, over its InternalTimerService): a job library
// calls timers through this interface only, so it links no timer code.
class TimerService {
 public:
  virtual ~TimerService() = default;
  virtual Timestamp CurrentProcessingTime() const = 0;
  virtual Timestamp CurrentWatermark() const = 0;
  void RegisterProcessingTimeTimer(Timestamp t, Namespace ns = kVoidNamespace) {
    RegisterTimer(TimeDomain::kProcessingTime, t, ns);
  }
  void RegisterEventTimeTimer(Timestamp t, Namespace ns = kVoidNamespace) {
    RegisterTimer(TimeDomain::kEventTime, t, ns);
  }
  void DeleteProcessingTimeTimer(Timestamp t, Namespace ns = kVoidNamespace) {
    DeleteTimer(TimeDomain::kProcessingTime, t, ns);
  }
  void DeleteEventTimeTimer(Timestamp t, Namespace ns = kVoidNamespace) {
    DeleteTimer(TimeDomain::kEventTime, t, ns);
  }

 protected:
  // Registering an existing timer and deleting a missing one are no-ops.
  virtual void RegisterTimer(TimeDomain domain, Timestamp t, Namespace ns) = 0;
  virtual void DeleteTimer(TimeDomain domain, Timestamp t, Namespace ns) = 0;
};

// Per-subtask information and state registration (Flink's RuntimeContext).
class RuntimeContext {
 public:
  RuntimeContext(SubtaskIndex subtask, int32_t parallelism, KeyType key_type,
                 std::map<std::string, std::string> params, KeyedStateBackend* backend)
      : subtask_(subtask),
        parallelism_(parallelism),
        key_type_(key_type),
        params_(std::move(params)),
        backend_(backend) {}

  SubtaskIndex subtask_index() const { return subtask_; }
  int32_t parallelism() const { return parallelism_; }
  int32_t max_parallelism() const { return backend_->key_context().max_parallelism(); }
  KeyType key_type() const { return key_type_; }
  // Job parameters (--param), resolved with defaults (common/protocol/job_catalog.h).
  const std::map<std::string, std::string>& params() const { return params_; }

  template <typename T>
  Result<ValueState<T>*> GetState(const ValueStateDescriptor<T>& d) {
    return backend_->GetState(d);
  }
  template <typename T>
  Result<ListState<T>*> GetListState(const ListStateDescriptor<T>& d) {
    return backend_->GetListState(d);
  }
  template <typename UK, typename UV>
  Result<MapState<UK, UV>*> GetMapState(const MapStateDescriptor<UK, UV>& d) {
    return backend_->GetMapState(d);
  }
  template <typename T>
  Result<ReducingState<T>*> GetReducingState(const ReducingStateDescriptor<T>& d) {
    return backend_->GetReducingState(d);
  }
  template <typename IN, typename ACC, typename OUT>
  Result<AggregatingState<IN, OUT>*> GetAggregatingState(
      const AggregatingStateDescriptor<IN, ACC, OUT>& d) {
    return backend_->GetAggregatingState(d);
  }
  // For end-of-input hooks: calls fn for every key with state `state_name` in `ns`, with the
  // key context set to it (key groups ascending, then key bytes).
  Status ApplyToAllKeys(std::string_view state_name, Namespace ns,
                        absl::FunctionRef<Status(const Key&)> fn) {
    return backend_->ApplyToAllKeys(state_name, ns, fn);
  }

  // Records the function counted as late (behind the watermark); shown by `keyflow status`.
  Counter& late_records() { return late_records_; }
  const Counter& late_records() const { return late_records_; }

 private:
  SubtaskIndex subtask_;
  int32_t parallelism_;
  KeyType key_type_;
  std::map<std::string, std::string> params_;
  KeyedStateBackend* backend_;
  Counter late_records_;
};

// What ProcessElement, OnTimer and EndInput see besides the element.
class Context {
 public:
  Context(const KeyContext* keys, TimerService* timers) : keys_(keys), timers_(timers) {}
  // The element's event timestamp (ProcessElement) or the timer's time (OnTimer).
  Timestamp timestamp() const { return timestamp_; }
  TimerService& timer_service() { return *timers_; }
  const Key& current_key() const { return keys_->current_key(); }
  KeyGroupId current_key_group() const { return keys_->current_key_group(); }
  // OnTimer only: the firing timer's domain and namespace.
  TimeDomain time_domain() const { return domain_; }
  Namespace timer_namespace() const { return ns_; }

  // Runtime side: set before each call.
  void Set(Timestamp ts, TimeDomain domain = TimeDomain::kEventTime,
           Namespace ns = kVoidNamespace) {
    timestamp_ = ts;
    domain_ = domain;
    ns_ = ns;
  }

 private:
  const KeyContext* keys_;
  TimerService* timers_;
  Timestamp timestamp_;
  TimeDomain domain_ = TimeDomain::kEventTime;
  Namespace ns_ = kVoidNamespace;
};
using OnTimerContext = Context;

template <typename IN, typename OUT>
class KeyedProcessFunction {
 public:
  virtual ~KeyedProcessFunction() = default;
  // Registers state; runs once, before any element and before a restore.
  virtual Status Open(RuntimeContext& runtime) {
    (void)runtime;
    return Status::Ok();
  }
  virtual void ProcessElement(const IN& value, Context& ctx, Collector<OUT>& out) = 0;
  virtual void OnTimer(Timestamp timestamp, OnTimerContext& ctx, Collector<OUT>& out) {
    (void)timestamp, (void)ctx, (void)out;
  }
  // End of input (Flink's BoundedOneInput.endInput): after the final watermark (kMaxWatermark)
  // fired every event-time timer. Processing-time timers do not fire after this. No current key
  // is set; use RuntimeContext::ApplyToAllKeys to visit keys.
  virtual void EndInput(Context& ctx, Collector<OUT>& out) { (void)ctx, (void)out; }
  virtual void Close() {}
};

}  // namespace keyflow
