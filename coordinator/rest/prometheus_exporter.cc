#include "coordinator/rest/prometheus_exporter.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/protocol/control_messages.h"

namespace keyflow {

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;
using Json = nlohmann::json;

// \ -> \\, newline -> \n, and with `quote` also " -> \" (label values; HELP text keeps quotes).
std::string Escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// Integral values print as integers (counters stay exact up to 2^53), others in the shortest
// form that reads back to the same double; NaN and infinities as Prometheus spells them.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  return fmt::format("{}", v);
}

// A number member of `j` (nullopt if absent, null or not a number).
std::optional<double> Number(const Json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string String(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return "";
}

const Json& Member(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

const Json& Array(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  const Json& m = Member(j, key);
  return m.is_array() ? m : kEmpty;
}

// A watermark in ms that is a real time (not "none yet" or "end of input").
std::optional<double> FiniteWatermark(const Json& j, const char* key) {
  const Json& m = Member(j, key);
  if (!m.is_number_integer()) return std::nullopt;
  int64_t w = m.get<int64_t>();
  if (w == std::numeric_limits<int64_t>::min() || w == std::numeric_limits<int64_t>::max()) {
    return std::nullopt;
  }
  return static_cast<double>(w);
}

class Exposition {
 public:
  // Starts a family: its # HELP and # TYPE lines. Samples of it must follow before the next.
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    family_ = name;
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, Escape(help, /*quote=*/false), name,
                        type);
  }
  // A sample of the current family; `suffix`: "_bucket", "_sum", "_count" or "".
  void Sample(const Labels& labels, double value, std::string_view suffix = "") {
    out_ += family_;
    out_ += suffix;
    if (!labels.empty()) {
      out_ += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) out_ += ',';
        out_ += labels[i].first;
        out_ += "=\"";
        out_ += EscapeLabelValue(labels[i].second);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += FormatValue(value);
    out_ += '\n';
  }
  void Sample(const Labels& labels, std::optional<double> value) {
    if (value) Sample(labels, *value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
  std::string family_;
};

Labels With(Labels labels, std::string name, std::string value) {
  labels.emplace_back(std::move(name), std::move(value));
  return labels;
}

// One family over a list of elements (workers, subtasks): a sample per element whose `value`
// is known.
template <class LabelsOf>
void PerElement(Exposition& e, const Json& elements, LabelsOf labels_of, std::string_view name,
                std::string_view type, std::string_view help,
                const std::function<std::optional<double>(const Json&)>& value) {
  e.Family(name, type, help);
  for (const Json& x : elements) e.Sample(labels_of(x), value(x));
}

// Member `key` of an element divided by `divisor` (ms -> s: 1e3; dividing keeps 1500 us exactly
// 0.0015 s where multiplying by 1e-6 would not).
std::function<std::optional<double>(const Json&)> Field(const char* key, double divisor = 1) {
  return [key, divisor](const Json& x) -> std::optional<double> {
    auto v = Number(x, key);
    if (!v) return std::nullopt;
    return *v / divisor;
  };
}

// A family of one sample: member `key` of an object divided by `divisor` (as Field).
struct MemberMetric {
  const char* name;
  const char* type;
  const char* key;
  const char* help;
  double divisor = 1;
};

void RenderMembers(Exposition& e, const Labels& labels, const Json& object,
                   std::span<const MemberMetric> metrics) {
  for (const MemberMetric& m : metrics) {
    e.Family(m.name, m.type, m.help);
    e.Sample(labels, Field(m.key, m.divisor)(object));
  }
}

void RenderCoordinator(Exposition& e, const Json& status, int64_t snapshot_wall_ms,
                       int64_t now_wall_ms) {
  const Json& c = Member(status, "coordinator");
  const Json& sec = Member(c, "security");
  e.Family("keyflow_coordinator_status_age_seconds", "gauge",
           "Age of the status snapshot this scrape reads (the control loop publishes one about "
           "every 250 ms; a growing age means the control loop is stuck).");
  e.Sample({}, static_cast<double>(now_wall_ms - snapshot_wall_ms) / 1e3);
  e.Family("keyflow_coordinator_workers", "gauge", "Workers registered with the coordinator.");
  e.Sample({}, static_cast<double>(Array(status, "workers").size()));
  e.Family("keyflow_coordinator_malformed_control_messages_total", "counter",
           "Control messages the coordinator could not decode.");
  e.Sample({}, Number(c, "malformed_control_messages"));
  e.Family("keyflow_coordinator_refused_connections_total", "counter",
           "Control-plane connections refused (failed CURVE handshakes).");
  e.Sample({}, Number(sec, "refused_connections"));
  e.Family("keyflow_coordinator_refused_requests_total", "counter",
           "Control requests refused because the sender's role may not send them.");
  e.Sample({}, Number(sec, "refused_requests"));
  e.Family("keyflow_coordinator_security_info", "gauge",
           "The control plane's security mode (curve or insecure) as a label; always 1.");
  if (sec.is_object()) e.Sample({{"mode", String(sec, "mode")}}, 1.0);
}

void RenderWorkers(Exposition& e, const Json& status) {
  const Json& workers = Array(status, "workers");
  auto labels = [](const Json& w) { return Labels{{"worker", String(w, "worker")}}; };
  auto usage = [](const char* key) {
    return [key](const Json& w) -> std::optional<double> {
      auto v = Number(Member(w, "usage"), key);
      // A worker that has not reported its usage yet (or has no /proc) shows zeros: unknown.
      if (!v || Number(Member(w, "usage"), "rss_bytes").value_or(0) <= 0) return std::nullopt;
      return v;
    };
  };
  e.Family("keyflow_worker_info", "gauge",
           "A registered worker's slot, host and pid as labels; always 1.");
  for (const Json& w : workers) {
    e.Sample(With(With(With(labels(w), "slot", String(w, "slot")), "host", String(w, "host")),
                  "pid", String(w, "pid")),
             1.0);
  }
  PerElement(e, workers, labels, "keyflow_worker_resident_memory_bytes", "gauge",
             "Resident set size of the worker process.", usage("rss_bytes"));
  PerElement(e, workers, labels, "keyflow_worker_cpu_seconds_total", "counter",
             "User and system CPU time of the worker process since it started.",
             usage("cpu_seconds"));
  PerElement(e, workers, labels, "keyflow_worker_open_fds", "gauge",
             "Open file descriptors of the worker process.", usage("open_fds"));
  PerElement(e, workers, labels, "keyflow_worker_heartbeat_age_seconds", "gauge",
             "Time since the worker's last heartbeat reached the coordinator.",
             Field("last_heartbeat_ms_ago", 1e3));
  PerElement(e, workers, labels, "keyflow_worker_refused_data_connections_total", "counter",
             "Data-plane connections the worker refused (unknown CURVE keys, plain text).",
             Field("refused_data_connections"));
}

void RenderCheckpoints(Exposition& e, const Labels& job, const Json& ck) {
  const Json* last = nullptr;  // the most recent completed checkpoint or savepoint
  for (const Json& c : Array(ck, "recent")) {
    if (String(c, "state") == "COMPLETED") {
      last = &c;
      break;
    }
  }
  static constexpr MemberMetric kTotals[] = {
      {"keyflow_job_checkpoints_completed_total", "counter", "completed_total",
       "Checkpoints and savepoints completed since the job was submitted (all attempts)."},
      {"keyflow_job_checkpoints_failed_total", "counter", "failed_total",
       "Checkpoints that failed (declined, expired, or a subtask failed) since the job was "
       "submitted; subsumed ones are not failures."},
      {"keyflow_job_checkpoints_in_progress", "gauge", "pending", "Checkpoints pending now."},
      {"keyflow_job_checkpoint_consecutive_failures", "gauge", "consecutive_failures",
       "Checkpoint failures since the last completed checkpoint."},
      {"keyflow_job_checkpoint_failovers_total", "counter", "failovers",
       "Attempts failed over because more checkpoints failed in a row than "
       "--tolerable-checkpoint-failures allows."},
      {"keyflow_job_latest_completed_checkpoint_id", "gauge", "latest_completed",
       "Id of the newest completed checkpoint (0: none)."},
  };
  RenderMembers(e, job, ck, kTotals);
  static constexpr MemberMetric kLast[] = {
      {"keyflow_job_last_checkpoint_duration_seconds", "gauge", "duration_ms",
       "Trigger to completion of the most recent completed checkpoint.", 1e3},
      {"keyflow_job_last_checkpoint_size_bytes", "gauge", "bytes",
       "State size of the most recent completed checkpoint."},
      {"keyflow_job_last_checkpoint_sync_seconds", "gauge", "sync_us",
       "The slowest subtask's synchronous pause in the most recent completed checkpoint.", 1e6},
      {"keyflow_job_last_checkpoint_async_seconds", "gauge", "async_us",
       "The slowest subtask's asynchronous part in the most recent completed checkpoint.", 1e6},
      {"keyflow_job_last_checkpoint_alignment_seconds", "gauge", "alignment_us",
       "The slowest subtask's barrier alignment in the most recent completed checkpoint.", 1e6},
  };
  RenderMembers(e, job, last != nullptr ? *last : Json(), kLast);
}

void RenderJob(Exposition& e, const Json& job) {
  const Labels labels{{"job_id", String(job, "job_id")}};
  e.Family("keyflow_job_info", "gauge", "The job's name and state as labels; always 1.");
  e.Sample(With(With(labels, "job_name", String(job, "job")), "state", String(job, "state")), 1.0);
  static constexpr MemberMetric kMetrics[] = {
      {"keyflow_job_attempt", "gauge", "attempt",
       "The job's current attempt (1 + restarts + rescales)."},
      {"keyflow_job_parallelism", "gauge", "parallelism", "The job's parallelism."},
      {"keyflow_job_uptime_seconds", "gauge", "duration_ms",
       "Time since the job was submitted (until it ended).", 1e3},
      {"keyflow_job_restarts_total", "counter", "restarts", "Restarts of the job after failures."},
      {"keyflow_job_records_in_total", "counter", "records_in",
       "Records read by the job's sources, all attempts (including records re-read after a "
       "restore)."},
      {"keyflow_job_records_processed_total", "counter", "records_processed",
       "Records processed by the job's keyed functions, all attempts (including replays)."},
      {"keyflow_job_records_out_total", "counter", "records_out",
       "Records the job's sinks wrote, all attempts (including replays)."},
      {"keyflow_job_malformed_records_total", "counter", "bad_records",
       "Malformed input lines the job's sources skipped, all attempts."},
      {"keyflow_job_late_records_total", "counter", "late_records",
       "Records behind the watermark that the job dropped, all attempts."},
  };
  RenderMembers(e, labels, job, kMetrics);
  e.Family(
      "keyflow_job_watermark_timestamp_seconds", "gauge",
      "The job's event-time watermark (the lowest of its subtasks'), seconds since the epoch.");
  if (auto w = FiniteWatermark(job, "watermark")) e.Sample(labels, *w / 1e3);
  RenderCheckpoints(e, labels, Member(job, "checkpoints"));
}

void RenderLatency(Exposition& e, const Json& subtasks,
                   const std::function<Labels(const Json&)>& labels_of) {
  e.Family("keyflow_subtask_latency_seconds", "histogram",
           "Sampled latency from a record's arrival at its source subtask to the moment the "
           "keyed function has processed it, since the subtask's attempt started.");
  for (const Json& s : subtasks) {
    const Json& l = Member(s, "latency");
    if (!l.is_object()) continue;
    const Json& buckets = Member(l, "bucket_counts");
    Labels labels = labels_of(s);
    double cumulative = 0;
    for (size_t i = 0; i + 1 < kLatencyBuckets; ++i) {
      if (buckets.is_array() && i < buckets.size() && buckets[i].is_number()) {
        cumulative += buckets[i].get<double>();
      }
      e.Sample(
          With(labels, "le", FormatValue(static_cast<double>(kLatencyBucketBoundsUs[i]) / 1e6)),
          cumulative, "_bucket");
    }
    // _count equals the +Inf bucket by definition: the buckets' total when there are buckets.
    double count = Number(l, "count").value_or(0);
    if (buckets.is_array() && buckets.size() == kLatencyBuckets) {
      count = cumulative + (buckets.back().is_number() ? buckets.back().get<double>() : 0);
    }
    e.Sample(With(labels, "le", "+Inf"), count, "_bucket");
    e.Sample(labels, Number(l, "sum_us").value_or(0) / 1e6, "_sum");
    e.Sample(labels, count, "_count");
  }
  // The window's quantiles are a summary (as a client library's Summary: quantiles over a
  // sliding window, _sum and _count since the start); a gauge may not carry a quantile label.
  e.Family("keyflow_subtask_latency_recent_seconds", "summary",
           "Latency quantiles over the recent window (about 10 s; a quantile is absent when the "
           "window has no sample); _sum and _count since the subtask's attempt started.");
  static constexpr std::pair<const char*, const char*> kQuantiles[] = {
      {"0.5", "p50_ms"}, {"0.99", "p99_ms"}, {"0.999", "p999_ms"}};
  for (const Json& s : subtasks) {
    const Json& l = Member(s, "latency");
    if (!l.is_object()) continue;
    Labels labels = labels_of(s);
    for (const auto& [q, key] : kQuantiles) {
      auto v = Number(l, key);
      if (v) e.Sample(With(labels, "quantile", q), *v / 1e3);
    }
    e.Sample(labels, Number(l, "sum_us").value_or(0) / 1e6, "_sum");
    e.Sample(labels, Number(l, "count").value_or(0), "_count");
  }
}

void RenderSubtasks(Exposition& e, const Json& job, int64_t snapshot_wall_ms) {
  const Json& subtasks = Array(job, "subtasks");
  const std::string job_id = String(job, "job_id");
  std::function<Labels(const Json&)> labels = [&job_id](const Json& s) {
    return Labels{
        {"job_id", job_id}, {"subtask", String(s, "subtask")}, {"worker", String(s, "worker_id")}};
  };
  e.Family("keyflow_subtask_info", "gauge",
           "A subtask's state and key-group range as labels; always 1.");
  for (const Json& s : subtasks) {
    const Json& kg = Member(s, "key_groups");
    std::string range = kg.is_array() && kg.size() == 2
                            ? fmt::format("{}-{}", kg[0].dump(), kg[1].dump())
                            : std::string();
    e.Sample(With(With(labels(s), "state", String(s, "state")), "key_groups", range), 1.0);
  }
  struct Simple {
    const char* name;
    const char* type;
    const char* key;
    double divisor;
    const char* help;
  };
  static constexpr Simple kSimple[] = {
      {"keyflow_subtask_records_in_total", "counter", "records_in", 1,
       "Records read by the source subtask in the current attempt."},
      {"keyflow_subtask_records_processed_total", "counter", "records_processed", 1,
       "Records processed by the keyed subtask in the current attempt."},
      {"keyflow_subtask_records_out_total", "counter", "records_out", 1,
       "Records written by the subtask's sink in the current attempt."},
      {"keyflow_subtask_records_in_per_second", "gauge", "records_in_per_s", 1,
       "Records read per second, smoothed over heartbeats (for graphs prefer "
       "rate(keyflow_subtask_records_in_total[1m]))."},
      {"keyflow_subtask_records_processed_per_second", "gauge", "records_processed_per_s", 1,
       "Records processed per second, smoothed over heartbeats (for graphs prefer "
       "rate(keyflow_subtask_records_processed_total[1m]))."},
      {"keyflow_subtask_malformed_records_total", "counter", "bad_records", 1,
       "Malformed input lines the source subtask skipped in the current attempt."},
      {"keyflow_subtask_late_records_total", "counter", "late_records", 1,
       "Records behind the watermark the subtask dropped in the current attempt."},
      {"keyflow_subtask_backpressure_ratio", "gauge", "backpressure", 1,
       "Fraction of time the source subtask was blocked on sending (0 to 1)."},
      {"keyflow_subtask_state_keys", "gauge", "state_keys", 1,
       "Keys with state in the keyed subtask."},
      {"keyflow_subtask_timers", "gauge", "timers", 1, "Timers registered in the keyed subtask."},
      {"keyflow_subtask_restore_size_bytes", "gauge", "restore_bytes", 1,
       "State bytes the subtask restored when its attempt started."},
      {"keyflow_subtask_dropped_frames_total", "counter", "dropped_frames", 1,
       "Data frames the subtask's input channels dropped (not keyflow frames, or damaged)."},
  };
  for (const Simple& m : kSimple) {
    PerElement(e, subtasks, labels, m.name, m.type, m.help, Field(m.key, m.divisor));
  }
  PerElement(e, subtasks, labels, "keyflow_subtask_watermark_timestamp_seconds", "gauge",
             "The keyed subtask's event-time watermark, seconds since the epoch (absent before "
             "the first watermark and after the end of input).",
             [](const Json& s) -> std::optional<double> {
               auto w = FiniteWatermark(s, "watermark");
               return w ? std::optional<double>(*w / 1e3) : std::nullopt;
             });
  PerElement(e, subtasks, labels, "keyflow_subtask_source_watermark_timestamp_seconds", "gauge",
             "The source subtask's watermark, seconds since the epoch.",
             [](const Json& s) -> std::optional<double> {
               auto w = FiniteWatermark(s, "source_watermark");
               return w ? std::optional<double>(*w / 1e3) : std::nullopt;
             });
  PerElement(e, subtasks, labels, "keyflow_subtask_watermark_lag_seconds", "gauge",
             "Wall-clock time of the status snapshot minus the subtask's watermark (meaningful "
             "when event times are wall-clock times).",
             [snapshot_wall_ms](const Json& s) -> std::optional<double> {
               auto w = FiniteWatermark(s, "watermark");
               if (!w) return std::nullopt;
               return (static_cast<double>(snapshot_wall_ms) - *w) / 1e3;
             });
  e.Family("keyflow_subtask_state_size_bytes", "gauge",
           "Keyed state of the subtask: kind=\"memory\" (heap, or RocksDB memtables and block "
           "cache; an estimate) and kind=\"disk\" (RocksDB files).");
  for (const Json& s : subtasks) {
    e.Sample(With(labels(s), "kind", "memory"), Number(s, "state_bytes_memory"));
    e.Sample(With(labels(s), "kind", "disk"), Number(s, "state_bytes_disk"));
  }
  e.Family("keyflow_subtask_state_backend_info", "gauge",
           "The keyed subtask's state backend (heap or rocksdb) as a label; always 1.");
  for (const Json& s : subtasks) {
    if (!String(s, "state_backend").empty()) {
      e.Sample(With(labels(s), "backend", String(s, "state_backend")), 1.0);
    }
  }
  RenderLatency(e, subtasks, labels);
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  return Escape(value, /*quote=*/true);
}

// The Kafka source's consumer lag per partition (the job's "source" of kind "kafka").
void RenderKafkaLag(Exposition& e, const Json& job) {
  const Json& source = Member(job, "source");
  if (!source.is_object() || String(source, "kind") != "kafka") return;
  const Labels job_labels{{"job_id", String(job, "job_id")}};
  auto labels = [&](const Json& p) {
    return With(With(job_labels, "topic", String(p, "topic")), "partition",
                std::to_string(static_cast<int64_t>(Number(p, "partition").value_or(-1))));
  };
  PerElement(e, Member(source, "lag"), labels, "keyflow_source_kafka_consumer_lag_records", "gauge",
             "Records of a Kafka partition after the offset the source's consumer group "
             "committed (committed when a checkpoint completes), as last measured (every "
             "discovery interval).",
             [](const Json& p) -> std::optional<double> {
               auto v = Number(p, "records");
               if (!v || *v < 0) return std::nullopt;
               return v;
             });
  PerElement(e, Member(source, "lag"), labels, "keyflow_source_kafka_consumer_lag_seconds", "gauge",
             "Age of the oldest record of a Kafka partition after the group's committed offset "
             "(now minus its Kafka timestamp; 0 when none is behind), as last measured.",
             [](const Json& p) -> std::optional<double> {
               auto v = Number(p, "ms");
               if (!v || *v < 0) return std::nullopt;
               return *v / 1000.0;
             });
}

std::string RenderPrometheusText(const nlohmann::json& status, int64_t snapshot_wall_ms,
                                 int64_t now_wall_ms) {
  Exposition e;
  e.Family("keyflow_coordinator_up", "gauge",
           "1 when the coordinator has published its status (0: it is starting).");
  e.Sample({}, snapshot_wall_ms > 0 ? 1.0 : 0.0);
  if (snapshot_wall_ms <= 0) return e.Take();
  RenderCoordinator(e, status, snapshot_wall_ms, now_wall_ms);
  RenderWorkers(e, status);
  const Json& job = Member(status, "job");
  if (job.is_object()) {
    RenderJob(e, job);
    RenderSubtasks(e, job, snapshot_wall_ms);
    RenderKafkaLag(e, job);
  }
  return e.Take();
}

}  // namespace keyflow
