#include "coordinator/job_master.h"

#include "common/key_group_assignment.h"
#include "common/logging.h"
#include "common/protocol/job_catalog.h"

namespace keyflow {

std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kDeploying: return "DEPLOYING";
    case JobState::kRunning: return "RUNNING";
    case JobState::kFinished: return "FINISHED";
    case JobState::kFailed: return "FAILED";
    case JobState::kCanceled: return "CANCELED";
  }
  return "?";
}

Result<std::unique_ptr<JobMaster>> JobMaster::Create(std::string job_id, JobSpec spec,
                                                     WorkerRegistry* workers,
                                                     ControlOutbox* outbox,
                                                     JobMasterOptions options, int64_t now_ms) {
  ASSIGN_OR_RETURN(const JobDef* def, FindJob(spec.job_name));
  ASSIGN_OR_RETURN(spec.params, ResolveJobParams(*def, spec.params));
  size_t available = workers->size();
  if (available == 0) {
    return FailedPrecondition(
        "no workers are registered with the coordinator; start some with "
        "scripts/start-cluster.sh --workers N (or keyflow-worker --coordinator ...)");
  }
  if (spec.parallelism == 0) spec.parallelism = static_cast<int32_t>(available);
  if (spec.max_parallelism == 0 && spec.parallelism > 0 &&
      spec.parallelism <= kUpperBoundMaxParallelism) {
    spec.max_parallelism = ComputeDefaultMaxParallelism(spec.parallelism);
  }
  RETURN_IF_ERROR(ValidateParallelism(spec.parallelism, spec.max_parallelism));
  if (static_cast<size_t>(spec.parallelism) > available) {
    return FailedPrecondition("the job needs " + std::to_string(spec.parallelism) +
                              " workers (one per subtask) but only " + std::to_string(available) +
                              " are registered: start more workers or lower --parallelism");
  }
  std::unique_ptr<JobMaster> jm(
      new JobMaster(std::move(job_id), std::move(spec), workers, outbox, options));
  jm->submitted_ms_ = now_ms;
  RETURN_IF_ERROR(jm->Deploy(now_ms));
  return jm;
}

Status JobMaster::Deploy(int64_t now_ms) {
  attempt_ = AttemptNumber(attempt_.value() + 1);
  state_ = JobState::kDeploying;
  deploy_started_ms_ = now_ms;
  vertices_.clear();
  std::vector<const WorkerInfo*> by_slot = workers_->BySlot();
  auto ranges = CreateKeyGroupPartitions(spec_.max_parallelism, spec_.parallelism);
  for (int32_t i = 0; i < spec_.parallelism; ++i) {
    const WorkerInfo* w = by_slot[static_cast<size_t>(i)];
    Vertex v;
    v.subtask = SubtaskIndex(i);
    v.worker = w->id;
    v.identity = w->identity;
    v.worker_description = w->Describe();
    v.key_groups = ranges[static_cast<size_t>(i)];
    vertices_.push_back(std::move(v));
  }
  for (const Vertex& v : vertices_) {
    DeployTask d;
    d.attempt = attempt_;
    d.job_id = job_id_;
    d.spec = spec_;
    d.subtask = v.subtask;
    d.key_groups = v.key_groups;
    outbox_->Send(v.identity, d);
  }
  KF_LOG_INFO("job deploying job={} attempt={} parallelism={} max_parallelism={}", job_id_,
              attempt_.value(), spec_.parallelism, spec_.max_parallelism);
  return Status::Ok();
}

JobMaster::Vertex* JobMaster::VertexOf(SubtaskIndex s, AttemptNumber a, WorkerId w) {
  if (a != attempt_ || terminal()) return nullptr;  // stale deployment
  if (s.value() < 0 || static_cast<size_t>(s.value()) >= vertices_.size()) return nullptr;
  Vertex& v = vertices_[static_cast<size_t>(s.value())];
  return v.worker == w ? &v : nullptr;
}

void JobMaster::OnTaskDeployed(const TaskDeployed& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr || state_ != JobState::kDeploying) return;
  if (m.input_endpoints.size() != vertices_.size()) {
    Fail("subtask " + std::to_string(m.subtask.value()) + " reported " +
             std::to_string(m.input_endpoints.size()) + " input endpoints, expected " +
             std::to_string(vertices_.size()),
         now_ms);
    return;
  }
  v->deployed = true;
  v->input_endpoints = m.input_endpoints;
  for (const Vertex& x : vertices_) {
    if (!x.deployed) return;
  }
  StartTask start;
  start.attempt = attempt_;
  for (const Vertex& x : vertices_) start.input_endpoints.push_back(x.input_endpoints);
  for (const Vertex& x : vertices_) outbox_->Send(x.identity, start);
  state_ = JobState::kRunning;
  running_since_ms_ = now_ms;
  KF_LOG_INFO("job running job={} attempt={} deploy_ms={}", job_id_, attempt_.value(),
              now_ms - deploy_started_ms_);
}

