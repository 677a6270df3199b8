// Coordinator: the job commands — submit (checks, job id, the job library), fetching a job
// library, checkpoint and savepoint requests, rescale — and resuming the jobs of an earlier
// coordinator process from their job records. The class is declared in coordinator.h; this file
// holds its job part.
#include "coordinator/coordinator.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <random>

#include "common/check.h"
#include "common/file_io.h"
#include "common/input/input_spec.h"
#include "common/input/kafka_sink_spec.h"
#include "common/logging/logging.h"
#include "coordinator/blob_store.h"
#include "coordinator/path_rules.h"
#include "coordinator/worker_key_check.h"

namespace keyflow {
namespace {

// "count-window-20261129-185959"
std::string MakeJobId(const std::string& name, Timestamp now) {
  std::time_t secs = static_cast<std::time_t>(now.millis() / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return name + "-" + buf;
}

// Savepoint directories without `_metadata` (never completed; a coordinator restart aborted
// them): the job directory's savepoint-<n> and the user-given targets of pending commands.
void CleanAbortedSavepoints(const CheckpointStorage& storage, const JobRecord& record) {
  std::vector<std::string> dirs;
  const std::string job_dir = storage.JobDirectory(record.job_id);
  if (auto names = ListDirectory(job_dir); names.ok()) {
    for (const std::string& n : *names) {
      if (n.rfind("savepoint-", 0) == 0) dirs.push_back(job_dir + "/" + n);
    }
  }
  for (const JobCommand& c : record.pending_commands) {
    if (!c.directory.empty()) dirs.push_back(c.directory);
  }
  for (const std::string& dir : dirs) {
    if (!PathExists(dir) || PathExists(CheckpointStorage::MetadataPath(dir))) continue;
    Status s = storage.DeleteCheckpoint(dir);
    if (s.ok()) {
      KF_LOG_WARN("deleted {}: a savepoint the coordinator restart aborted (it has no _metadata)",
                  dir);
      continue;
    }
    Status marked = WriteFileAtomically(
        dir + "/_ABORTED",
        "this savepoint was aborted by a coordinator restart and never completed (no "
        "_metadata); it cannot be restored: delete this directory\n");
    KF_LOG_WARN("cannot delete {}, a savepoint the coordinator restart aborted ({}); {}", dir,
                s.message(),
                marked.ok() ? "marked it with an _ABORTED file" : "could not mark it either");
  }
}

}  // namespace

void Coordinator::HandleSubmit(const std::string& identity, const SubmitJob& m, int64_t now_ms) {
  if (job_ != nullptr && !job_->terminal()) {
    SendReply(identity, AlreadyExists("job " + job_->job_id() + " is still " +
                                      std::string(JobStateName(job_->state())) +
                                      ": this is a session cluster that runs one job at a time; "
                                      "wait for it or stop it with `keyflow cancel`"));
    return;
  }
  // A CLI of another version may not have validated --input. A generator or Kafka spec is checked
  // in full here, a monitored directory once its path is known to be allowed; files when the job
  // deploys (the split enumerator lists them).
  if (InputSpec::IsGenerator(m.spec.input) || InputSpec::IsKafka(m.spec.input) ||
      m.spec.input.empty()) {
    if (Status s = InputSpec::Parse(m.spec.input).status(); !s.ok()) {
      SendReply(identity, s, "job rejected: ");
      return;
    }
  }
  if (KafkaSinkSpec::Names(m.spec.output_dir)) {
    Result<KafkaSinkSpec> sink = KafkaSinkSpec::Parse(m.spec.output_dir);
    Status s =
        sink.ok() ? sink->CheckAgainstCheckpointing(m.spec.checkpoint_interval_ms) : sink.status();
    if (!s.ok()) {
      SendReply(identity, s, "job rejected: ");
      return;
    }
  }
  // Before anything is written: the blob store and the job directory live under its paths.
  if (Status s = CheckAllowedJobPaths(m.spec, options_.job.allowed_paths); !s.ok()) {
    SendReply(identity, s, "job rejected: ");
    return;
  }
  if (InputSpec::IsMonitor(m.spec.input)) {
    if (Status s = InputSpec::Parse(m.spec.input).status(); !s.ok()) {
      SendReply(identity, s, "job rejected: ");
      return;
    }
  }
  if (!m.spec.job_library.is_default() || !m.job_library_bytes.empty()) {
    // Stored (verified, by content hash) before anything is deployed: every deployment of this
    // job, also after a coordinator restart, fetches it from there.
    BlobStore blobs(CheckpointRootOf(m.spec));
    if (Status s = blobs.Store(m.spec.job_library, m.job_library_bytes); !s.ok()) {
      KF_LOG_WARN("job library refused: {}", s.message());
      SendReply(identity, s, "job rejected: ");
      return;
    }
    KF_LOG_INFO("job library {} stored sha256={} bytes={} dir={}", m.spec.job_library.file_name,
                m.spec.job_library.sha256, m.spec.job_library.size_bytes, blobs.directory());
  }
  // Kept for the workers' fetches (a resubmission without bytes: read on the first fetch).
  job_library_sha256_.clear();
  job_library_bytes_.clear();
  if (!m.job_library_bytes.empty()) {
    job_library_sha256_ = m.spec.job_library.sha256;
    job_library_bytes_ = m.job_library_bytes;
  }
  ++jobs_submitted_;
  std::string job_id = MakeJobId(m.spec.job_name, wall_clock_->Now());
  {
    // Two submissions in the same second, or a directory left by an earlier coordinator.
    CheckpointStorage storage(CheckpointRootOf(m.spec));
    std::string base = job_id;
    for (int n = 2;
         PathExists(storage.JobDirectory(job_id)) || (job_ != nullptr && job_->job_id() == job_id);
         ++n) {
      job_id = base + "-" + std::to_string(n);
    }
  }
  auto jm =
      JobMaster::Create(job_id, m.spec, &workers_, outbox_, wall_clock_, options_.job, now_ms);
  if (!jm.ok()) {
    SendReply(identity, jm.status(), "job rejected: ");
    return;
  }
  job_ = std::move(jm).value();
  nlohmann::json j;
  j["job_id"] = job_id;
  j["parallelism"] = job_->spec().parallelism;
  j["max_parallelism"] = job_->spec().max_parallelism;
  SendReply(identity, true, "job " + job_id + " submitted", j.dump());
}

const std::string& Coordinator::CheckpointRootOf(const JobSpec& spec) const {
  return spec.checkpoint_dir.empty() ? options_.job.checkpoint_root : spec.checkpoint_dir;
}

void Coordinator::HandleFetchJobLibrary(const std::string& identity, const FetchJobLibrary& m) {
  JobLibraryBlob reply;
  reply.attempt = m.attempt;
  reply.sha256 = m.sha256;
  if (job_ == nullptr || job_->spec().job_library.is_default() ||
      job_->spec().job_library.sha256 != m.sha256) {
    // Only the current job's library is served: nothing else is needed for a deployment.
    reply.error = "the coordinator's current job does not use job library " + m.sha256;
  } else {
    const JobLibraryRef& ref = job_->spec().job_library;
    if (job_library_sha256_ != ref.sha256) {  // after a coordinator restart: read it once
      auto bytes = BlobStore(CheckpointRootOf(job_->spec())).Read(ref);
      if (bytes.ok()) {
        job_library_sha256_ = ref.sha256;
        job_library_bytes_ = std::move(bytes).value();
      } else {
        reply.error = bytes.status().message();
      }
    }
    if (reply.error.empty()) {
      reply.bytes = job_library_bytes_;
      KF_LOG_INFO("sending job library {} sha256={} bytes={} to worker {}", ref.file_name,
                  ref.sha256, reply.bytes.size(), m.worker.value());
    } else {
      KF_LOG_ERROR("worker {} asked for job library {}: {}", m.worker.value(), ref.sha256,
                   reply.error);
    }
  }
  outbox_->Send(identity, reply);
}

void Coordinator::HandleCheckpointRequest(const std::string& identity, const CheckpointRequest& m,
                                          int64_t now_ms) {
  if (job_ == nullptr || job_->terminal()) {
    SendReply(identity, false, "no job is running");
    return;
  }
  std::string what = m.savepoint ? "savepoint" : "checkpoint";
  auto end = TrackCommand({what, "keyflow " + what, m.directory, 0});
  Status s = job_->RequestCheckpoint(
      m.savepoint, m.directory,
      [this, identity, what, end](Result<CheckpointLocation> done, int64_t) {
        if (!done.ok()) {
          end("failed: " + done.status().message());
          SendReply(identity, done.status(), what + " failed: ");
          return;
        }
        end("completed: " + done->directory);
        nlohmann::json j;
        j["id"] = done->id.value();
        j["directory"] = done->directory;
        SendReply(identity, true,
                  what + " " + std::to_string(done->id.value()) + " completed: " + done->directory,
                  j.dump());
      },
      now_ms);
  if (!s.ok()) {
    end("");
    SendReply(identity, s);
  }
}

void Coordinator::HandleRescale(const std::string& identity, const RescaleRequest& m,
                                int64_t now_ms) {
  if (job_ == nullptr || job_->terminal()) {
    SendReply(identity, false, "no job is running");
    return;
  }
  if (m.plan_only) {
    auto plan = job_->PlanRescaleJson(m.new_parallelism);
    if (!plan.ok()) {
      SendReply(identity, plan.status());
    } else {
      SendReply(identity, true, "", plan->dump());
    }
    return;
  }
  int32_t target = m.new_parallelism;
  std::string job_id = job_->job_id();
  auto end = TrackCommand({"rescale to " + std::to_string(target),
                           "keyflow rescale " + std::to_string(target) +
                               (m.via == RescaleRequest::Via::kCheckpoint  ? " --via checkpoint"
                                : m.via == RescaleRequest::Via::kSavepoint ? " --via savepoint"
                                                                           : ""),
                           "", target});
  Status s = job_->Rescale(
      target, m.wait_for_workers_ms,
      [this, identity, target, job_id, end](const Status& result) {
        end(result.ok() ? std::string("completed") : "failed: " + result.message());
        if (result.ok()) {
          SendReply(identity, true,
                    "job " + job_id + " runs at parallelism " + std::to_string(target));
        } else {
          SendReply(identity, result);
        }
      },
      now_ms, m.via);
  if (!s.ok()) {
    end("");
    SendReply(identity, s);
  }
}

Status Coordinator::ResumeJobs(int64_t now_ms) {
  CheckpointStorage storage(options_.job.checkpoint_root);
  KF_ASSIGN_OR_RETURN(std::vector<JobRecord> records, storage.ListJobRecords());
  const JobRecord* newest = nullptr;
  for (const JobRecord& r : records) {
    if (r.state != "RUNNING") continue;
    if (newest == nullptr || r.job_id > newest->job_id) newest = &r;
  }
  if (newest == nullptr) return Status::Ok();
  KF_LOG_INFO("found job {} that was running when the coordinator stopped: resuming it",
              newest->job_id);
  JobRecord record = *newest;
  CleanAbortedSavepoints(storage, record);
  for (const JobCommand& c : record.pending_commands) {
    // A rescale whose new attempt was deployed already (the record has its parallelism) is
    // resumed at P'; anything else in flight is gone with the old process.
    bool completed = c.target_parallelism > 0 && record.spec.parallelism == c.target_parallelism;
    record.last_command = c;
    record.last_command_outcome =
        completed ? "completed before the coordinator restarted — the job runs at parallelism " +
                        std::to_string(record.spec.parallelism)
                  : "aborted by a coordinator restart — the job runs at parallelism " +
                        std::to_string(record.spec.parallelism) + "; run `" + c.retry + "` again";
    KF_LOG_WARN("job {}: the {} in progress when the coordinator stopped was {}", record.job_id,
                c.what, record.last_command_outcome);
  }
  if (!record.pending_commands.empty()) {
    record.pending_commands.clear();
    if (Status s = storage.WriteJobRecord(record); !s.ok()) {
      KF_LOG_WARN("cannot write the job record: {}", s.message());
    }
  }
  KF_ASSIGN_OR_RETURN(
      job_, JobMaster::Resume(record, &workers_, outbox_, wall_clock_, options_.job, now_ms));
  return Status::Ok();
}

}  // namespace keyflow
