// /metrics rendering on a fixed status document: exact lines, label escaping, cumulative
// histogram buckets, values the status does not know left out, and every line of the whole
// output in the text exposition grammar (each family's HELP and TYPE before its samples, one
// group per family).
#include "coordinator/rest/prometheus_exporter.h"

#include "common/protocol/control_messages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kSnapshotMs = 1'764'442'800'000;  // 2025-11-29 19:00:00 UTC

// A status document as Coordinator::StatusJson writes it: two workers, a two-subtask job.
nlohmann::json Status() {
  return nlohmann::json::parse(R"json({
    "coordinator": {"incarnation": "c1", "malformed_control_messages": 2,
                    "security": {"mode": "curve", "refused_connections": 5,
                                 "refused_requests": 1}},
    "workers": [
      {"worker": 1, "slot": 0, "host": "h0", "pid": 100, "data_host": "127.0.0.1",
       "refused_data_connections": 3, "last_heartbeat_ms_ago": 250,
       "usage": {"rss_bytes": 104857600, "cpu_seconds": 12.5, "cpu_user_seconds": 10.0,
                 "cpu_system_seconds": 2.5, "cpu_percent": 40.0, "open_fds": 31}},
      {"worker": 2, "slot": 1, "host": "h1", "pid": 101, "data_host": "127.0.0.1",
       "refused_data_connections": 0, "last_heartbeat_ms_ago": 100,
       "usage": {"rss_bytes": 0, "cpu_seconds": 0, "cpu_percent": 0, "open_fds": 0}}
    ],
    "job": {
      "job_id": "count-window-1", "job": "count-window", "state": "RUNNING", "attempt": 2,
      "parallelism": 2, "max_parallelism": 128, "restarts": 1, "duration_ms": 61500,
      "records_in": 1500, "records_processed": 1400, "records_out": 70, "bad_records": 4,
      "late_records": 6, "watermark": 1764442790000,
      "checkpoints": {"interval_ms": 1000, "latest_completed": 7, "pending": 1,
                      "consecutive_failures": 0, "completed_total": 7, "failed_total": 2,
                      "failovers": 1,
                      "recent": [
        {"id": 8, "state": "ABORTED", "duration_ms": 10, "bytes": 0},
        {"id": 7, "state": "COMPLETED", "duration_ms": 1250, "bytes": 65536,
         "sync_us": 1500, "async_us": 250000, "alignment_us": 500}]},
      "subtasks": [
        {"subtask": 0, "worker": "worker 1 (slot 0, host h0, pid 100)", "worker_id": 1,
         "key_groups": [0, 63], "state": "RUNNING", "records_in": 800, "records_processed": 700,
         "records_out": 30, "bad_records": 4, "late_records": 5,
         "watermark": 1764442790000, "source_watermark": 1764442795000,
         "backpressure": 0.25, "state_keys": 10, "timers": 12, "restore_bytes": 2048,
         "dropped_frames": 0, "records_in_per_s": 100.5, "records_processed_per_s": 90,
         "state_backend": "heap", "state_bytes_memory": 4096, "state_bytes_disk": 0,
         "latency": {"count": 6, "sum_us": 3000,
                     "bucket_counts": [0, 1, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                     "p50_ms": 0.25, "p99_ms": 2.5, "p999_ms": null}},
        {"subtask": 1, "worker": "worker 2 (slot 1, host h1, pid 101)", "worker_id": 2,
         "key_groups": [64, 127], "state": "DEPLOYING", "records_in": 0,
         "records_processed": 0, "records_out": 0, "bad_records": 0, "late_records": 0,
         "watermark": -9223372036854775808, "source_watermark": -9223372036854775808,
         "backpressure": 0, "state_keys": 0, "timers": 0, "restore_bytes": 0,
         "dropped_frames": 9, "records_in_per_s": 0, "records_processed_per_s": 0,
         "state_backend": "", "state_bytes_memory": 0, "state_bytes_disk": 0,
         "latency": {"count": 0, "sum_us": 0, "bucket_counts": [],
                     "p50_ms": null, "p99_ms": null, "p999_ms": null}}
      ]
    }
  })json");
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Render() {
  return RenderPrometheusText(Status(), kSnapshotMs, kSnapshotMs + 1500);
}

constexpr char kS0[] = R"(job_id="count-window-1",subtask="0",worker="1")";
constexpr char kS1[] = R"(job_id="count-window-1",subtask="1",worker="2")";

TEST(PrometheusExporterTest, RendersExactSamplesOfEachLevel) {
  std::string text = Render();
  for (
      const std::string& line : {
          std::string("keyflow_coordinator_up 1"),
          std::string("keyflow_coordinator_status_age_seconds 1.5"),
          std::string("keyflow_coordinator_workers 2"),
          std::string("keyflow_coordinator_refused_connections_total 5"),
          std::string("keyflow_coordinator_refused_requests_total 1"),
          std::string("keyflow_coordinator_malformed_control_messages_total 2"),
          std::string(R"(keyflow_coordinator_security_info{mode="curve"} 1)"),
          std::string(R"(keyflow_worker_info{worker="1",slot="0",host="h0",pid="100"} 1)"),
          std::string(R"(keyflow_worker_resident_memory_bytes{worker="1"} 104857600)"),
          std::string(R"(keyflow_worker_cpu_seconds_total{worker="1"} 12.5)"),
          std::string(R"(keyflow_worker_open_fds{worker="1"} 31)"),
          std::string(R"(keyflow_worker_heartbeat_age_seconds{worker="1"} 0.25)"),
          std::string(R"(keyflow_worker_refused_data_connections_total{worker="1"} 3)"),
          std::string(
              R"(keyflow_job_info{job_id="count-window-1",job_name="count-window",state="RUNNING"} 1)"),
          std::string(R"(keyflow_job_restarts_total{job_id="count-window-1"} 1)"),
          std::string(R"(keyflow_job_attempt{job_id="count-window-1"} 2)"),
          std::string(R"(keyflow_job_uptime_seconds{job_id="count-window-1"} 61.5)"),
          std::string(R"(keyflow_job_records_processed_total{job_id="count-window-1"} 1400)"),
          std::string(R"(keyflow_job_malformed_records_total{job_id="count-window-1"} 4)"),
          std::string(R"(keyflow_job_late_records_total{job_id="count-window-1"} 6)"),
          std::string(
              R"(keyflow_job_watermark_timestamp_seconds{job_id="count-window-1"} 1764442790)"),
          std::string(R"(keyflow_job_checkpoints_completed_total{job_id="count-window-1"} 7)"),
          std::string(R"(keyflow_job_checkpoints_failed_total{job_id="count-window-1"} 2)"),
          std::string(R"(keyflow_job_checkpoints_in_progress{job_id="count-window-1"} 1)"),
          std::string(R"(keyflow_job_checkpoint_failovers_total{job_id="count-window-1"} 1)"),
          // the newest COMPLETED entry of recent (id 7), not the aborted id 8
          std::string(
              R"(keyflow_job_last_checkpoint_duration_seconds{job_id="count-window-1"} 1.25)"),
          std::string(R"(keyflow_job_last_checkpoint_size_bytes{job_id="count-window-1"} 65536)"),
          std::string(
              R"(keyflow_job_last_checkpoint_sync_seconds{job_id="count-window-1"} 0.0015)"),
          std::string(R"(keyflow_job_last_checkpoint_async_seconds{job_id="count-window-1"} 0.25)"),
          std::string("keyflow_subtask_records_in_total{") + kS0 + "} 800",
          std::string("keyflow_subtask_records_processed_total{") + kS0 + "} 700",
          std::string("keyflow_subtask_records_out_total{") + kS0 + "} 30",
          std::string("keyflow_subtask_records_in_per_second{") + kS0 + "} 100.5",
          std::string("keyflow_subtask_records_processed_per_second{") + kS0 + "} 90",
          std::string("keyflow_subtask_malformed_records_total{") + kS0 + "} 4",
          std::string("keyflow_subtask_late_records_total{") + kS0 + "} 5",
          std::string("keyflow_subtask_backpressure_ratio{") + kS0 + "} 0.25",
          std::string("keyflow_subtask_state_keys{") + kS0 + "} 10",
          std::string("keyflow_subtask_timers{") + kS0 + "} 12",
          std::string("keyflow_subtask_restore_size_bytes{") + kS0 + "} 2048",
          std::string("keyflow_subtask_dropped_frames_total{") + kS1 + "} 9",
          std::string("keyflow_subtask_watermark_timestamp_seconds{") + kS0 + "} 1764442790",
          std::string("keyflow_subtask_source_watermark_timestamp_seconds{") + kS0 + "} 1764442795",
          // snapshot 19:00:00 minus watermark 18:59:50
          std::string("keyflow_subtask_watermark_lag_seconds{") + kS0 + "} 10",
          std::string("keyflow_subtask_state_size_bytes{") + kS0 + R"(,kind="memory"} 4096)",
          std::string("keyflow_subtask_state_size_bytes{") + kS0 + R"(,kind="disk"} 0)",
          std::string("keyflow_subtask_state_backend_info{") + kS0 + R"(,backend="heap"} 1)",
          std::string("keyflow_subtask_info{") + kS0 + R"(,state="RUNNING",key_groups="0-63"} 1)",
          std::string("keyflow_subtask_latency_recent_seconds{") + kS0 +
              R"(,quantile="0.5"} 0.00025)",
          std::string("keyflow_subtask_latency_recent_seconds{") + kS0 +
              R"(,quantile="0.99"} 0.0025)",
          std::string("keyflow_subtask_latency_recent_seconds_count{") + kS0 + "} 6",
      }) {
    EXPECT_THAT(text, HasSubstr("\n" + line + "\n")) << line;
  }
  EXPECT_THAT(text, HasSubstr("# HELP keyflow_worker_cpu_seconds_total User and system CPU time "
                              "of the worker process since it started.\n"
                              "# TYPE keyflow_worker_cpu_seconds_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE keyflow_subtask_latency_seconds histogram\n"));
}

TEST(PrometheusExporterTest, LeavesOutWhatTheStatusDoesNotKnow) {
  std::string text = Render();
  // Worker 2 has not reported its usage; subtask 1 has no watermark, no backend, no quantiles.
  EXPECT_THAT(text, Not(HasSubstr(R"(keyflow_worker_resident_memory_bytes{worker="2"})")));
  EXPECT_THAT(text, Not(HasSubstr(R"(keyflow_worker_cpu_seconds_total{worker="2"})")));
  EXPECT_THAT(text, HasSubstr(R"(keyflow_worker_heartbeat_age_seconds{worker="2"} 0.1)"));
  EXPECT_THAT(text, Not(HasSubstr(std::string("watermark_timestamp_seconds{") + kS1)));
  EXPECT_THAT(text, Not(HasSubstr(std::string("keyflow_subtask_watermark_lag_seconds{") + kS1)));
  EXPECT_THAT(text, Not(HasSubstr(std::string("keyflow_subtask_state_backend_info{") + kS1)));
  EXPECT_THAT(text, Not(HasSubstr(std::string("keyflow_subtask_latency_recent_seconds{") + kS1)));
  EXPECT_THAT(text, Not(HasSubstr(R"(quantile="0.999")")));  // p999 null for subtask 0 too
  EXPECT_THAT(text, HasSubstr(std::string("keyflow_subtask_records_in_total{") + kS1 + "} 0\n"));
}

TEST(PrometheusExporterTest, RendersTheKafkaConsumerLagPerPartitionItKnows) {
  nlohmann::json status = Status();
  status["job"]["source"] = nlohmann::json::parse(R"json({
    "kind": "kafka", "topics": ["clicks"], "splits": 2, "lag_records": 40,
    "lag": [{"topic": "clicks", "partition": 0, "committed": 60, "end": 100, "records": 40,
             "ms": 2500},
            {"topic": "clicks", "partition": 1, "committed": -1, "end": 7, "records": -1,
             "ms": -1}]})json");
  const std::string text = RenderPrometheusText(status, kSnapshotMs, kSnapshotMs + 1500);
  EXPECT_THAT(text, HasSubstr("# TYPE keyflow_source_kafka_consumer_lag_records gauge\n"));
  EXPECT_THAT(text, HasSubstr("keyflow_source_kafka_consumer_lag_records{job_id=\"" +
                              status["job"]["job_id"].get<std::string>() +
                              "\",topic=\"clicks\",partition=\"0\"} 40\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE keyflow_source_kafka_consumer_lag_seconds gauge\n"));
  EXPECT_THAT(text, HasSubstr("keyflow_source_kafka_consumer_lag_seconds{job_id=\"" +
                              status["job"]["job_id"].get<std::string>() +
                              "\",topic=\"clicks\",partition=\"0\"} 2.5\n"));
  EXPECT_THAT(text, Not(HasSubstr("partition=\"1\"")));  // nothing committed yet: unknown
}

