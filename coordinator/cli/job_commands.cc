#include "coordinator/cli/job_commands.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/logging/logging.h"
#include "common/process/command_line.h"
#include "coordinator/cli/checkpoint_inspect_command.h"
#include "coordinator/cli/coordinator_requests.h"
#include "coordinator/cli/job_status_text.h"
#include "coordinator/path_rules.h"

namespace keyflow::cli {

int RunStatusCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string endpoint;
  bool json = false;
  opts.add_options()("json", po::bool_switch(&json), "print the raw status as JSON");
  AddCoordinatorOption(&opts, &endpoint);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow status [--json]\nShows workers, the job, its subtasks "
                        "with key-group ranges, throughput, watermarks and backpressure.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  auto reply = Ask(endpoint, StatusRequest{}, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  nlohmann::json st = nlohmann::json::parse(reply->json, nullptr, false);
  if (json) {
    std::cout << st.dump(2) << "\n";
    return kExitOk;
  }
  PrintStatus(std::move(st), std::cout);
  return kExitOk;
}

int RunCancelCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string endpoint;
  AddCoordinatorOption(&opts, &endpoint);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow cancel\nCancels the running job.", opts, {}, args, &vm,
                        &code)) {
    return code;
  }
  auto reply = Ask(endpoint, CancelJob{}, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  std::cout << reply->message << "\n";
  return kExitOk;
}

int RunKeysReloadCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string endpoint;
  AddCoordinatorOption(&opts, &endpoint);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow keys reload --coordinator EP --keys DIR\n"
                        "Makes the coordinator re-read its trusted keys (DIR/workers/*.pub, "
                        "DIR/clients/*.pub of its\n--keys), like SIGHUP: a removed .pub file "
                        "revokes that key (its workers are dropped,\nits new connections "
                        "refused). Needs an operator client key.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  auto reply = Ask(endpoint, ReloadKeys{}, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  std::cout << reply->message << "\n";
  return kExitOk;
}

int RunLogLevelCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string endpoint, level;
  bool coordinator_only = false;
  opts.add_options()("level", po::value(&level),
                     "trace|debug|info|warn|error (positional; none: print the current level)")(
      "coordinator-only", po::bool_switch(&coordinator_only),
      "change the coordinator's level only, not the workers'");
  AddCoordinatorOption(&opts, &endpoint);
  po::positional_options_description pos;
  pos.add("level", 1);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow log-level [LEVEL] [--coordinator-only]\n"
                        "Changes the log level of the running coordinator and of every "
                        "registered worker (and of\nworkers registering later) until they "
                        "restart. Needs an operator client key.",
                        opts, pos, args, &vm, &code)) {
    return code;
  }
  if (level.empty()) {
    auto reply = Ask(endpoint, StatusRequest{}, &code);
    if (!reply) return code;
    if (!reply->ok) return Fail(reply->message, kExitFailure);
    nlohmann::json st = nlohmann::json::parse(reply->json, nullptr, false);
    const nlohmann::json& c = st.is_object() ? st["coordinator"] : st;
    std::cout << "the coordinator logs at "
              << (c.is_object() ? c.value("log_level", "an unknown level") : "an unknown level")
              << "\n";
    return kExitOk;
  }
  if (Status s = ParseLogLevel(level).status(); !s.ok()) return Fail(s, kExitUsage);
  auto reply = Ask(endpoint, SetLogLevelRequest{level, !coordinator_only}, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  std::cout << reply->message << "\n";
  return kExitOk;
}

