#include "coordinator/rest/rest_api.h"

#include <string>

#include "common/clock.h"
#include "common/protocol/control_messages.h"
#include "common/version.h"

namespace keyflow {
namespace {

using nlohmann::json;

constexpr char kNoJob[] = "no job has run on this coordinator yet: submit one with `keyflow run`";

// The latest snapshot, or the 503 a handler returns before the first publication.
std::shared_ptr<const StatusSnapshot> Snapshot(const RestContext& c, HttpResponse* unavailable) {
  auto s = c.snapshots->Latest();
  if (s == nullptr) {
    *unavailable = JsonError(503,
                             "the coordinator has not published its status yet: retry in a "
                             "second");
  }
  return s;
}

// The job's document, or a 404 when no job has run.
const json* Job(const StatusSnapshot& s, HttpResponse* missing) {
  auto it = s.status.find("job");
  if (it == s.status.end() || it->is_null()) {
    *missing = JsonError(404, kNoJob);
    return nullptr;
  }
  return &*it;
}

json Value(const json& j, const char* key, json fallback = nullptr) {
  auto it = j.find(key);
  return it == j.end() ? fallback : *it;
}

json SnapshotInfo(const RestContext& c, const StatusSnapshot& s) {
  static const SystemClock system_clock;
  const Clock* clock = c.clock != nullptr ? c.clock : &system_clock;
  return {{"published_at_ms", s.published_at_ms},
          {"age_ms", clock->Now().millis() - s.published_at_ms},
          {"sequence", s.sequence}};
}

// A read-only endpoint: `body` builds the answer from the snapshot (and its job, if `needs_job`).
using SnapshotBody = std::function<json(const StatusSnapshot&, const json* job)>;
RestRouter::Handler Read(const RestContext& c, bool needs_job, SnapshotBody body) {
  return [&c, needs_job, body = std::move(body)](const HttpRequest&) {
    HttpResponse err;
    auto s = Snapshot(c, &err);
    if (s == nullptr) return err;
    const json* job = nullptr;
    if (needs_job && (job = Job(*s, &err)) == nullptr) return err;
    json out = body(*s, job);
    out["snapshot"] = SnapshotInfo(c, *s);
    return JsonResponse(200, out);
  };
}

json KeyGroupRanges(const json& job) {
  json ranges = json::array();
  for (const json& st : Value(job, "subtasks", json::array())) {
    ranges.push_back({{"subtask", Value(st, "subtask")},
                      {"key_groups", Value(st, "key_groups")},
                      {"worker", Value(st, "worker")}});
  }
  return ranges;
}

json JobSummary(const json& job) {
  if (job.is_null()) return nullptr;
  return {{"job_id", Value(job, "job_id")},
          {"name", Value(job, "job")},
          {"state", Value(job, "state")},
          {"attempt", Value(job, "attempt")},
          {"parallelism", Value(job, "parallelism")},
          {"restarts", Value(job, "restarts")},
          {"duration_ms", Value(job, "duration_ms")}};
}

json Overview(const StatusSnapshot& s, const json*) {
  const json& st = s.status;
  json workers = Value(st, "workers", json::array());
  json slots = json::array();
  for (const json& w : workers) slots.push_back(Value(w, "slot"));
  json job = Value(st, "job");
  return {{"coordinator", Value(st, "coordinator")},
          {"workers", workers.size()},
          {"slots", slots},
          {"job", JobSummary(job)},
          {"versions",
           {{"keyflow", kKeyflowVersion},
            {"git_revision", kKeyflowGitRevision},
            {"control_protocol", kControlProtocolVersion},
            {"rest_api", "v1"}}}};
}

json JobWithoutSubtasks(const StatusSnapshot&, const json* job) {
  json out = *job;
  out.erase("subtasks");
  out["key_group_ranges"] = KeyGroupRanges(*job);
  return out;
}

json Subtasks(const StatusSnapshot&, const json* job) {
  return {{"job_id", Value(*job, "job_id")},
          {"attempt", Value(*job, "attempt")},
          {"parallelism", Value(*job, "parallelism")},
          {"subtasks", Value(*job, "subtasks", json::array())}};
}

json Checkpoints(const StatusSnapshot&, const json* job) {
  json out = Value(*job, "checkpoints", json::object());
  out["job_id"] = Value(*job, "job_id");
  return out;
}

json Rescale(const StatusSnapshot&, const json* job) {
  json r = Value(*job, "rescale");
  return {{"job_id", Value(*job, "job_id")},
          {"in_progress", !r.is_null()},
          {"parallelism", Value(*job, "parallelism")},
          {"target", r.is_null() ? json(nullptr) : Value(r, "target")},
          {"phase", r.is_null() ? json(nullptr) : Value(r, "phase")},
          {"elapsed_ms", r.is_null() ? json(nullptr) : Value(r, "elapsed_ms")},
          {"state", Value(*job, "state")},
          {"last_command", Value(*job, "last_command")},
          {"commands_in_progress", Value(*job, "commands_in_progress", json::array())}};
}

}  // namespace

void AddApiRoutes(RestRouter& router, const RestContext& c) {
  router.Add("GET", "/api/v1/health", [&c](const HttpRequest&) {
    auto s = c.snapshots->Latest();
    if (s == nullptr) {
      return JsonError(503,
                       "the coordinator has not published its status yet: retry in a "
                       "second");
    }
    return JsonResponse(200, {{"status", "ok"}, {"snapshot", SnapshotInfo(c, *s)}});
  });
  router.Add("GET", "/api/v1/overview", Read(c, false, Overview));
  router.Add("GET", "/api/v1/workers", Read(c, false, [](const StatusSnapshot& s, const json*) {
               return json{{"workers", Value(s.status, "workers", json::array())}};
             }));
  router.Add("GET", "/api/v1/job", Read(c, true, JobWithoutSubtasks));
  router.Add("GET", "/api/v1/job/subtasks", Read(c, true, Subtasks));
  router.Add("GET", "/api/v1/job/checkpoints", Read(c, true, Checkpoints));
  router.Add("GET", "/api/v1/job/rescale", Read(c, true, Rescale));
}

}  // namespace keyflow
