#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/input/input_spec.h"
#include "common/input/kafka_sink_spec.h"
#include "common/job_library/job_library.h"
#include "common/job_library/keyed_pipeline.h"
#include "common/kafka/partition_discovery.h"
#include "common/key_group_assignment.h"
#include "common/output_directory.h"
#include "common/process/command_line.h"
#include "coordinator/cli/coordinator_requests.h"
#include "coordinator/cli/job_commands.h"
#include "coordinator/cli/job_library_upload.h"
#include "coordinator/path_rules.h"
#include "coordinator/source/kafka_split_enumerator.h"

namespace keyflow::cli {
namespace {

// "name=value" -> (name, value); InvalidArgument otherwise.
Result<std::pair<std::string, std::string>> ParseParamAssignment(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--param '" + text + "' must look like name=value");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

}  // namespace

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

// A graph job's graph (JobDefinition::graph), built and checked: valid, and of a shape this
// version runs. Its KeyBy is the job's key.
Status ApplyJobGraph(const JobLibrary& library, const JobDefinition& job, const JobParams& params,
                     const po::variables_map& vm, JobSpec& spec) {
  if (vm.count("key-field") || vm.count("key-type")) {
    return InvalidArgument("job '" + job.name +
                           "' is a graph: its KeyBy names the key field and type, so drop "
                           "--key-field and --key-type");
  }
  KF_ASSIGN_OR_RETURN(BuiltJobGraph built, library.BuildGraph(job, params));
  Result<KeyedPipeline> pipeline = PlanKeyedPipeline(built.graph);
  if (!pipeline.ok()) {
    return InvalidArgument("job '" + job.name + "': " + pipeline.status().message());
  }
  if (!pipeline->keyed) {
    // Nothing is keyed; the input's key field still names the generator's key member.
    if (!spec.reads_fields) {
      return InvalidArgument("job '" + job.name +
                             "' has no KeyBy, so its records reach the sink as their JSON "
                             "fields, but its definition sets reads_fields = false: set "
                             "reads_fields = true");
    }
    spec.key_field = job.key_field;
    spec.key_type = KeyType::kString;
  } else if (!pipeline->before_key_by.empty() && !spec.reads_fields) {
    return InvalidArgument("job '" + job.name +
                           "' runs operators before its KeyBy, which then reads the key from "
                           "the records' fields, but its definition sets reads_fields = false: "
                           "set reads_fields = true");
  } else {
    spec.key_field = pipeline->key_by.key_field;
    spec.key_type = pipeline->key_by.key_type;
  }
  spec.graph = std::move(built.graph);
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
  if (!vm.count("ts-field")) spec.ts_field = (*job)->timestamp_field;
  if ((*job)->graph) return ApplyJobGraph(library, **job, *resolved, vm, spec);
  if (!vm.count("key-field")) spec.key_field = (*job)->key_field;
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

}  // namespace keyflow::cli
