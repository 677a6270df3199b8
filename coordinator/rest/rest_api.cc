#include "coordinator/rest/rest_api.h"

#include <charconv>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/protocol/control_messages.h"
#include "common/version.h"
#include "coordinator/rest/rest_auth.h"

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
          {"rest", Value(st, "rest")},
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

// ?limit=N&since_id=ID of GET /api/v1/job/checkpoints.
struct HistoryFilter {
  int64_t limit = static_cast<int64_t>(kCheckpointHistory);
  int64_t since_id = 0;
};

// The query parameter `name` as an integer >= `min` (absent: `fallback`).
Result<int64_t> IntQuery(const HttpRequest& r, const char* name, int64_t min, int64_t fallback,
                         const char* example) {
  auto it = r.query.find(name);
  if (it == r.query.end()) return fallback;
  int64_t v = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min) {
    return InvalidArgument("?" + std::string(name) + "= must be an integer >= " +
                           std::to_string(min) + ", got \"" + text + "\": e.g. " + example);
  }
  return v;
}

Result<HistoryFilter> ParseHistoryFilter(const HttpRequest& r) {
  for (const auto& [key, value] : r.query) {
    if (key != "limit" && key != "since_id") {
      return InvalidArgument("unknown query parameter \"" + key +
                             "\": /api/v1/job/checkpoints takes limit and since_id, e.g. "
                             "?since_id=41&limit=20");
    }
  }
  HistoryFilter f;
  KF_ASSIGN_OR_RETURN(f.limit, IntQuery(r, "limit", 1, f.limit, "?limit=20"));
  KF_ASSIGN_OR_RETURN(f.since_id, IntQuery(r, "since_id", 0, 0, "?since_id=41"));
  return f;
}

// The checkpoint statistics; "history" (newest first, at most kCheckpointHistory kept) holds
// the `limit` newest with an id above `since_id`.
json Checkpoints(const json& job, const HistoryFilter& f) {
  json out = Value(job, "checkpoints", json::object());
  out["job_id"] = Value(job, "job_id");
  json history = json::array();
  for (const json& c : Value(out, "history", json::array())) {
    if (static_cast<int64_t>(history.size()) >= f.limit) break;
    json id = Value(c, "id");
    if (!id.is_number_integer() || id.get<int64_t>() <= f.since_id) break;  // newest first
    history.push_back(c);
  }
  out["history"] = std::move(history);
  out["history_kept"] = kCheckpointHistory;
  return out;
}

RestRouter::Handler CheckpointsHandler(const RestContext& c) {
  return [&c](const HttpRequest& request) {
    Result<HistoryFilter> f = ParseHistoryFilter(request);
    if (!f.ok()) return JsonError(400, f.status().message());
    return Read(c, true, [f = *f](const StatusSnapshot&, const json* job) {
      return Checkpoints(*job, f);
    })(request);
  };
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

// ---- commands ---------------------------------------------------------------------------------

// What a command endpoint makes of its JSON body (an object; {} when the body is empty).
using MakeCommand = std::function<Result<ControlMessage>(const json& body)>;

// InvalidArgument unless every field of `body` is one of `allowed`.
Status OnlyFields(const json& body, std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : body.items()) {
    bool known = false;
    std::string list;
    for (const char* a : allowed) {
      known = known || key == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!known) {
      return InvalidArgument(
          "unknown field \"" + key + "\" in the request body: " +
          (list.empty() ? std::string("this command takes none") : "this command takes " + list));
    }
  }
  return Status::Ok();
}

// body[key] as a string ("" if absent); InvalidArgument if it is not one.
Result<std::string> OptionalString(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return InvalidArgument(std::string("\"") + key + "\" must be a string");
  }
  return it->get<std::string>();
}

Result<bool> OptionalBool(const json& body, const char* key, bool fallback) {
  auto it = body.find(key);
  if (it == body.end()) return fallback;
  if (!it->is_boolean())
    return InvalidArgument(std::string("\"") + key + "\" must be true or false");
  return it->get<bool>();
}

