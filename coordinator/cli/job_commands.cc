#include "coordinator/cli/job_commands.h"

#include <cstdlib>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/clock.h"
#include "common/input/input_spec.h"
#include "common/input/kafka_sink_spec.h"
#include "common/job_library/job_library.h"
#include "common/kafka/partition_discovery.h"
#include "common/key_group_assignment.h"
#include "common/logging.h"
#include "common/output_directory.h"
#include "common/process/command_line.h"
#include "common/security/process_security.h"
#include "coordinator/cli/checkpoint_inspect_command.h"
#include "coordinator/cli/control_client.h"
#include "coordinator/cli/job_library_upload.h"
#include "coordinator/cli/job_status_text.h"
#include "coordinator/path_rules.h"
#include "coordinator/source/kafka_split_enumerator.h"

namespace keyflow::cli {
namespace {

constexpr char kDefaultCoordinator[] = "tcp://127.0.0.1:6123";
constexpr int64_t kRequestTimeoutMs = 5000;

// --keys/--key-name/--insecure of the command being run (one command per process).
SecurityFlags& ClientSecurityFlags() {
  static SecurityFlags flags;
  return flags;
}

// $KEYFLOW_COORDINATOR (scripts/start-cluster.sh writes it into RUN_DIR/cluster.env), else
// kDefaultCoordinator.
std::string CoordinatorDefault() {
  const char* env = std::getenv("KEYFLOW_COORDINATOR");
  return env != nullptr && *env != '\0' ? env : kDefaultCoordinator;
}

void AddCoordinatorOption(po::options_description* opts, std::string* endpoint) {
  opts->add_options()("coordinator", po::value(endpoint)->default_value(CoordinatorDefault()),
                      "coordinator control endpoint tcp://HOST:PORT (default: "
                      "$KEYFLOW_COORDINATOR, else tcp://127.0.0.1:6123)");
  AddSecurityFlags(*opts, Role::kOperator, &ClientSecurityFlags(), "operator");
}

// The client's keys: without --keys (and $KEYFLOW_KEYS) it connects without CURVE, which an
// --insecure coordinator accepts and a secure one refuses with a sentence.
Result<std::unique_ptr<ControlClient>> ConnectToCoordinator(const std::string& endpoint,
                                                            int64_t timeout_ms) {
  SecurityFlags flags = ClientSecurityFlags();
  if (flags.keys_dir.empty()) flags.insecure = true;
  KF_ASSIGN_OR_RETURN(ProcessSecurity security, LoadProcessSecurity(flags, Role::kOperator));
  return ControlClient::Connect(endpoint, timeout_ms, security);
}

// One request/reply exchange; prints the error and returns nullopt on failure.
std::optional<Reply> Ask(const std::string& endpoint, const ControlMessage& msg, int* exit_code,
                         bool quiet = false, int64_t timeout_ms = kRequestTimeoutMs) {
  if (Status s = EndpointFlag("coordinator", endpoint); !s.ok()) {
    *exit_code = Fail(s, kExitUsage);
    return std::nullopt;
  }
  auto client = ConnectToCoordinator(endpoint, timeout_ms);
  if (!client.ok()) {
    *exit_code = Fail(client.status(), kExitUsage);
    return std::nullopt;
  }
  auto reply = (*client)->Request(msg);
  if (!reply.ok()) {
    *exit_code = quiet ? kExitFailure : Fail(reply.status(), kExitFailure);
    return std::nullopt;
  }
  return *reply;
}

std::string IncarnationOf(const Reply& status) {
  nlohmann::json j = nlohmann::json::parse(status.json, nullptr, false);
  if (!j.is_object() || !j["coordinator"].is_object()) return "";
  return j["coordinator"].value("incarnation", std::string());
}

// Sends a long-running command (rescale, stop, savepoint, checkpoint — `what` as the coordinator
// names it: "rescale to 3") and waits for its reply, polling the coordinator's status every
// second: if the coordinator restarted meanwhile (a new incarnation), the reply will never come;
// the job's last_command then says what became of the command. Prints the outcome; returns the
// reply, or nullopt with *exit_code set.
std::optional<Reply> AskWatchingRestarts(const std::string& endpoint, const ControlMessage& msg,
                                         const std::string& what, int64_t timeout_ms,
                                         int* exit_code) {
  auto before = Ask(endpoint, StatusRequest{}, exit_code);
  if (!before) return std::nullopt;
  const std::string incarnation = IncarnationOf(*before);
  auto client = ConnectToCoordinator(endpoint, timeout_ms);
  if (!client.ok()) {
    *exit_code = Fail(client.status(), kExitUsage);
    return std::nullopt;
  }
  std::optional<std::string> restarted;  // the sentence, once the coordinator restarted
  bool completed = false;
  auto watch = [&]() -> Status {
    int code = 0;
    auto now = Ask(endpoint, StatusRequest{}, &code, /*quiet=*/true, /*timeout_ms=*/1000);
    if (!now || !now->ok || incarnation.empty() || IncarnationOf(*now) == incarnation) {
      return Status::Ok();  // unreachable (restarting?) or the same process: keep waiting
    }
    nlohmann::json st = nlohmann::json::parse(now->json, nullptr, false);
    const nlohmann::json& job = st["job"];
    // contains() first: a const json's operator[] of a missing key is undefined behaviour.
    const nlohmann::json* last =
        job.is_object() && job.contains("last_command") && job["last_command"].is_object()
            ? &job["last_command"]
            : nullptr;
    if (last != nullptr && last->value("command", std::string()) == what) {
      std::string outcome = last->value("outcome", std::string());
      completed = outcome.rfind("completed", 0) == 0;
      restarted = "the coordinator restarted while the " + what + " was in progress; the " + what +
                  " was " + outcome;
    } else {
      restarted = "the coordinator restarted while the " + what +
                  " was in progress and has no record of it, so it was lost: check `keyflow "
                  "status` and run it again";
    }
    return Aborted(*restarted);
  };
  auto reply = (*client)->Request(msg, /*poll_ms=*/1000, watch);
  if (restarted) {
    if (completed) {
      std::cout << *restarted << "\n";
      *exit_code = kExitOk;
    } else {
      *exit_code = Fail(*restarted, kExitFailure);
    }
    return std::nullopt;
  }
  if (!reply.ok()) {
    *exit_code = Fail(reply.status(), kExitFailure);
    return std::nullopt;
  }
  return *reply;
}

// Polls the coordinator until the job `job_id` ends. Survives a coordinator restart (it keeps
// asking for up to `unreachable_grace_ms`).
int WaitForJob(const std::string& endpoint, const std::string& job_id) {
  bool tty = isatty(STDERR_FILENO) != 0;
  int64_t last_print = 0, unreachable_since = 0, failed_since = 0;
  constexpr int64_t kUnreachableGraceMs = 120'000;
  constexpr int64_t kExitNoteGraceMs = 4'000;
  while (true) {
    int code = 0;
    auto reply = Ask(endpoint, StatusRequest{}, &code, /*quiet=*/true);
    int64_t now = MonotonicMillis();
    if (!reply || !reply->ok) {
      if (unreachable_since == 0) {
        unreachable_since = now;
        std::cerr << (tty ? "\n" : "") << "keyflow: coordinator unreachable, still waiting for job "
                  << job_id << "...\n";
      }
      if (now - unreachable_since > kUnreachableGraceMs) {
        return Fail("gave up waiting: the coordinator at " + endpoint + " was unreachable for " +
                        std::to_string(kUnreachableGraceMs / 1000) + " s",
                    kExitFailure);
      }
    } else {
      unreachable_since = 0;
      nlohmann::json status = nlohmann::json::parse(reply->json, nullptr, false);
      const nlohmann::json& job = status.is_object() ? status["job"] : status;
      if (job.is_object() && job.value("job_id", "") == job_id) {
        std::string state = job.value("state", "");
        // A job failed by a lost worker: its supervisor reports how the process ended as soon
        // as it noticed (worker-supervisor.sh runs `keyflow-worker --report-exit`, whatever its
        // restart delay), e.g. "died of SIGSEGV while running ProcessElement of job ...";
        // wait a little for that note so the summary names the crash.
        const std::string failure = job.value("failure", std::string());
        const bool note_due = state == "FAILED" &&
                              failure.find(" was lost: ") != std::string::npos &&
                              failure.find("its process ended") == std::string::npos;
        if (note_due && failed_since == 0) failed_since = now;
        if (note_due && now - failed_since < kExitNoteGraceMs) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling period
          continue;
        }
        if (state == "FINISHED" || state == "FAILED" || state == "CANCELED") {
          if (tty) std::cerr << "\r\033[K";
          PrintSummary(job, std::cout);
          return state == "FINISHED" ? kExitOk : kExitFailure;
        }
        if (tty) {
          std::cerr << "\r\033[K" << ProgressLine(job) << std::flush;
        } else if (now - last_print >= 10'000) {
          std::cerr << ProgressLine(job) << "\n";
          last_print = now;
        }
      } else if (job.is_object()) {
        return Fail("the coordinator now runs job " + job.value("job_id", std::string("?")) +
                        " instead of " + job_id,
                    kExitFailure);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // polling period, not sync
  }
}

// "name=value" -> (name, value); InvalidArgument otherwise.
Result<std::pair<std::string, std::string>> ParseParamAssignment(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--param '" + text + "' must look like name=value");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

// --job-library L, or the installation's built-in library when L is empty.
Result<std::shared_ptr<const JobLibrary>> LoadJobLibraryFlag(const std::string& path) {
  if (path.empty()) return LoadDefaultJobLibrary();
  return JobLibrary::Load(path);
}

// The fields a job declares (JobDefinition::fields) with its default parameters; nullopt when
// it ships every field.
std::optional<std::vector<std::string>> DeclaredFields(const JobDefinition& job) {
  if (!job.reads_fields || !job.fields) return std::nullopt;
  Result<JobParams> defaults = ResolveJobParams(job, {});
  if (!defaults.ok()) return std::nullopt;
  std::vector<std::string> fields = job.fields(*defaults);
  if (fields.empty()) return std::nullopt;
  return fields;
}

constexpr char kJobLibraryHelp[] =
    "job library (lib<name>.so built with keyflow_add_job) the job comes from (default: the "
    "built-in jobs, lib/keyflow/jobs/libkeyflow-builtin-jobs.so of this installation)";

}  // namespace

int RunJobsCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string library_path;
  bool json = false;
  opts.add_options()("job-library", po::value(&library_path), kJobLibraryHelp)(
      "json", po::bool_switch(&json), "print the jobs as JSON");
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow jobs [--job-library L] [--json]\n"
                        "Lists the jobs of a job library: description, parameters (type, "
                        "default, doc), key and timestamp defaults.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  auto library = LoadJobLibraryFlag(library_path);
  if (!library.ok()) return Fail(library.status(), kExitUsage);
  const JobLibraryManifest& m = (*library)->manifest();
  if (json) {
    nlohmann::json out;
    out["library"] = (*library)->path();
    out["sdk_version"] = m.sdk_version;
    out["abi_version"] = m.abi_version;
    out["jobs"] = nlohmann::json::array();
    for (const JobDefinition& job : m.jobs) {
      nlohmann::json j;
      j["name"] = job.name;
      j["description"] = job.description;
      j["key_field"] = job.key_field;
      j["key_type"] = std::string(KeyTypeName(job.key_type));
      j["timestamp_field"] = job.timestamp_field;
      j["reads_fields"] = job.reads_fields;
      if (std::optional<std::vector<std::string>> f = DeclaredFields(job)) j["fields"] = *f;
      j["params"] = nlohmann::json::array();
      for (const ParamSpec& p : job.params) {
        nlohmann::json pj = {{"name", p.name},
                             {"type", std::string(ParamTypeName(p.type))},
                             {"default", p.default_value},
                             {"doc", p.doc}};
        if (p.type == ParamType::kChoice) pj["choices"] = p.choices;
        j["params"].push_back(std::move(pj));
      }
      out["jobs"].push_back(std::move(j));
    }
    out["sources"] = nlohmann::json::array();
    for (const SourceConnector& source : m.sources) {
      out["sources"].push_back({{"name", source.name}, {"description", source.description}});
    }
    out["sinks"] = nlohmann::json::array();
    for (const SinkConnector& sink : m.sinks) {
      out["sinks"].push_back({{"name", sink.name}, {"description", sink.description}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "job library " << (*library)->path() << " (keyflow SDK " << m.sdk_version << ", ABI "
            << m.abi_version << ")\n";
  for (const JobDefinition& job : m.jobs) {
    std::cout << "\n"
              << job.name << "\n  " << job.description << "\n"
              << "  input: key field " << job.key_field << " (" << KeyTypeName(job.key_type)
              << "), timestamp field " << job.timestamp_field
              << "; reads fields: " << (job.reads_fields ? "yes" : "no (key and timestamp only)");
    if (std::optional<std::vector<std::string>> f = DeclaredFields(job)) {
      std::string names;
      for (const std::string& n : *f) names += (names.empty() ? "" : ", ") + n;
      std::cout << ", only " << names << " (its declared fields with the default parameters)";
    }
    std::cout << "\n";
    if (job.params.empty()) std::cout << "  parameters: none\n";
    for (const ParamSpec& p : job.params) {
      std::cout << "  --param " << p.name << "=<" << ParamTypeName(p.type);
      if (p.type == ParamType::kChoice) {
        std::string choices;
        for (const std::string& c : p.choices) choices += (choices.empty() ? "" : "|") + c;
        std::cout << ": " << choices;
      }
      std::cout << ">  (default " << p.default_value << ")  " << p.doc << "\n";
    }
  }
  for (const SourceConnector& source : m.sources) {
    std::cout << "\nsource " << source.name << "  (--input connector:" << source.name
              << "[:ARGS])\n  " << source.description << "\n";
  }
  for (const SinkConnector& sink : m.sinks) {
    std::cout << "\nsink " << sink.name << "  (--output connector:" << sink.name << "[:ARGS])\n  "
              << sink.description << "\n";
  }
  return kExitOk;
}

namespace {

// The flags of `keyflow run` that are not JobSpec fields as they are.
struct RunFlags {
  std::string endpoint, key_type = "string", wm_bound = "1s", wm_interval = "200ms", idle = "0",
                        on_bad = "skip", on_change = "warn", ckpt_interval = "0",
                        ckpt_timeout = "10min", min_pause = "0", restart_delay = "200ms",
                        restart_max_delay = "30s", replacement_timeout = "10s",
                        latency_interval = "200ms", incremental = "true";
  std::vector<std::string> params;
  std::string library_path;
  JobSpec spec;
  bool wait = false;
};

void AddRunOptions(po::options_description* opts, RunFlags* f) {
  opts->add_options()("job", po::value(&f->spec.job_name)->required(),
                      "job to run, e.g. count-window | tumbling-count (keyflow jobs lists them)")(
      "job-library", po::value(&f->library_path), kJobLibraryHelp)(
      "input", po::value(&f->spec.input)->required(),
      "JSON Lines file, directory of files (one split each), "
      "gen:events=N,keys=K,splits=S,seed=X[,rate=R], monitor:DIR[,interval=DURATION] (a "
      "directory watched for new files, every 10s by default; the job runs until cancelled or "
      "stopped), or kafka:bootstrap=HOST:PORT[;HOST:PORT],topic=T[;T]|pattern=REGEX"
      "[,group=G][,start=earliest|latest|committed|timestamp:MS][,stop=latest]"
      "[,ts=FIELD|kafka][,idle=DURATION][,discovery=DURATION][,kafka.PROPERTY=V] (every "
      "partition of the topics; unbounded unless stop=latest; see the README's Kafka "
      "section), or connector:NAME[:ARGS] (a source the --job-library defines)")(
      "output", po::value(&f->spec.output_dir),
      "where the results go: a DIRECTORY (exactly-once file sink), or "
      "kafka:bootstrap=HOST:PORT[;HOST:PORT],topic=T[,guarantee=exactly-once|at-least-once]"
      "[,key=FIELD][,partition=N][,kafka.PROPERTY=V] (exactly-once, the default, commits at "
      "checkpoints and needs --checkpoint-interval), or connector:NAME[:ARGS] (a sink the "
      "--job-library defines); without it the results are printed "
      "to each worker's stdout (its log file under scripts/start-cluster.sh), prefixed "
      "\"<subtask+1>> \" when parallelism > 1, at least once")(
      "parallelism", po::value(&f->spec.parallelism)->default_value(0),
      "subtasks, one per worker (0 = all registered workers)")(
      "max-parallelism", po::value(&f->spec.max_parallelism)->default_value(0),
      "key groups (0 = Flink's default for the parallelism)")(
      "param", po::value(&f->params)->composing(), "job parameter name=value (repeatable)")(
      "key-field", po::value(&f->spec.key_field),
      "JSON field of the key (default: the job's, `keyflow jobs`; uid for the built-in jobs)")(
      "ts-field", po::value(&f->spec.ts_field),
      "JSON field of the event time in epoch ms (default: the job's; ts for the built-in jobs)")(
      "key-type", po::value(&f->key_type),
      "string | int | long (default: the job's; string for the built-in jobs)")(
      "watermark-bound", po::value(&f->wm_bound)->default_value(f->wm_bound),
      "bounded out-of-orderness of event time")(
      "watermark-interval", po::value(&f->wm_interval)->default_value(f->wm_interval),
      "periodic watermark emission interval")(
      "latency-interval", po::value(&f->latency_interval)->default_value(f->latency_interval),
      "every source subtask sends a latency marker this often; `keyflow status` shows each "
      "subtask's latency (p50/p99/p99.9 over the last 10 s) from them (0 = off; at most 10s)")(
      "idle-timeout", po::value(&f->idle)->default_value(f->idle),
      "mark a source idle after this long without records (0 = never)")(
      "on-bad-record", po::value(&f->on_bad)->default_value(f->on_bad), "skip | fail")(
      "on-input-change", po::value(&f->on_change)->default_value(f->on_change),
      "an input file that grows, is truncated or replaced while it is read, or ends in a "
      "half-written line (no newline, not yet a complete JSON object): warn (log the file, the "
      "line and the bytes not read; the job goes on with the file as it was) | fail (fail the "
      "job)")("checkpoint-interval", po::value(&f->ckpt_interval)->default_value(f->ckpt_interval),
              "take a checkpoint this often (0 = no periodic checkpoints)")(
      "checkpoint-timeout", po::value(&f->ckpt_timeout)->default_value(f->ckpt_timeout),
      "a checkpoint not complete by then is aborted")(
      "min-pause", po::value(&f->min_pause)->default_value(f->min_pause),
      "minimum time between the end of a checkpoint and the next periodic one")(
      "max-concurrent-checkpoints",
      po::value(&f->spec.max_concurrent_checkpoints)->default_value(1),
      "periodic checkpoints in flight at once")(
      "retained-checkpoints", po::value(&f->spec.retained_checkpoints)->default_value(3),
      "completed checkpoints kept on disk (savepoints are always kept)")(
      "tolerable-checkpoint-failures",
      po::value(&f->spec.tolerable_checkpoint_failures)
          ->default_value(kDefaultTolerableCheckpointFailures),
      "consecutive checkpoint failures (declined, expired, not written) tolerated; one more fails "
      "the attempt and the restart strategy decides (0 = on the first; with the default 5 a job "
      "whose checkpoint disk is full restarts from its latest checkpoint every 6 failures until "
      "space returns, while a single slow or declined checkpoint costs nothing)")(
      "checkpoint-dir", po::value(&f->spec.checkpoint_dir),
      "checkpoint directory for this job (default: the coordinator's --checkpoint-dir)")(
      "from-savepoint", po::value(&f->spec.from_savepoint),
      "restore from this savepoint or checkpoint directory (any parallelism, same max "
      "parallelism)")(
      "restart-strategy", po::value(&f->spec.restart_strategy),
      "none | fixed-delay | exponential-delay (default: exponential-delay with checkpoints, "
      "none without)")("restart-attempts", po::value(&f->spec.restart_attempts)->default_value(50),
                       "restarts allowed (exponential-delay: in a row)")(
      "restart-delay", po::value(&f->restart_delay)->default_value(f->restart_delay),
      "delay before a restart (exponential-delay: the first one)")(
      "restart-max-delay", po::value(&f->restart_max_delay)->default_value(f->restart_max_delay),
      "exponential-delay: upper bound of the backoff")(
      "replacement-timeout",
      po::value(&f->replacement_timeout)->default_value(f->replacement_timeout),
      "a lost worker not replaced within this time: restart on the remaining workers")(
      "state-backend", po::value(&f->spec.state_backend)->default_value(f->spec.state_backend),
      "keyed state backend: heap (in memory) | rocksdb (embedded RocksDB on each worker's "
      "local disk, for state larger than memory; same semantics, and savepoints restore into "
      "either)")("state-dir", po::value(&f->spec.state_dir),
                 "rocksdb: the workers' local working directory for state (default: "
                 "keyflow-state under each worker's working directory; a relative path is "
                 "relative to it); one subdirectory per job, attempt and subtask, deleted when "
                 "the subtask ends")(
      "incremental", po::value(&f->incremental)->default_value(f->incremental),
      "true | false: incremental checkpoints (heap: only the key groups changed since the last "
      "completed checkpoint are written; rocksdb: only new SST files), the rest is referenced in "
      "the job's shared checkpoint directory; false writes every checkpoint in full. Savepoints "
      "are always full")("wait", po::bool_switch(&f->wait),
                         "block until the job ends, with progress and a summary");
  AddCoordinatorOption(opts, &f->endpoint);
}

// --input connector:NAME[:ARGS]: the library's source lists its splits here, once (the
// coordinator runs no user code); they travel in the job spec.
Status ListConnectorSplits(const JobLibrary& library, JobSpec& spec) {
  if (!InputSpec::IsConnector(spec.input)) return Status::Ok();
  KF_ASSIGN_OR_RETURN(InputSpec input, InputSpec::Parse(spec.input));
  KF_ASSIGN_OR_RETURN(const SourceConnector* source, library.FindSource(input.connector_name()));
  const std::string where =
      "--input " + spec.input + ": source '" + source->name + "' of " + library.file_name();
  Result<std::vector<std::string>> splits = std::vector<std::string>{};
  try {
    splits = source->splits(input.connector_args());
  } catch (const std::exception& e) {
    return InvalidArgument(where + " threw while listing its splits: " + e.what());
  } catch (...) {
    return InvalidArgument(where + " threw while listing its splits");
  }
  if (!splits.ok()) return InvalidArgument(where + ": " + splits.status().message());
  if (splits->empty()) return InvalidArgument(where + " listed no splits");
  std::set<std::string> seen;
  for (const std::string& split : *splits) {
    if (split.empty()) return InvalidArgument(where + " listed an empty split");
    if (!seen.insert(split).second) {
      return InvalidArgument(where + " listed split '" + split + "' twice");
    }
  }
  spec.connector_splits = *std::move(splits);
  return Status::Ok();
}

// --output connector:NAME[:ARGS]: the library has that sink, and it accepts ARGS.
Status CheckConnectorSink(const JobLibrary& library, const JobSpec& spec) {
  if (!OutputIsConnector(spec.output_dir)) return Status::Ok();
  const std::string_view rest = std::string_view(spec.output_dir).substr(10);
  const size_t colon = rest.find(':');
  const std::string name(rest.substr(0, colon));
  const std::string args(colon == std::string_view::npos ? "" : rest.substr(colon + 1));
  KF_ASSIGN_OR_RETURN(const SinkConnector* sink, library.FindSink(name));
  if (!sink->check) return Status::Ok();
  const std::string where =
      "--output " + spec.output_dir + ": sink '" + name + "' of " + library.file_name();
  Status checked = Status::Ok();
  try {
    checked = sink->check(args);
  } catch (const std::exception& e) {
    return InvalidArgument(where + " threw while checking its arguments: " + e.what());
  } catch (...) {
    return InvalidArgument(where + " threw while checking its arguments");
  }
  if (!checked.ok()) return InvalidArgument(where + ": " + checked.message());
  return Status::Ok();
}

// The job's parameters, fields and input defaults from its definition in the job library
// (checked here before anything is submitted: the coordinator runs no user code).
Status ApplyJobDefinition(const JobLibrary& library, const po::variables_map& vm,
                          const std::vector<std::string>& params, const std::string& key_type,
                          JobSpec& spec) {
  auto job = library.FindJob(spec.job_name);
  if (!job.ok()) return job.status();
  for (const std::string& p : params) {
    auto kv = ParseParamAssignment(p);
    if (!kv.ok()) return kv.status();
    spec.params[kv->first] = kv->second;
  }
  auto resolved = ResolveJobParams(**job, spec.params);
  if (!resolved.ok()) return resolved.status();
  spec.params = resolved->values();
  spec.reads_fields = (*job)->reads_fields;
  if (spec.reads_fields && (*job)->fields) spec.fields = (*job)->fields(*resolved);
  for (const std::string& f : spec.fields) {
    if (f.empty()) {
      return InvalidArgument("job '" + spec.job_name +
                             "' declares an empty field name in its definition's `fields`; fix "
                             "the job library");
    }
  }
  if (!vm.count("key-field")) spec.key_field = (*job)->key_field;
  if (!vm.count("ts-field")) spec.ts_field = (*job)->timestamp_field;
  if (vm.count("key-type")) {
    auto kt = ParseKeyType(key_type);
    if (!kt.ok()) return kt.status();
    spec.key_type = *kt;
  } else {
    spec.key_type = (*job)->key_type;
  }
  return Status::Ok();
}

// Policies, durations and checkpoint settings of the flags into `spec`.
Status ApplyRunFlags(const RunFlags& f, JobSpec& spec) {
  const std::string &on_bad = f.on_bad, &on_change = f.on_change, &wm_bound = f.wm_bound,
                    &wm_interval = f.wm_interval, &idle = f.idle,
                    &latency_interval = f.latency_interval, &ckpt_interval = f.ckpt_interval,
                    &ckpt_timeout = f.ckpt_timeout, &min_pause = f.min_pause,
                    &restart_delay = f.restart_delay, &restart_max_delay = f.restart_max_delay,
                    &replacement_timeout = f.replacement_timeout, &incremental = f.incremental;
  if (on_bad != "skip" && on_bad != "fail") {
    return InvalidArgument("--on-bad-record must be skip or fail, not '" + on_bad + "'");
  }
  spec.fail_on_bad_record = on_bad == "fail";
  if (on_change != "warn" && on_change != "fail") {
    return InvalidArgument("--on-input-change must be warn or fail, not '" + on_change + "'");
  }
  spec.fail_on_input_change = on_change == "fail";
  struct {
    const char* flag;
    const std::string* value;
    int64_t* out;
    DurationRange range = {};
  } durations[] = {
      {"watermark-bound", &wm_bound, &spec.watermark_bound_ms},
      {"watermark-interval", &wm_interval, &spec.watermark_interval_ms, kPositiveDuration},
      {"idle-timeout", &idle, &spec.idle_timeout_ms},
      {"latency-interval", &latency_interval, &spec.latency_interval_ms,
       DurationRange{.min_ms = 0, .max_ms = 10'000}},
      {"checkpoint-interval", &ckpt_interval, &spec.checkpoint_interval_ms},
      {"checkpoint-timeout", &ckpt_timeout, &spec.checkpoint_timeout_ms, kPositiveDuration},
      {"min-pause", &min_pause, &spec.checkpoint_min_pause_ms},
      {"restart-delay", &restart_delay, &spec.restart_delay_ms},
      {"restart-max-delay", &restart_max_delay, &spec.restart_max_delay_ms, kPositiveDuration},
      {"replacement-timeout", &replacement_timeout, &spec.replacement_timeout_ms,
       kPositiveDuration}};
  for (auto& d : durations) {
    auto ms = DurationFlagMillis(d.flag, *d.value, d.range);
    if (!ms.ok()) return ms.status();
    *d.out = *ms;
  }
  if (spec.watermark_interval_ms <= 0) return InvalidArgument("--watermark-interval must be > 0");
  if (spec.checkpoint_interval_ms > 0 && spec.checkpoint_interval_ms < 10) {
    return InvalidArgument("--checkpoint-interval must be at least 10ms");
  }
  if (spec.max_concurrent_checkpoints < 1 || spec.retained_checkpoints < 1) {
    return InvalidArgument(
        "--max-concurrent-checkpoints and --retained-checkpoints must be at least 1");
  }
  if (spec.tolerable_checkpoint_failures < 0) {
    return InvalidArgument("--tolerable-checkpoint-failures must be 0 or more, not " +
                           std::to_string(spec.tolerable_checkpoint_failures));
  }
  if (spec.state_backend != "heap" && spec.state_backend != "rocksdb") {
    return InvalidArgument("--state-backend must be heap or rocksdb, not '" + spec.state_backend +
                           "'");
  }
  if (incremental != "true" && incremental != "false") {
    return InvalidArgument("--incremental must be true or false, not '" + incremental + "'");
  }
  spec.incremental_checkpoints = incremental == "true";
  if (!spec.state_dir.empty() && spec.state_backend != "rocksdb") {
    return InvalidArgument(
        "--state-dir is the working directory of --state-backend rocksdb; add "
        "--state-backend rocksdb or drop --state-dir");
  }
  if (spec.parallelism < 0 || spec.max_parallelism < 0) {
    return InvalidArgument("--parallelism and --max-parallelism must not be negative");
  }
  if (spec.parallelism > 0 && spec.max_parallelism > 0) {
    if (Status s = ValidateParallelism(spec.parallelism, spec.max_parallelism); !s.ok()) {
      return s;
    }
  } else if (spec.max_parallelism > 0) {
    if (Status s = ValidateMaxParallelism(spec.max_parallelism); !s.ok()) return s;
  }

  return Status::Ok();
}

// The sink's topic exists (and its fixed partition, if any) on brokers that answer.
Status CheckKafkaSinkTopic(const KafkaSinkSpec& sink) {
  KafkaSourceSpec probe;
  probe.bootstrap = sink.bootstrap;
  probe.topics = {sink.topic};
  probe.properties = sink.properties;
  Result<std::vector<DiscoveredPartition>> partitions =
      DiscoverKafkaPartitions(probe, {}, /*initial=*/true, KafkaSplitEnumerator::kDiscoveryTimeout);
  if (!partitions.ok()) {
    return partitions.status().WithContext("--output " + sink.Redacted());
  }
  if (sink.partition && *sink.partition >= static_cast<int32_t>(partitions->size())) {
    return InvalidArgument("--output " + sink.Redacted() + ": topic " + sink.topic + " has " +
                           std::to_string(partitions->size()) + " partitions, no partition " +
                           std::to_string(*sink.partition));
  }
  if (sink.exactly_once()) {
    probe.topics = {sink.marker_topic};
    if (Status s = DiscoverKafkaPartitions(probe, {}, /*initial=*/true,
                                           KafkaSplitEnumerator::kDiscoveryTimeout)
                       .status();
        !s.ok()) {
      return InvalidArgument(
          "--output " + sink.Redacted() +
          ": exactly-once writes a commit marker per "
          "transaction to topic " +
          sink.marker_topic + ", which is not there (" + s.message() +
          "): create it (one partition, cleanup.policy=compact, e.g. kafka-topics.sh --create "
          "--topic " +
          sink.marker_topic +
          " --partitions 1 --config cleanup.policy=compact) or "
          "name another with markers=TOPIC");
    }
  }
  return Status::Ok();
}

// Makes the paths absolute (workers resolve paths elsewhere) and checks them for this user.
Status ResolveRunPaths(JobSpec& spec) {
  if (!spec.checkpoint_dir.empty())
    spec.checkpoint_dir = std::filesystem::absolute(spec.checkpoint_dir);
  if (!spec.from_savepoint.empty())
    spec.from_savepoint = std::filesystem::absolute(spec.from_savepoint);
  const bool kafka_output = KafkaSinkSpec::Names(spec.output_dir);
  if (OutputIsDirectory(spec.output_dir)) {
    spec.output_dir = std::filesystem::absolute(spec.output_dir);
  }
  // Workers resolve paths in their own working directory: send absolute ones.
  spec.input = InputSpec::WithAbsolutePath(spec.input);
  // What the workers will parse, checked here (a gen: spec, a missing file or an empty
  // directory), so a bad --input is a usage error and not a job that fails later.
  Result<InputSpec> input = InputSpec::Parse(spec.input);
  if (!input.ok()) return input.status();
  if (input->kind() == InputSpec::Kind::kKafka) {
    KF_RETURN_IF_ERROR(input->kafka().CheckAgainstKeyField(spec.key_field));
    // The brokers answer and the topics exist, before anything is deployed.
    if (Status s = DiscoverKafkaPartitions(input->kafka(), {}, /*initial=*/true,
                                           KafkaSplitEnumerator::kDiscoveryTimeout)
                       .status();
        !s.ok()) {
      return s;
    }
  }
  if (kafka_output) {
    // The brokers answer, the topic (and a fixed partition) exists, and the guarantee fits the
    // checkpointing, before anything is deployed.
    KF_ASSIGN_OR_RETURN(KafkaSinkSpec sink, KafkaSinkSpec::Parse(spec.output_dir));
    KF_RETURN_IF_ERROR(sink.CheckAgainstCheckpointing(spec.checkpoint_interval_ms));
    KF_RETURN_IF_ERROR(CheckKafkaSinkTopic(sink));
  }
  // The cluster reads and writes these for this user (coordinator/path_rules.h).
  if (Status s = CheckClientMayUsePaths(spec); !s.ok()) return s;
  // The workers refuse a new job's output directory that holds results; say so before the job
  // is submitted (a job restored from a savepoint continues in its own directory).
  if (OutputIsDirectory(spec.output_dir) && spec.from_savepoint.empty()) {
    if (Status s = CheckOutputDirectoryIsFresh(spec.output_dir); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  RunFlags f;
  AddRunOptions(&opts, &f);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow run --job NAME --input SPEC [--output DIR] [options]\n"
                        "Submits a job to the coordinator. Paths (--input, --output, "
                        "--checkpoint-dir, --from-savepoint) are made absolute and must be\n"
                        "readable (input, savepoint) or writable (output, checkpoint dir) by "
                        "you; a coordinator started with --allowed-path accepts only\n"
                        "paths under those directories.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  JobSpec& spec = f.spec;
  auto library = LoadJobLibraryFlag(f.library_path);
  if (!library.ok()) return Fail(library.status(), kExitUsage);
  Status s = ApplyJobDefinition(**library, vm, f.params, f.key_type, spec);
  if (s.ok()) s = ApplyRunFlags(f, spec);
  if (s.ok()) s = ResolveRunPaths(spec);
  if (s.ok()) s = ListConnectorSplits(**library, spec);
  if (s.ok()) s = CheckConnectorSink(**library, spec);
  if (!s.ok()) return Fail(s, kExitUsage);
  const std::string& endpoint = f.endpoint;
  const std::string& library_path = f.library_path;
  const bool wait = f.wait;

  SubmitJob submit{spec, ""};
  if (!library_path.empty()) {
    // The coordinator's blob store ships it to the workers by its hash (JobSpec::job_library).
    auto upload = ReadJobLibraryForUpload(library_path);
    if (!upload.ok()) return Fail(upload.status(), kExitUsage);
    submit.spec.job_library = upload->ref;
    submit.job_library_bytes = std::move(upload->bytes);
  }
  // The coordinator hashes and fsyncs the library before it answers: 100 ms more per MiB.
  const int64_t submit_timeout_ms =
      kRequestTimeoutMs + static_cast<int64_t>(submit.job_library_bytes.size() >> 20) * 100;
  auto reply = Ask(endpoint, submit, &code, /*quiet=*/false, submit_timeout_ms);
  if (!reply) return code;
  if (!reply->ok) return Fail(reply->message, kExitFailure);
  nlohmann::json submitted = nlohmann::json::parse(reply->json, nullptr, false);
  std::string job_id = submitted.is_object() ? submitted.value("job_id", "") : "";
  std::cerr << "keyflow: " << reply->message << " (parallelism "
            << (submitted.is_object() ? submitted.value("parallelism", 0) : 0)
            << ", max parallelism "
            << (submitted.is_object() ? submitted.value("max_parallelism", 0) : 0) << ")\n";
  std::cout << job_id << "\n";
  if (!wait) return kExitOk;
  return WaitForJob(endpoint, job_id);
}

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
