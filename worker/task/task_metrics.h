// TaskMetrics: the live numbers of one deployed subtask, updated by its task threads and read
// by the worker's control thread for heartbeats and status (relaxed atomics).
#pragma once

#include <atomic>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/protocol/control_messages.h"
#include "worker/task/latency_histogram.h"

namespace keyflow {

struct TaskMetrics {
  // Source subtask.
  Counter records_in;
  Counter bad_records;
  Gauge source_watermark{};
  Gauge backpressure_permille{};  // share of the last interval spent blocked on sending
  std::atomic<bool> source_finished{false};
  // Keyed subtask.
  Counter records_processed;
  Gauge records_out{};   // mirrored from the operator
  Gauge late_records{};  // mirrored from the operator
  Gauge current_watermark{};
  Gauge state_keys{};
  Gauge timers{};
  Gauge restore_bytes{};   // bytes of state files read on restore
  Gauge dropped_frames{};  // mirrored from the input gate
  // The keyed state backend ("heap" | "rocksdb", a string literal; set before the task runs)
  // and what its state occupies (KeyedStateBackend::ApproximateSize, refreshed with the gauges).
  std::atomic<const char*> state_backend{""};
  Gauge state_bytes_memory{};
  Gauge state_bytes_disk{};
  // Source arrival -> processed, from latency markers (worker/README.md, "Latency").
  LatencyHistogram latency;

  TaskMetrics() {
    source_watermark.Set(INT64_MIN);
    current_watermark.Set(INT64_MIN);
  }

  // `now` ends the latency quantiles' window (the clock the keyed task records with).
  SubtaskMetrics Snapshot(Timestamp now = SystemClock().Now()) const {
    SubtaskMetrics m;
    m.records_in = records_in.value();
    m.bad_records = bad_records.value();
    m.source_watermark = source_watermark.value();
    m.backpressure = static_cast<double>(backpressure_permille.value()) / 1000.0;
    m.source_finished = source_finished.load(std::memory_order_relaxed);
    m.records_processed = records_processed.value();
    m.records_out = records_out.value();
    m.late_records = late_records.value();
    m.current_watermark = current_watermark.value();
    m.state_keys = state_keys.value();
    m.timers = timers.value();
    m.restore_bytes = restore_bytes.value();
    m.dropped_frames = dropped_frames.value();
    m.state_backend = state_backend.load(std::memory_order_relaxed);
    m.state_bytes_memory = state_bytes_memory.value();
    m.state_bytes_disk = state_bytes_disk.value();
    m.latency = latency.Summarize(now);
    return m;
  }
};

}  // namespace keyflow