void JobMaster::OnTaskFinished(const TaskFinished& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr) return;
  v->finished = true;
  v->final_metrics = m.metrics;
  KF_LOG_INFO("subtask finished job={} subtask={} records_in={} records_out={}", job_id_,
              m.subtask.value(), m.metrics.records_in, m.metrics.records_out);
  for (const Vertex& x : vertices_) {
    if (!x.finished) return;
  }
  state_ = JobState::kFinished;
  ended_ms_ = now_ms;
  KF_LOG_INFO("job finished job={} attempt={} duration_ms={}", job_id_, attempt_.value(),
              now_ms - submitted_ms_);
}

void JobMaster::OnTaskFailed(const TaskFailed& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr) return;
  Fail("subtask " + std::to_string(m.subtask.value()) + " on " + v->worker_description +
           " failed: " + m.reason,
       now_ms);
}

void JobMaster::OnWorkerLost(const WorkerInfo& w, const std::string& why, int64_t now_ms) {
  if (terminal() || !Uses(w.id)) return;
  for (const Vertex& v : vertices_) {
    if (v.worker == w.id && v.finished) return;  // its work is done and reported
  }
  Fail(w.Describe() + " was lost: " + why, now_ms);
}

void JobMaster::OnTick(int64_t now_ms) {
  if (state_ == JobState::kDeploying && now_ms - deploy_started_ms_ > options_.deploy_timeout_ms) {
    std::string missing;
    for (const Vertex& v : vertices_) {
      if (!v.deployed) missing += (missing.empty() ? "" : ", ") + v.worker_description;
    }
    Fail("deployment timed out after " + std::to_string(options_.deploy_timeout_ms) +
             " ms waiting for " + missing,
         now_ms);
  }
}

void JobMaster::Cancel(const std::string& reason, int64_t now_ms) {
  if (terminal()) return;
  CancelAll(reason);
  state_ = JobState::kCanceled;
  failure_reason_ = reason;
  ended_ms_ = now_ms;
  KF_LOG_INFO("job canceled job={} reason={}", job_id_, reason);
}

void JobMaster::Fail(const std::string& reason, int64_t now_ms) {
  if (terminal()) return;
  CancelAll("job failed: " + reason);
  state_ = JobState::kFailed;
  failure_reason_ = reason;
  ended_ms_ = now_ms;
  KF_LOG_ERROR("job failed job={} attempt={} reason={}", job_id_, attempt_.value(), reason);
}

void JobMaster::CancelAll(const std::string& reason) {
  CancelTask c;
  c.attempt = attempt_;
  c.reason = reason;
  for (const Vertex& v : vertices_) {
    if (workers_->Find(v.worker) != nullptr) outbox_->Send(v.identity, c);
  }
}

bool JobMaster::Uses(WorkerId worker) const {
  for (const Vertex& v : vertices_) {
    if (v.worker == worker) return true;
  }
  return false;
}

nlohmann::json JobMaster::StatusJson(int64_t now_ms) const {
  nlohmann::json j;
  j["job_id"] = job_id_;
  j["job"] = spec_.job_name;
  j["state"] = JobStateName(state_);
  j["attempt"] = attempt_.value();
  j["parallelism"] = spec_.parallelism;
  j["max_parallelism"] = spec_.max_parallelism;
  j["input"] = spec_.input;
  j["output"] = spec_.output_dir;
  j["failure"] = failure_reason_;
  j["duration_ms"] = (terminal() ? ended_ms_ : now_ms) - submitted_ms_;
  nlohmann::json subtasks = nlohmann::json::array();
  SubtaskMetrics total;
  double total_in_rate = 0, total_processed_rate = 0;
  int64_t min_watermark = INT64_MAX;
  for (const Vertex& v : vertices_) {
    const WorkerInfo* w = workers_->Find(v.worker);
    SubtaskMetrics m = v.finished ? v.final_metrics : (w ? w->metrics : SubtaskMetrics{});
    nlohmann::json s;
    s["subtask"] = v.subtask.value();
    s["worker"] = v.worker_description;
    s["key_groups"] = {v.key_groups.start(), v.key_groups.end()};
    s["state"] = v.finished ? "FINISHED" : (v.deployed ? "RUNNING" : "DEPLOYING");
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
  j["records_in"] = total.records_in;
  j["records_processed"] = total.records_processed;
  j["records_out"] = total.records_out;
  j["bad_records"] = total.bad_records;
  j["late_records"] = total.late_records;
  j["records_in_per_s"] = total_in_rate;
  j["records_processed_per_s"] = total_processed_rate;
  j["watermark"] = vertices_.empty() ? INT64_MIN : min_watermark;
  return j;
}

}  // namespace keyflow
