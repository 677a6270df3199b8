#include "coordinator/cli/job_status_text.h"

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <utility>

#include "common/duration.h"

namespace keyflow::cli {
namespace {

// "  RSS 120.5MB  CPU 37%" from workers[].usage ("" before the worker reported any).
std::string UsageText(const nlohmann::json& worker) {
  const nlohmann::json& u = worker.contains("usage") ? worker["usage"] : nlohmann::json();
  if (!u.is_object() || u.value("rss_bytes", int64_t{0}) <= 0) return "";
  std::ostringstream os;
  os << "  RSS " << Human(u.value("rss_bytes", 0.0)) << "B  CPU " << std::fixed
     << std::setprecision(0) << u.value("cpu_percent", 0.0) << "%";
  return os.str();
}

std::string WatermarkText(int64_t w) {
  if (w == INT64_MIN) return "-";
  if (w == INT64_MAX) return "end";
  return std::to_string(w);
}

// A subtask's latency quantiles from its status JSON, "0.84/2.10/3.05" (ms); "-" for a
// quantile whose window holds no marker (none yet, the source finished, or markers off).
std::string LatencyColumns(const nlohmann::json& latency) {
  if (!latency.is_object()) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  const char* sep = "";
  for (const char* q : {"p50_ms", "p99_ms", "p999_ms"}) {
    os << sep;
    sep = "/";
    if (latency.contains(q) && latency[q].is_number()) {
      os << latency[q].get<double>();
    } else {
      os << "-";
    }
  }
  return os.str();
}

// "monitoring DIR every N ms: K files found[; the last listing failed: ...]" for a job reading a
// monitored directory, "Kafka topics T1, T2 (or: topics matching /R/): K partitions[ (bounded)][,
// consumer lag R records][; the last discovery failed: ...][; the last lag measurement failed:
// ...]" for a Kafka source, "" otherwise.
std::string SourceText(const nlohmann::json& job) {
  const auto src = job.find("source");
  if (src == job.end() || !src->is_object()) return "";
  if (src->value("kind", "") == "kafka") {
    std::string text = "Kafka topic";
    const nlohmann::json topics = src->value("topics", nlohmann::json::array());
    if (const std::string pattern = src->value("topic_pattern", std::string()); !pattern.empty()) {
      text += "s matching /" + pattern + "/";
    } else {
      text += topics.size() == 1 ? " " : "s ";
      for (size_t i = 0; i < topics.size(); ++i) {
        text += (i ? ", " : "") + topics[i].get<std::string>();
      }
    }
    text += ": " + std::to_string(src->value("splits", 0)) + " partitions";
    if (src->value("bounded", false)) text += " (bounded: up to the end offsets seen at the start)";
    if (const int64_t lag = src->value("lag_records", int64_t{-1}); lag >= 0) {
      text += ", consumer lag " + std::to_string(lag) + " records";
      if (const int64_t ms = src->value("lag_ms", int64_t{-1}); ms >= 0) {
        text += " (" + FormatDuration(Duration::Millis(ms)) + ")";
      }
    }
    if (!src->value("discovery_error", std::string()).empty()) {
      text += "; the last discovery failed: " + src->value("discovery_error", std::string());
    }
    if (!src->value("lag_error", std::string()).empty()) {
      text += "; the last lag measurement failed: " + src->value("lag_error", std::string());
    }
    return text;
  }
  if (src->value("kind", "") != "monitor") return "";
  std::string text = "monitoring " + src->value("directory", std::string()) + " every " +
                     std::to_string(src->value("interval_ms", 0)) +
                     " ms: " + std::to_string(src->value("splits", 0)) + " files found";
  if (!src->value("listing_error", std::string()).empty()) {
    text += "; the last listing failed: " + src->value("listing_error", std::string());
  }
  return text;
}

}  // namespace

std::string Human(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (v >= 1e9) {
    os << v / 1e9 << "G";
  } else if (v >= 1e6) {
    os << v / 1e6 << "M";
  } else if (v >= 1e3) {
    os << v / 1e3 << "k";
  } else {
    os << std::setprecision(0) << v;
  }
  return os.str();
}

std::string ProgressLine(const nlohmann::json& job) {
  std::ostringstream os;
  os << "[" << job.value("state", "?") << "] " << job.value("job_id", "") << "  in "
     << Human(job.value("records_in", 0.0)) << " (" << Human(job.value("records_in_per_s", 0.0))
     << "/s)  processed " << Human(job.value("records_processed", 0.0)) << "  out "
     << Human(job.value("records_out", 0.0)) << "  watermark "
     << WatermarkText(job.value("watermark", INT64_MIN));
  if (job.value("attempt", 1) > 1) os << "  attempt " << job.value("attempt", 1);
  // Why it restarts, where a restarting job's user is looking (`keyflow run --wait`).
  const std::string last_failure = job.value("last_failure", std::string());
  if (job.value("attempt", 1) > 1 && !last_failure.empty()) {
    os << "  last failure: " << last_failure;
  }
  return os.str();
}

void PrintSummary(const nlohmann::json& job, std::ostream& os) {
  os << "job " << job.value("job_id", "") << " " << job.value("state", "?") << " after "
     << std::fixed << std::setprecision(1) << job.value("duration_ms", 0) / 1000.0 << " s\n";
  if (job.value("attempt", 1) > 1) {
    os << "  (counts add up all " << job.value("attempt", 1)
       << " attempts, including records re-read after a restore)\n";
  }
  os << "  records read:      " << job.value("records_in", 0) << "\n"
     << "  records processed: " << job.value("records_processed", 0) << "\n"
     << "  results emitted:   " << job.value("records_out", 0) << "\n"
     << "  malformed records: " << job.value("bad_records", 0)
     << (job.value("bad_records", 0) > 0
             ? " (skipped; each is logged with its file, line and reason as 'bad record "
               "skipped' in the worker logs: <run dir>/worker-<i>.log with "
               "scripts/start-cluster.sh)\n"
             : " (skipped)\n")
     << "  late records:      " << job.value("late_records", 0) << "\n";
  if (!job.value("output", std::string()).empty()) {
    os << "  output:            " << job.value("output", std::string()) << "\n";
  } else {
    os << "  output:            printed by the workers to their stdout (with "
          "scripts/start-cluster.sh: <run dir>/worker-<i>.out)\n";
  }
  if (job.value("attempt", 1) > 1) {
    os << "  attempts:          " << job.value("attempt", 1) << " (" << job.value("restarts", 0)
       << " restarts";
    if (job.value("restored_from", 0) > 0) {
      os << "; the last one restored checkpoint " << job.value("restored_from", 0) << " and read "
         << job["current_attempt"].value("records_in", 0) << " records";
    }
    os << ")\n";
    if (!job.value("last_failure", std::string()).empty()) {
      os << "  last failure:      " << job.value("last_failure", std::string()) << "\n";
    }
  }
  if (!job.value("failure", std::string()).empty()) {
    os << "  reason:            " << job.value("failure", std::string()) << "\n";
  }
}

void PrintStatus(nlohmann::json st, std::ostream& os) {
  if (const nlohmann::json& sec = st["coordinator"]["security"]; sec.is_object()) {
    os << "security: " << sec.value("mode", "?") << "  refused connections "
       << sec.value("refused_connections", 0) << "  refused requests "
       << sec.value("refused_requests", 0) << "\n";
  }
  os << "workers: " << st["workers"].size() << "\n";
  for (const auto& w : st["workers"]) {
    os << "  worker " << w.value("worker", 0) << "  slot " << w.value("slot", 0) << "  host "
       << w.value("host", "") << "  pid " << w.value("pid", 0) << "  heartbeat "
       << w.value("last_heartbeat_ms_ago", 0) << " ms ago" << UsageText(w) << "\n";
  }
  // Not const: operator[] of a key a status does not have (yet), e.g. "last_command" before any
  // command, must give null; on a const json it is undefined behaviour (this crashed `keyflow
  // status` right after a job started: LatencyTest).
  nlohmann::json& job = st["job"];
  if (!job.is_object()) {
    os << "job: none\n";
    return;
  }
  os << "job: " << job.value("job_id", "") << " (" << job.value("job", "") << ")  state "
     << job.value("state", "") << "  attempt " << job.value("attempt", 0) << "  parallelism "
     << job.value("parallelism", 0) << "  max parallelism " << job.value("max_parallelism", 0)
     << "  state backend " << job.value("state_backend", "heap") << "\n";
  if (!job.value("failure", std::string()).empty()) {
    os << "  reason: " << job.value("failure", std::string()) << "\n";
  }
  os << "  " << ProgressLine(job) << "\n";
  if (const std::string source = SourceText(job); !source.empty()) {
    os << "  input: " << source << "\n";
  }
  // The job's tasks and edges (JobGraph::Describe), one per line.
  if (const nlohmann::json& graph = job["graph"]; graph.is_string()) {  // null: no graph
    os << "  graph:\n";
    std::istringstream lines(graph.get<std::string>());
    for (std::string line; std::getline(lines, line);) os << "    " << line << "\n";
  }
  if (!job.value("waiting_for", std::string()).empty()) {
    os << "  " << job.value("waiting_for", std::string()) << "\n";
  }
  if (job.value("attempt", 1) > 1) {
    os << "  counters add up all attempts, including records re-read after a restore; "
          "this attempt: in "
       << job["current_attempt"].value("records_in", 0) << ", processed "
       << job["current_attempt"].value("records_processed", 0) << "\n";
  }
  if (job.contains("commands_in_progress")) {
    for (const auto& c : job["commands_in_progress"]) {
      os << "  command in progress: " << c.get<std::string>() << "\n";
    }
  }
  if (job["last_command"].is_object()) {
    os << "  last command: " << job["last_command"].value("command", "") << " — "
       << job["last_command"].value("outcome", "") << "\n";
  }
  if (job.contains("rescale")) {
    os << "  rescaling to " << job["rescale"].value("target", 0) << ": "
       << job["rescale"].value("phase", "") << " (" << job["rescale"].value("elapsed_ms", 0)
       << " ms)\n";
  }
  if (job.value("restarts", 0) > 0) {
    os << "  restarts: " << job.value("restarts", 0) << " (" << job.value("restart_strategy", "")
       << "), last failure: " << job.value("last_failure", std::string()) << "\n";
  }
  nlohmann::json& ck = job["checkpoints"];
  if (ck.is_object()) {
    os << "  checkpoints: interval "
       << (ck.value("interval_ms", 0) > 0 ? std::to_string(ck.value("interval_ms", 0)) + " ms"
                                          : std::string("off"))
       << ", latest completed " << ck.value("latest_completed", 0) << ", pending "
       << ck.value("pending", 0) << ", consecutive failures " << ck.value("consecutive_failures", 0)
       << " of " << ck.value("tolerable_failures", 0) << " tolerated";
    if (ck.value("failovers", 0) > 0) {
      os << ", " << ck.value("failovers", 0) << " restart(s) after too many failures";
    }
    os << "\n";
    if (ck.value("consecutive_failures", 0) > 0) {
      os << "  WARNING: checkpoints are failing (" << ck.value("consecutive_failures", 0)
         << " in a row): the job cannot roll back further than checkpoint "
         << ck.value("latest_completed", 0) << " until one completes\n";
    }
    if (!ck.value("last_failure", std::string()).empty()) {
      os << "    last checkpoint failure: " << ck.value("last_failure", std::string()) << "\n";
    }
    if (ck.contains("recent")) {
      for (const auto& c : ck["recent"]) {
        os << "    " << (c.value("savepoint", false) ? "savepoint " : "checkpoint ")
           << c.value("id", 0) << "  " << c.value("state", "") << "  " << c.value("duration_ms", 0)
           << " ms  " << Human(c.value("bytes", 0.0)) << "B  sync " << c.value("sync_us", 0)
           << " us"
           << (c.value("failure", std::string()).empty()
                   ? std::string()
                   : "  (" + c.value("failure", std::string()) + ")")
           << "\n";
      }
    }
  }
  os << "  subtask  key-groups  state      records-in  in/s     processed  out        "
        "watermark       backpressure  latency p50/p99/p99.9 ms\n";
  for (auto& s : job["subtasks"]) {
    std::ostringstream kg;
    kg << s["key_groups"][0].get<int>() << "-" << s["key_groups"][1].get<int>();
    os << "  " << std::left << std::setw(9) << s.value("subtask", 0) << std::setw(12) << kg.str()
       << std::setw(11) << s.value("state", "") << std::setw(12) << s.value("records_in", 0)
       << std::setw(9) << Human(s.value("records_in_per_s", 0.0)) << std::setw(11)
       << s.value("records_processed", 0) << std::setw(11) << s.value("records_out", 0)
       << std::setw(16) << WatermarkText(s.value("watermark", INT64_MIN)) << std::setw(14)
       << (std::to_string(std::lround(100.0 * s.value("backpressure", 0.0))) + "%")
       << LatencyColumns(s.value("latency", nlohmann::json())) << "\n";
  }
  // Keyed state per subtask: the backend and what its state occupies (RocksDB: memtables and
  // block cache in memory, SST files on disk; the heap's memory is not measured).
  os << "  subtask  state-backend  state-entries  memory      disk\n";
  for (const auto& s : job["subtasks"]) {
    os << "  " << std::left << std::setw(9) << s.value("subtask", 0) << std::setw(15)
       << s.value("state_backend", "") << std::setw(15) << s.value("state_keys", 0) << std::setw(12)
       << (Human(s.value("state_bytes_memory", 0.0)) + "B")
       << Human(s.value("state_bytes_disk", 0.0)) << "B\n";
  }
}

}  // namespace keyflow::cli