TEST(PrometheusExporterTest, HistogramBucketsAreCumulativeInSeconds) {
  std::vector<std::string> buckets;
  for (const std::string& line : Lines(Render())) {
    if (line.rfind(std::string("keyflow_subtask_latency_seconds_bucket{") + kS0, 0) == 0) {
      buckets.push_back(line);
    }
  }
  ASSERT_EQ(buckets.size(), kLatencyBuckets);
  std::string b = std::string("keyflow_subtask_latency_seconds_bucket{") + kS0;
  EXPECT_EQ(buckets[0], b + R"(,le="5e-05"} 0)");
  EXPECT_EQ(buckets[1], b + R"(,le="0.0001"} 1)");
  EXPECT_EQ(buckets[2], b + R"(,le="0.00025"} 3)");
  EXPECT_EQ(buckets[4], b + R"(,le="0.001"} 3)");
  EXPECT_EQ(buckets[5], b + R"(,le="0.0025"} 6)");
  EXPECT_EQ(buckets[18], b + R"(,le="60"} 6)");
  EXPECT_EQ(buckets[19], b + R"(,le="+Inf"} 6)");
  std::string text = Render();
  EXPECT_THAT(text,
              HasSubstr(std::string("keyflow_subtask_latency_seconds_sum{") + kS0 + "} 0.003\n"));
  EXPECT_THAT(text,
              HasSubstr(std::string("keyflow_subtask_latency_seconds_count{") + kS0 + "} 6\n"));
  // No samples yet: every bucket 0, so the series exist from the start.
  EXPECT_THAT(text, HasSubstr(std::string("keyflow_subtask_latency_seconds_bucket{") + kS1 +
                              R"(,le="+Inf"} 0)"));
  EXPECT_THAT(text,
              HasSubstr(std::string("keyflow_subtask_latency_seconds_count{") + kS1 + "} 0\n"));
}