namespace {

int CheckpointRequestCommand(const std::vector<std::string>& args, bool savepoint) {
  po::options_description opts;
  std::string endpoint, dir, timeout = "10min";
  if (savepoint) {
    opts.add_options()("dir", po::value(&dir),
                       "savepoint directory (default: <checkpoint dir>/<job>/savepoint-<n>)");
  }
  opts.add_options()("timeout", po::value(&timeout)->default_value(timeout),
                     "how long to wait for completion");
  AddCoordinatorOption(&opts, &endpoint);
  po::variables_map vm;
  int code;
  std::string usage = savepoint ? "usage: keyflow savepoint [--dir DIR]\nTakes a savepoint of the "
                                  "running job (kept until deleted; restore it with keyflow run "
                                  "--from-savepoint DIR)."
                                : "usage: keyflow checkpoint\nTakes a checkpoint of the running "
                                  "job now.\n       keyflow checkpoint inspect PATH [--json]\n"
                                  "Prints a checkpoint's metadata.";
  if (!ParseCommandLine(usage, opts, {}, args, &vm, &code)) return code;
  auto timeout_ms = DurationFlagMillis("timeout", timeout, kPositiveDuration);
  if (!timeout_ms.ok()) return Fail(timeout_ms.status(), kExitUsage);
  if (!dir.empty()) dir = std::filesystem::absolute(dir);
  if (Status s = dir.empty() ? Status::Ok() : CheckUserMayWriteDirectory("--dir", dir); !s.ok())
    return Fail(s, kExitUsage);
  CheckpointRequest req;
  req.savepoint = savepoint;
  req.directory = dir;
  auto reply = AskWatchingRestarts(endpoint, req, savepoint ? "savepoint" : "checkpoint",
                                   *timeout_ms, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  std::cout << reply->message << "\n";
  return kExitOk;
}

}  // namespace

int RunStopCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string endpoint, dir, timeout = "10min";
  opts.add_options()("dir", po::value(&dir),
                     "savepoint directory (default: <checkpoint dir>/<job>/savepoint-<n>)")(
      "timeout", po::value(&timeout)->default_value(timeout), "how long to wait for the savepoint");
  AddCoordinatorOption(&opts, &endpoint);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow stop [--dir DIR]\nStops the running job with a savepoint "
                        "(nothing is committed after it); continue later with keyflow run ... "
                        "--from-savepoint DIR, at any parallelism.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  auto timeout_ms = DurationFlagMillis("timeout", timeout, kPositiveDuration);
  if (!timeout_ms.ok()) return Fail(timeout_ms.status(), kExitUsage);
  if (!dir.empty()) dir = std::filesystem::absolute(dir);
  if (Status s = dir.empty() ? Status::Ok() : CheckUserMayWriteDirectory("--dir", dir); !s.ok())
    return Fail(s, kExitUsage);
  auto reply =
      AskWatchingRestarts(endpoint, StopJob{dir}, "stop with savepoint", *timeout_ms, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  std::cout << reply->message << "\n";
  return kExitOk;
}

int RunCheckpointCommand(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "inspect") {
    return RunCheckpointInspect(std::vector<std::string>(args.begin() + 1, args.end()), std::cout);
  }
  return CheckpointRequestCommand(args, false);
}

int RunSavepointCommand(const std::vector<std::string>& args) {
  return CheckpointRequestCommand(args, true);
}

int RunCheckpointsCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string endpoint;
  bool json = false;
  opts.add_options()("json", po::bool_switch(&json), "print the raw list as JSON");
  AddCoordinatorOption(&opts, &endpoint);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow checkpoints [--json]\nLists the completed checkpoints "
                        "and savepoints of the current job, and its recent checkpoint history.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  auto reply = Ask(endpoint, ListCheckpointsRequest{}, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  nlohmann::json j = nlohmann::json::parse(reply->json, nullptr, false);
  if (json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "job " << j.value("job_id", "") << "\ncompleted:\n";
  for (const auto& c : j["completed"]) {
    std::cout << "  " << std::left << std::setw(11) << c.value("type", "") << std::setw(6)
              << c.value("id", 0) << " P=" << c.value("parallelism", 0)
              << " M=" << c.value("max_parallelism", 0) << "  " << Human(c.value("bytes", 0.0))
              << "B  " << c.value("directory", "") << (c.value("final", false) ? "  (final)" : "")
              << "\n";
  }
  std::cout << "recent history:\n";
  for (const auto& h : j["history"]) {
    std::cout << "  " << std::left << std::setw(6) << h.value("id", 0) << std::setw(10)
              << h.value("state", "") << std::setw(9)
              << (std::to_string(h.value("duration_ms", 0)) + "ms") << " sync "
              << h.value("sync_us", 0) << "us  async " << h.value("async_us", 0) / 1000
              << "ms  align " << h.value("alignment_us", 0) / 1000 << "ms  "
              << Human(h.value("bytes", 0.0)) << "B (written "
              << Human(h.value("written_bytes", 0.0)) << "B)  " << h.value("failure", "") << "\n";
  }
  return kExitOk;
}

int RunRescaleCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string endpoint, timeout = "10min", wait_workers = "30s";
  int32_t parallelism = 0;
  bool plan = false, json = false;
  std::string via = "auto";
  opts.add_options()("parallelism", po::value(&parallelism)->required(),
                     "the new parallelism P' (positional)")(
      "via", po::value(&via)->default_value(via),
      "what the new subtasks restore from: checkpoint (of the job's own kind: incremental, and "
      "native with --state-backend rocksdb), savepoint (the canonical format, kept until "
      "deleted), or auto (a checkpoint with rocksdb, several times faster there; a savepoint "
      "with heap)")(
      "plan", po::bool_switch(&plan),
      "only print which key groups move from which old subtask to which new one, and the bytes "
      "each new subtask will read; change nothing")(
      "wait-for-workers", po::value(&wait_workers)->default_value(wait_workers),
      "how long the coordinator waits for P' registered workers before refusing")(
      "timeout", po::value(&timeout)->default_value(timeout), "how long to wait for the rescale")(
      "json", po::bool_switch(&json), "--plan: print the plan as JSON");
  AddCoordinatorOption(&opts, &endpoint);
  po::positional_options_description pos;
  pos.add("parallelism", 1);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow rescale P' [--plan] [options]\n"
                        "Rescales the running job to P' subtasks: takes a checkpoint or a "
                        "savepoint (--via), redeploys on P' workers, each restoring only the key "
                        "groups it now owns.",
                        opts, pos, args, &vm, &code)) {
    return code;
  }
  if (parallelism < 1) return Fail("the new parallelism must be at least 1", kExitUsage);
  if (via != "auto" && via != "checkpoint" && via != "savepoint") {
    return Fail("--via must be auto, checkpoint or savepoint, not '" + via + "'", kExitUsage);
  }
  auto timeout_ms = DurationFlagMillis("timeout", timeout, kPositiveDuration);
  auto wait_ms = DurationFlagMillis("wait-for-workers", wait_workers);
  if (!timeout_ms.ok()) return Fail(timeout_ms.status(), kExitUsage);
  if (!wait_ms.ok()) return Fail(wait_ms.status(), kExitUsage);
  RescaleRequest req;
  req.new_parallelism = parallelism;
  req.plan_only = plan;
  req.wait_for_workers_ms = *wait_ms;
  req.via = via == "checkpoint"  ? RescaleRequest::Via::kCheckpoint
            : via == "savepoint" ? RescaleRequest::Via::kSavepoint
                                 : RescaleRequest::Via::kAuto;
  auto reply = plan
                   ? Ask(endpoint, req, &code)
                   : AskWatchingRestarts(endpoint, req, "rescale to " + std::to_string(parallelism),
                                         *timeout_ms, &code);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  if (!plan) {
    std::cout << reply->message << "\n";
    return kExitOk;
  }
  nlohmann::json j = nlohmann::json::parse(reply->json, nullptr, false);
  if (json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "rescale plan for job " << j.value("job_id", "") << ": parallelism "
            << j.value("old_parallelism", 0) << " -> " << j.value("new_parallelism", 0)
            << " (max parallelism " << j.value("max_parallelism", 0) << ")\n"
            << "planned from checkpoint " << j.value("checkpoint", 0) << " ("
            << j.value("planned_from", "") << ")\n"
            << "key groups changing owner: " << j.value("key_groups_moved", 0) << "\n\n"
            << "  key-groups   from-old-subtask  to-new-subtask  bytes\n";
  for (const auto& mv : j["moves"]) {
    std::ostringstream kg;
    kg << mv.value("first_key_group", 0) << "-" << mv.value("last_key_group", 0);
    std::cout << "  " << std::left << std::setw(13) << kg.str() << std::setw(18)
              << mv.value("old_subtask", 0) << std::setw(16) << mv.value("new_subtask", 0)
              << mv.value("bytes", 0) << "\n";
  }
  std::cout << "\nbytes each new subtask will read:\n";
  int i = 0;
  for (const auto& b : j["bytes_per_new_subtask"]) {
    std::cout << "  subtask " << i++ << ": " << b.get<uint64_t>() << "\n";
  }
  std::cout << "  total: " << j.value("total_bytes", 0) << "\n";
  return kExitOk;
}

}  // namespace keyflow::cli
