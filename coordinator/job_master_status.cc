// JobMaster: the job's status as JSON (keyflow status --json, the REST API, the dashboard):
// the job, its subtasks' metrics and its checkpoints.
#include "coordinator/job_master.h"

#include <algorithm>

#include "common/input/input_spec.h"
#include "common/input/kafka_sink_spec.h"
#include "common/input/kafka_spec.h"
#include "common/logging/logging.h"
#include "worker/api/job_graph.h"

namespace keyflow {

namespace {

nlohmann::json CheckpointStatsJson(const CheckpointStats& st, bool with_subtasks = false) {
  nlohmann::json j = {{"id", st.id.value()},
                      {"state", CheckpointStateName(st.state)},
                      {"savepoint", st.savepoint},
                      {"final", st.final},
                      {"duration_ms", st.duration_ms},
                      {"bytes", st.state_bytes},
                      {"written_bytes", st.written_bytes},
                      {"incremental", st.incremental},
                      {"sync_us", st.max_sync_us},
                      {"async_us", st.max_async_us},
                      {"alignment_us", st.max_alignment_us},
                      {"failure", st.failure},
                      {"directory", st.directory}};
  if (with_subtasks) {
    nlohmann::json subtasks = nlohmann::json::array();
    for (const SubtaskCheckpointStats& t : st.subtasks) {
      subtasks.push_back({{"subtask", t.subtask},
                          {"bytes", t.state_bytes},
                          {"written_bytes", t.written_bytes},
                          {"sync_us", t.sync_us},
                          {"async_us", t.async_us},
                          {"alignment_us", t.alignment_us}});
    }
    j["subtasks"] = std::move(subtasks);
  }
  return j;
}

// A subtask's latency (worker/README.md "Latency"): the cumulative histogram (bucket_counts as in
// LatencySummary, not cumulative across buckets; [] before any sample), the recent window's
// quantiles in ms (null: no sample in the window), and the mean since the attempt started.
nlohmann::json LatencySummaryJson(const LatencySummary& l) {
  auto ms = [](int64_t us) { return us < 0 ? nlohmann::json() : nlohmann::json(us / 1000.0); };
  return {{"count", l.count},
          {"sum_us", l.sum_us},
          {"bucket_counts", l.bucket_counts},
          {"p50_ms", ms(l.p50_us)},
          {"p99_ms", ms(l.p99_us)},
          {"p999_ms", ms(l.p999_us)},
          {"mean_ms", l.count > 0 ? ms(l.sum_us / static_cast<int64_t>(l.count)) : nullptr}};
}

}  // namespace

nlohmann::json JobMaster::StatusJson(int64_t now_ms) const {
  nlohmann::json j;
  j["job_id"] = job_id_;
  j["job"] = spec_.job_name;
  if (!spec_.job_library.is_default()) {
    j["job_library"] = {{"file_name", spec_.job_library.file_name},
                        {"sha256", spec_.job_library.sha256},
                        {"size_bytes", spec_.job_library.size_bytes}};
  }
  j["state"] = state_ == JobState::kRescaling && rescale_ && rescale_->target == 0
                   ? std::string_view("STOPPING")
                   : JobStateName(state_);
  j["attempt"] = attempt_.value();
  j["parallelism"] = spec_.parallelism;
  j["max_parallelism"] = spec_.max_parallelism;
  j["state_backend"] = spec_.state_backend;
  j["input"] = InputSpec::Redacted(spec_.input);  // no secrets in status
  // A graph job's tasks and edges (null for a single-function job).
  j["graph"] = spec_.is_graph_job() ? nlohmann::json(spec_.graph.Describe()) : nlohmann::json();
  j["source"] = enumerator_ ? enumerator_->StatusJson() : nlohmann::json();
  j["output"] = KafkaSinkSpec::Names(spec_.output_dir)
                    ? KafkaSourceSpec::RedactText(spec_.output_dir)  // no secrets in status
                    : spec_.output_dir;
  j["failure"] = failure_reason_;
  j["last_failure"] = last_failure_;
  j["waiting_for"] = waiting_for_;
  j["restarts"] = restart_.restarts();
  j["restart_strategy"] = restart_.Describe();
  j["restored_from"] = restored_from_ ? restored_from_->id.value() : 0;
  if (rescale_) {
    j["rescale"] = {{"target", rescale_->target},
                    {"phase", RescalePhaseName(rescale_->phase)},
                    {"elapsed_ms", now_ms - rescale_->started_ms}};
  }
  j["duration_ms"] = (terminal() ? ended_ms_ : now_ms) - submitted_ms_;
  nlohmann::json subtasks = nlohmann::json::array();
  SubtaskMetrics total;
  double total_in_rate = 0, total_processed_rate = 0;
  int64_t min_watermark = INT64_MAX;
  for (const Vertex& v : vertices_) {
    const WorkerInfo* w = workers_->Find(v.worker);
    if (w != nullptr && w->attempt != attempt_) w = nullptr;  // metrics of an older attempt
    if (!v.ended_state.empty()) w = nullptr;                  // no live rates after the end
    const SubtaskMetrics& m = v.finished ? v.final_metrics : v.last_metrics;
    nlohmann::json s;
    s["subtask"] = v.subtask.value();
    s["worker"] = v.worker_description;
    s["worker_id"] = v.worker.value();
    s["key_groups"] = {v.key_groups.start(), v.key_groups.end()};
    s["input_endpoints"] = v.input_endpoints;  // [i]: where source subtask i sends to it
    s["state"] = v.finished               ? "FINISHED"
                 : !v.ended_state.empty() ? v.ended_state.c_str()
                 : v.input_ended          ? "INPUT_ENDED"
                 : v.running              ? "RUNNING"
                 : v.deployed             ? "RESTORING"
                                          : "DEPLOYING";
    s["records_in"] = m.records_in;
    s["records_processed"] = m.records_processed;
    s["records_out"] = m.records_out;
    s["bad_records"] = m.bad_records;
    s["late_records"] = m.late_records;
    s["watermark"] = m.current_watermark;
    s["source_watermark"] = m.source_watermark;
    s["backpressure"] = m.backpressure;
    s["state_keys"] = m.state_keys;
    s["timers"] = m.timers;
    s["restore_bytes"] = m.restore_bytes;
    s["dropped_frames"] = m.dropped_frames;
    // The REST /metrics endpoint reads these names.
    s["state_backend"] = m.state_backend;
    s["state_bytes_memory"] = m.state_bytes_memory;
    s["state_bytes_disk"] = m.state_bytes_disk;
    s["latency"] = LatencySummaryJson(m.latency);
    s["records_in_per_s"] = v.finished || w == nullptr ? 0.0 : w->records_in_rate;
    s["records_processed_per_s"] = v.finished || w == nullptr ? 0.0 : w->records_processed_rate;
    total_in_rate += s["records_in_per_s"].get<double>();
    total_processed_rate += s["records_processed_per_s"].get<double>();
    min_watermark = std::min(min_watermark, m.current_watermark);
    subtasks.push_back(std::move(s));
    total.records_in += m.records_in;
    total.records_processed += m.records_processed;
    total.records_out += m.records_out;
    total.bad_records += m.bad_records;
    total.late_records += m.late_records;
  }
  j["subtasks"] = std::move(subtasks);
  // Job counters add up every attempt (checkpoint/README.md "Counters"): after a restore the
  // source re-reads the records since that checkpoint, so they include replays.
  // current_attempt: the current attempt's alone (what its subtasks show).
  j["current_attempt"] = {{"records_in", total.records_in},
                          {"records_processed", total.records_processed},
                          {"records_out", total.records_out},
                          {"bad_records", total.bad_records},
                          {"late_records", total.late_records}};
  j["records_in"] = earlier_attempts_.records_in + total.records_in;
  j["records_processed"] = earlier_attempts_.records_processed + total.records_processed;
  j["records_out"] = earlier_attempts_.records_out + total.records_out;
  j["bad_records"] = earlier_attempts_.bad_records + total.bad_records;
  j["late_records"] = earlier_attempts_.late_records + total.late_records;
  if (!last_command_.what.empty()) {
    j["last_command"] = {{"command", last_command_.what}, {"outcome", last_command_outcome_}};
  }
  if (!commands_.empty()) {
    nlohmann::json pending = nlohmann::json::array();
    for (const auto& [token, c] : commands_) pending.push_back(c.what);
    j["commands_in_progress"] = std::move(pending);
  }
  j["records_in_per_s"] = total_in_rate;
  j["records_processed_per_s"] = total_processed_rate;
  j["watermark"] = vertices_.empty() ? INT64_MIN : min_watermark;
  nlohmann::json ck;
  ck["interval_ms"] = spec_.checkpoint_interval_ms;
  if (checkpoints_) {
    auto latest = checkpoints_->latest_completed();
    ck["latest_completed"] = latest ? latest->id.value() : 0;
    ck["pending"] = checkpoints_->num_pending();
    ck["consecutive_failures"] = checkpoints_->consecutive_failures();
    ck["tolerable_failures"] = spec_.tolerable_checkpoint_failures;
    ck["last_failure"] = checkpoints_->last_failure();
    ck["completed_total"] = checkpoints_->totals().completed;
    ck["failed_total"] = checkpoints_->totals().failed;
    ck["failovers"] = checkpoint_failovers_;  // attempts failed by too many checkpoint failures
    nlohmann::json recent = nlohmann::json::array();
    for (const CheckpointStats& st : checkpoints_->history()) {
      if (recent.size() >= 5) break;
      recent.push_back(CheckpointStatsJson(st));
    }
    ck["recent"] = std::move(recent);
  }
  j["checkpoints"] = std::move(ck);
  return j;
}

nlohmann::json JobMaster::CheckpointsJson() const {
  nlohmann::json j;
  j["job_id"] = job_id_;
  nlohmann::json list = nlohmann::json::array();
  auto add = [&](const Result<std::vector<CheckpointLocation>>& locations) {
    if (!locations.ok()) return;
    for (const CheckpointLocation& l : *locations) {
      nlohmann::json e;
      e["id"] = l.id.value();
      e["type"] = l.savepoint ? "savepoint" : "checkpoint";
      e["directory"] = l.directory;
      auto m = CheckpointStorage::ReadMetadata(l.directory);
      if (m.ok()) {
        e["timestamp_ms"] = m->timestamp_ms;
        e["parallelism"] = m->parallelism();
        e["max_parallelism"] = m->max_parallelism();
        e["bytes"] = m->TotalStateBytes();
        e["written_bytes"] = m->TotalWrittenBytes();
        e["final"] = m->final;
      }
      list.push_back(std::move(e));
    }
  };
  add(storage_.ListCompletedCheckpoints(job_id_));
  add(storage_.ListSavepoints(job_id_));
  std::sort(list.begin(), list.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["id"] < b["id"]; });
  j["completed"] = std::move(list);
  j["history"] = CheckpointHistoryJson();
  return j;
}

nlohmann::json JobMaster::CheckpointHistoryJson() const {
  // Each subtask's numbers for the newest ones only: with many subtasks they are most of the
  // document, which the control loop builds 4 times a second.
  constexpr size_t kWithSubtasks = 10;
  nlohmann::json history = nlohmann::json::array();
  if (checkpoints_) {
    for (const CheckpointStats& st : checkpoints_->history()) {
      history.push_back(CheckpointStatsJson(st, /*with_subtasks=*/history.size() < kWithSubtasks));
    }
  }
  return history;
}

}  // namespace keyflow