TEST(PrometheusExporterTest, EscapesBackslashQuoteAndNewlineInLabelValues) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\n"
                             "d"),
            R"(a\\b\"c\nd)");
  nlohmann::json st = Status();
  st["job"]["job"] = "my \"job\"\n\\x";
  st["workers"][0]["host"] = "host\nwith} newline";
  std::string text = RenderPrometheusText(st, kSnapshotMs, kSnapshotMs);
  EXPECT_THAT(text, HasSubstr(R"(job_name="my \"job\"\n\\x",state="RUNNING"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(host="host\nwith} newline",pid="100"} 1)"));
}

TEST(PrometheusExporterTest, WithoutASnapshotOnlyUpIsRendered) {
  EXPECT_EQ(RenderPrometheusText(nlohmann::json(), 0, kSnapshotMs),
            "# HELP keyflow_coordinator_up 1 when the coordinator has published its status (0: "
            "it is starting).\n# TYPE keyflow_coordinator_up gauge\nkeyflow_coordinator_up 0\n");
  // No job: coordinator and worker families only.
  nlohmann::json st = Status();
  st["job"] = nullptr;
  std::string text = RenderPrometheusText(st, kSnapshotMs, kSnapshotMs);
  EXPECT_THAT(text, HasSubstr("keyflow_coordinator_workers 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("keyflow_job_")));
  EXPECT_THAT(text, Not(HasSubstr("keyflow_subtask_")));
}

// Every line of the output in the text format 0.0.4: comments are HELP/TYPE of a metric name;
// a family's samples follow its TYPE, in one group, with its name (+ _bucket/_sum/_count for a
// histogram, _sum/_count for a summary); label names are valid and values quoted with only the
// three escapes; values are floats. Counters end in _total.
TEST(PrometheusExporterTest, WholeOutputFollowsTheExpositionGrammar) {
  nlohmann::json st = Status();
  st["job"]["job"] = "odd \"name\"\n\\";  // escapes must keep the grammar
  std::string text = RenderPrometheusText(st, kSnapshotMs, kSnapshotMs + 10);
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');
  const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) [^\n]*)");
  const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary))");
  const std::string label = R"([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*")";
  const std::regex sample("([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{" + label + "(?:," + label +
                          ")*\\})? (-?[0-9]+(?:\\.[0-9]+)?(?:e[-+]?[0-9]+)?|NaN|[+-]Inf)");
  std::string family, family_type, helped;
  std::set<std::string> seen;
  size_t samples = 0;
  for (const std::string& line : Lines(text)) {
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      ASSERT_TRUE(seen.insert(m[1]).second) << "family declared twice: " << line;
      helped = m[1];
    } else if (std::regex_match(line, m, type)) {
      ASSERT_EQ(m[1], helped) << "TYPE without its HELP: " << line;
      family = m[1];
      family_type = m[2];
      if (family_type == "counter") {
        EXPECT_TRUE(family.ends_with("_total")) << family;
      }
    } else if (std::regex_match(line, m, sample)) {
      std::string name = m[1];
      ++samples;
      if (family_type == "histogram" || family_type == "summary") {
        EXPECT_TRUE(name == family + (family_type == "histogram" ? "_bucket" : "") ||
                    name == family + "_sum" || name == family + "_count")
            << line;
      } else {
        EXPECT_EQ(name, family) << "sample outside its family's group: " << line;
      }
    } else {
      ADD_FAILURE() << "not in the exposition grammar: " << line;
    }
  }
  EXPECT_GT(samples, 100u);
}

}  // namespace
}  // namespace keyflow