// The answer to a command: 200 with the Coordinator's reply, 202 when it is still running after
// the wait, 503 when it could not be handed over; a refusal by its class (HttpStatusOfRefusal).
HttpResponse CommandOutcome(const Result<Reply>& r) {
  if (!r.ok()) {
    const std::string m = r.status().message();  // a copy: status() may be a temporary
    if (r.status().code() == StatusCode::kDeadlineExceeded &&
        m.find("may still be running") != std::string::npos) {
      return JsonResponse(202, {{"accepted", true}, {"message", m}});
    }
    return JsonError(503, m);
  }
  if (!r->ok) return JsonError(HttpStatusOfRefusal(r->code), r->message);
  json result = r->json.empty() ? json(nullptr) : json::parse(r->json, nullptr, false);
  if (result.is_discarded()) result = r->json;
  return JsonResponse(200, {{"ok", true}, {"message", r->message}, {"result", result}});
}

HttpResponse Unauthorized(const Status& why) {
  HttpResponse r = JsonError(401, why.message());
  r.headers["WWW-Authenticate"] = "Bearer realm=\"keyflow\"";
  return r;
}

RestRouter::Handler Command(const RestContext& c, MakeCommand make) {
  return [&c, make = std::move(make)](const HttpRequest& request) {
    // The access check admitted an operator (RestAccessCheck); without one nothing may command.
    if (c.bridge == nullptr || !request.caller || request.caller->role != RestRole::kOperator) {
      return JsonError(503, "this coordinator does not take REST commands: use the keyflow CLI");
    }
    json body = request.body.empty()
                    ? json::object()
                    : json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) {
      return JsonError(400, "the request body must be a JSON object, e.g. {} (or empty)");
    }
    Result<ControlMessage> msg = make(body);
    if (!msg.ok()) return JsonError(400, msg.status().message());
    ControlCommandBridge::Caller caller{PeerIdentity{Role::kOperator, request.caller->name},
                                        request.remote_address};
    return CommandOutcome(c.bridge->Submit(*std::move(msg), std::move(caller), c.command_timeout));
  };
}

Result<ControlMessage> CancelCommand(const json& body) {
  KF_RETURN_IF_ERROR(OnlyFields(body, {}));
  return ControlMessage(CancelJob{});
}

Result<ControlMessage> StopCommand(const json& body) {
  KF_RETURN_IF_ERROR(OnlyFields(body, {"directory"}));
  KF_ASSIGN_OR_RETURN(std::string dir, OptionalString(body, "directory"));
  return ControlMessage(StopJob{dir});
}

Result<ControlMessage> SavepointCommand(const json& body) {
  KF_RETURN_IF_ERROR(OnlyFields(body, {"directory"}));
  KF_ASSIGN_OR_RETURN(std::string dir, OptionalString(body, "directory"));
  CheckpointRequest r;
  r.savepoint = true;
  r.directory = dir;
  return ControlMessage(r);
}

Result<ControlMessage> CheckpointCommand(const json& body) {
  KF_RETURN_IF_ERROR(OnlyFields(body, {}));
  return ControlMessage(CheckpointRequest{});
}

Result<ControlMessage> RescaleCommand(const json& body) {
  KF_RETURN_IF_ERROR(OnlyFields(body, {"parallelism", "plan_only", "wait_for_workers_ms", "via"}));
  RescaleRequest r;
  auto p = body.find("parallelism");
  if (p == body.end() || !p->is_number_integer() || p->get<int64_t>() < 1 ||
      p->get<int64_t>() > 32768) {
    return InvalidArgument(
        "\"parallelism\" must be the new number of subtasks, an integer >= 1, e.g. "
        "{\"parallelism\": 3}");
  }
  r.new_parallelism = p->get<int32_t>();
  KF_ASSIGN_OR_RETURN(r.plan_only, OptionalBool(body, "plan_only", false));
  if (auto v = body.find("via"); v != body.end()) {
    const std::string via = v->is_string() ? v->get<std::string>() : "";
    if (via == "checkpoint") {
      r.via = RescaleRequest::Via::kCheckpoint;
    } else if (via == "savepoint") {
      r.via = RescaleRequest::Via::kSavepoint;
    } else if (via != "auto") {
      return InvalidArgument("\"via\" must be \"auto\", \"checkpoint\" or \"savepoint\"");
    }
  }
  if (auto w = body.find("wait_for_workers_ms"); w != body.end()) {
    if (!w->is_number_integer() || w->get<int64_t>() < 0) {
      return InvalidArgument("\"wait_for_workers_ms\" must be an integer >= 0");
    }
    r.wait_for_workers_ms = w->get<int64_t>();
  }
  return ControlMessage(r);
}