namespace keyflow {
namespace {

HttpRequest Get(const std::string& path) {
  HttpRequest r;
  r.method = "GET";
  r.path = path;
  return r;
}

TEST(MetricsRouteTest, ServesTheLatestSnapshotInTheTextFormat) {
  RestRouter router;
  StatusSnapshotPublisher publisher;
  ManualClock clock(Timestamp(kSnapshotMs + 2000));
  AddMetricsRoutes(router, publisher, &clock);
  HttpResponse before = router.Handle(Get("/metrics"));
  EXPECT_EQ(before.status, 200);
  EXPECT_THAT(before.body, HasSubstr("\nkeyflow_coordinator_up 0\n"));
  publisher.Publish(Status(), kSnapshotMs);
  HttpResponse r = router.Handle(Get("/metrics"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.headers["Cache-Control"], "no-store");
  EXPECT_EQ(r.body, RenderPrometheusText(Status(), kSnapshotMs, kSnapshotMs + 2000));
  EXPECT_THAT(r.body, HasSubstr("\nkeyflow_coordinator_status_age_seconds 2\n"));
  EXPECT_EQ(router
                .Handle([] {
                  HttpRequest p = Get("/metrics");
                  p.method = "POST";
                  return p;
                }())
                .status,
            405);
}

}  // namespace
}  // namespace keyflow