Result<ControlMessage> LoggingCommand(const json& body) {
  KF_RETURN_IF_ERROR(OnlyFields(body, {"level", "workers"}));
  KF_ASSIGN_OR_RETURN(std::string level, OptionalString(body, "level"));
  if (level.empty()) {
    return InvalidArgument(
        "\"level\" is required: one of trace, debug, info, warn, error, e.g. "
        "{\"level\": \"debug\", \"workers\": true}");
  }
  SetLogLevelRequest r;
  r.level = level;  // the Coordinator validates it, exactly as for `keyflow log-level`
  KF_ASSIGN_OR_RETURN(r.workers, OptionalBool(body, "workers", true));
  return ControlMessage(r);
}

}  // namespace

int HttpStatusOfRefusal(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kIoError:
    case StatusCode::kCorruption:
    case StatusCode::kDataLoss:
    case StatusCode::kInternal:
      return 500;
    default:  // kFailedPrecondition, kAlreadyExists, kAborted, unclassified (kOk), ...
      return 409;
  }
}

RestRouter::AccessCheck RestAccessCheck(const RestContext& c) {
  return [&c](HttpRequest& request, RestAccess access) -> std::optional<HttpResponse> {
    if (!c.secure) {
      if (access != RestAccess::kCommand) return std::nullopt;
      return JsonError(403,
                       "this cluster runs --insecure, so the REST API's commands are off "
                       "(anyone could send them): use the keyflow CLI, or restart the cluster "
                       "with --keys DIR (scripts/start-cluster.sh does by default)");
    }
    if (c.auth == nullptr) {
      return JsonError(503,
                       "this coordinator cannot check REST tokens: use the keyflow CLI, or "
                       "restart it with --keys DIR");
    }
    Result<RestCaller> who = c.auth->Authenticate(request, access);
    if (!who.ok()) return Unauthorized(who.status());
    if (access == RestAccess::kCommand && who->role != RestRole::kOperator) {
      return JsonError(403, "the token of viewer " + who->name +
                                " may only read: this command needs an operator's token (the "
                                "token of an operator client key, KEYS/clients/NAME.token; "
                                "`keyflow keys add-client NAME` creates one)");
    }
    request.caller = *std::move(who);
    return std::nullopt;
  };
}

void AddApiRoutes(RestRouter& router, const RestContext& c) {
  // Liveness, as Flink's /healthz-style probes: no token, and nothing but the snapshot's age.
  router.Add(
      "GET", "/api/v1/health",
      [&c](const HttpRequest&) {
        auto s = c.snapshots->Latest();
        if (s == nullptr) {
          return JsonError(503,
                           "the coordinator has not published its status yet: retry in a "
                           "second");
        }
        return JsonResponse(200, {{"status", "ok"}, {"snapshot", SnapshotInfo(c, *s)}});
      },
      RestAccess::kPublic);
  router.Add("GET", "/api/v1/overview", Read(c, false, Overview));
  router.Add("GET", "/api/v1/workers", Read(c, false, [](const StatusSnapshot& s, const json*) {
               return json{{"workers", Value(s.status, "workers", json::array())}};
             }));
  router.Add("GET", "/api/v1/job", Read(c, true, JobWithoutSubtasks));
  router.Add("GET", "/api/v1/job/subtasks", Read(c, true, Subtasks));
  router.Add("GET", "/api/v1/job/checkpoints", CheckpointsHandler(c));
  router.Add("GET", "/api/v1/job/rescale", Read(c, true, Rescale));

  router.Add("POST", "/api/v1/job/cancel", Command(c, CancelCommand), RestAccess::kCommand);
  router.Add("POST", "/api/v1/job/stop", Command(c, StopCommand), RestAccess::kCommand);
  router.Add("POST", "/api/v1/job/savepoints", Command(c, SavepointCommand), RestAccess::kCommand);
  router.Add("POST", "/api/v1/job/checkpoints", Command(c, CheckpointCommand),
             RestAccess::kCommand);
  router.Add("POST", "/api/v1/job/rescale", Command(c, RescaleCommand), RestAccess::kCommand);
  router.Add("PUT", "/api/v1/logging", Command(c, LoggingCommand), RestAccess::kCommand);
}

}  // namespace keyflow
