#include "tests/integration/cluster.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "common/file_io.h"

namespace keyflow::test {
namespace {

constexpr char kListeningLine[] = "keyflow-coordinator: listening on ";

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The port of the last "listening on tcp://HOST:PORT" line of the coordinator's log, or 0.
int ListeningPort(const std::string& log) {
  size_t at = log.rfind(kListeningLine);
  if (at == std::string::npos) return 0;
  size_t eol = log.find('\n', at);
  if (eol == std::string::npos) return 0;  // line not complete yet
  std::string endpoint =
      log.substr(at + sizeof(kListeningLine) - 1, eol - at - sizeof(kListeningLine) + 1);
  size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return 0;
  return std::atoi(endpoint.c_str() + colon + 1);
}

}  // namespace

std::string KeyflowBinary(const std::string& name) {
  return std::string(KEYFLOW_BINARY_DIR) + "/bin/" + name;
}

Result<std::unique_ptr<Cluster>> Cluster::Start(const std::string& dir, ClusterOptions options) {
  std::unique_ptr<Cluster> c(new Cluster(dir, std::move(options)));
  c->workers_.resize(static_cast<size_t>(c->options_.workers));
  KF_RETURN_IF_ERROR(c->CreateKeys());
  KF_RETURN_IF_ERROR(c->StartCoordinator());
  for (int i = 0; i < c->options_.workers; ++i) KF_RETURN_IF_ERROR(c->StartWorker(i));
  Status s = c->WaitForWorkers(c->options_.workers, c->options_.start_timeout);
  if (!s.ok()) return s.WithContext("starting the cluster\n" + c->LogExcerpts());
  return c;
}

Cluster::~Cluster() {
  for (auto& w : workers_) {
    if (w) w->Kill();
  }
  if (coordinator_) coordinator_->Kill();
}

Status Cluster::CreateKeys() const {
  if (options_.insecure) return Status::Ok();
  KF_ASSIGN_OR_RETURN(CommandResult r,
                      RunCommand({KeyflowBinary("keyflow"), "keys", "init", KeysDir(), "--workers",
                                  std::to_string(options_.workers)},
                                 Duration::Seconds(20)));
  if (r.exit_code != 0) {
    return FailedPrecondition("keyflow keys init " + KeysDir() + " exited with " +
                              std::to_string(r.exit_code) + ": " + r.err);
  }
  // A read-only REST token, as scripts/start-cluster.sh makes one (ViewerToken()).
  KF_ASSIGN_OR_RETURN(r, RunCommand({KeyflowBinary("keyflow"), "keys", "add-token", "viewer",
                                     "--role", "viewer", "--keys", KeysDir()},
                                    Duration::Seconds(20)));
  if (r.exit_code != 0) {
    return FailedPrecondition("keyflow keys add-token viewer --role viewer exited with " +
                              std::to_string(r.exit_code) + ": " + r.err);
  }
  return Status::Ok();
}

namespace {
// A token file's content without its newline.
std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

std::string Cluster::ViewerToken() const {
  if (options_.insecure) return "";
  return Trimmed(ReadFileOrEmpty(KeysDir() + "/viewers/viewer.token"));
}

std::string Cluster::OperatorToken() const {
  if (options_.insecure) return "";
  return Trimmed(ReadFileOrEmpty(KeysDir() + "/clients/operator.token"));
}

std::vector<std::string> Cluster::SecurityArgs(const std::string& key_name) const {
  if (options_.insecure) return {"--insecure"};
  std::vector<std::string> args = {"--keys", KeysDir()};
  if (key_name.empty()) return args;
  // A worker key the key set does not have yet (a test's extra worker): add it, as an operator
  // would with `keyflow keys add-worker`.
  if (!std::filesystem::exists(KeysDir() + "/workers/" + key_name + ".key")) {
    auto r =
        RunCommand({KeyflowBinary("keyflow"), "keys", "add-worker", key_name, "--keys", KeysDir()},
                   Duration::Seconds(20));
    KF_CHECK(r.ok() && r->exit_code == 0)
        << "keyflow keys add-worker " << key_name << " failed: " << (r.ok() ? r->err : "");
    // A running coordinator admits the new key only after it re-read its trusted keys.
    // (If it is not running, it reads them when it starts again.)
    if (coordinator_.has_value() && !endpoint_.empty()) {
      auto reload = RunCommand({KeyflowBinary("keyflow"), "keys", "reload", "--coordinator",
                                endpoint_, "--keys", KeysDir()},
                               Duration::Seconds(20));
      if (!reload.ok() || reload->exit_code != 0) {
        std::cerr << "[ keyflow ] keyflow keys reload after adding " << key_name
                  << " failed: " << (reload.ok() ? reload->err : reload.status().message()) << "\n";
      }
    }
  }
  return Concat(args, {"--key-name", key_name});
}

Status Cluster::StartCoordinator(int port) {
  std::vector<std::string> argv = options_.coordinator_prefix;
  argv.push_back(KeyflowBinary("keyflow-coordinator"));
  if (options_.coordinator_bind.empty()) {
    argv.insert(argv.end(), {"--port", std::to_string(port)});
  } else {
    std::string bind = options_.coordinator_bind;
    if (port != 0) bind = bind.substr(0, bind.rfind(':') + 1) + std::to_string(port);
    argv.insert(argv.end(), {"--bind", bind});
  }
  argv.insert(argv.end(), {"--checkpoint-dir", CheckpointDir()});
  // REST on a free port (tests run in parallel), written to RestPortFile() before the
  // "listening on" line.
  argv.insert(argv.end(), {"--rest-port", "0", "--rest-port-file", RestPortFile()});
  (void)RemoveFile(RestPortFile());
  argv = Concat(argv, SecurityArgs(""));
  argv = Concat(argv, options_.coordinator_args);
  // Only this process's "listening on" line counts (the log keeps earlier coordinators').
  const size_t log_offset = ReadFileOrEmpty(CoordinatorLog()).size();
  KF_ASSIGN_OR_RETURN(ChildProcess p, ChildProcess::Start(argv, CoordinatorLog()));
  coordinator_.emplace(std::move(p));
  Status s = WaitUntil(
      [&] {
        std::string log = ReadFileOrEmpty(CoordinatorLog());
        port = ListeningPort(log.size() > log_offset ? log.substr(log_offset) : std::string());
        return port > 0 || !coordinator_->Running();
      },
      Duration::Seconds(15), "the coordinator's \"listening on\" line");
  if (!s.ok() || port == 0) {
    return FailedPrecondition("the coordinator did not start (" +
                              (s.ok() ? std::string("it exited") : s.message()) + "):\n" +
                              Tail(CoordinatorLog()));
  }
  endpoint_ = "tcp://" + options_.coordinator_host + ":" + std::to_string(port);
  return Status::Ok();
}

Result<int> Cluster::RestPort() const {
  KF_ASSIGN_OR_RETURN(std::string text, ReadFileToString(RestPortFile()));
  const int port = std::atoi(text.c_str());
  if (port <= 0) return Corruption(RestPortFile() + " holds no port: '" + text + "'");
  return port;
}

Result<pid_t> Cluster::KillCoordinator() {
  if (!coordinator_) return NotFound("the coordinator was never started");
  pid_t pid = coordinator_->pid();
  coordinator_->Kill();
  return pid;
}

Status Cluster::RestartCoordinator() {
  size_t colon = endpoint_.rfind(':');
  KF_CHECK(colon != std::string::npos) << "endpoint without a port: " << endpoint_;
  const int port = std::atoi(endpoint_.c_str() + colon + 1);
  if (coordinator_) coordinator_->Kill();
  return StartCoordinator(port);
}

Status Cluster::StartWorker(int slot) {
  KF_CHECK(slot >= 0 && slot < static_cast<int>(workers_.size())) << "no slot " << slot;
  WorkerPlacement placement;
  if (slot < static_cast<int>(options_.placement.size())) {
    placement = options_.placement[static_cast<size_t>(slot)];
  }
  std::vector<std::string> argv = placement.prefix;
  argv.insert(argv.end(), {KeyflowBinary("keyflow-worker"), "--coordinator", endpoint_, "--slot",
                           std::to_string(slot), "--data-host", placement.data_host, "--bind-host",
                           placement.bind_host, "--cache-dir", WorkerCacheDir(slot)});
  argv = Concat(argv, SecurityArgs("worker-" + std::to_string(slot)));
  auto& w = workers_[static_cast<size_t>(slot)];
  if (w) {  // a restart: tell the coordinator, as scripts/lib/worker-supervisor.sh does
    pid_t previous = w->pid();
    int rc = w->Kill();
    std::string how = rc > 128 ? "killed by signal " + std::to_string(rc - 128)
                               : "exit code " + std::to_string(rc);
    // The crash handler's line (worker/runtime/crash_handler.h), as the supervisor reads it.
    const std::string log = ReadFileOrEmpty(WorkerLog(slot));
    const std::string marker = "keyflow-worker pid " + std::to_string(previous) + " crashed: ";
    if (size_t at = log.rfind(marker); rc > 128 && at != std::string::npos) {
      size_t from = at + marker.size();
      how = "died of " + log.substr(from, log.find('\n', from) - from);
    }
    argv.insert(argv.end(),
                {"--previous-pid", std::to_string(previous), "--previous-exit", std::move(how)});
  }
  KF_ASSIGN_OR_RETURN(ChildProcess p, ChildProcess::Start(argv, WorkerLog(slot)));
  w.emplace(std::move(p));
  return Status::Ok();
}

std::string Cluster::WorkerCacheDir(int slot) const {
  return dir_ + "/worker-" + std::to_string(slot) + "-cache";
}

Result<pid_t> Cluster::KillWorker(int slot) {
  ChildProcess* w = worker(slot);
  if (w == nullptr) return NotFound("worker " + std::to_string(slot) + " was never started");
  pid_t pid = w->pid();
  w->Kill();
  return pid;
}

ChildProcess* Cluster::worker(int slot) {
  if (slot < 0 || slot >= static_cast<int>(workers_.size())) return nullptr;
  auto& w = workers_[static_cast<size_t>(slot)];
  return w ? &*w : nullptr;
}

std::string Cluster::WorkerLog(int slot) const {
  return dir_ + "/worker-" + std::to_string(slot) + ".log";
}

std::vector<std::string> Cluster::CliCommand(std::vector<std::string> args) const {
  std::vector<std::string> argv = options_.cli_prefix;
  // The client key set as users point the CLI at it (`export KEYFLOW_KEYS=DIR`, client key
  // "operator" by default).
  if (!options_.insecure) argv.insert(argv.end(), {"env", "KEYFLOW_KEYS=" + KeysDir()});
  argv.push_back(KeyflowBinary("keyflow"));
  argv = Concat(argv, args);
  argv.insert(argv.end(), {"--coordinator", endpoint_});
  return argv;
}

Result<CommandResult> Cluster::Cli(std::vector<std::string> args, Duration timeout) const {
  return RunCommand(CliCommand(std::move(args)), timeout);
}

Result<ChildProcess> Cluster::StartCli(std::vector<std::string> args,
                                       const std::string& log_path) const {
  return ChildProcess::Start(CliCommand(std::move(args)), log_path, log_path + ".err");
}

Result<nlohmann::json> Cluster::StatusJson() const {
  KF_ASSIGN_OR_RETURN(CommandResult r, Cli({"status", "--json"}, Duration::Seconds(15)));
  if (r.exit_code != 0) {
    return Unavailable("keyflow status --json exited with " + std::to_string(r.exit_code) + ": " +
                       r.err);
  }
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corruption("keyflow status --json printed invalid JSON: " + r.out);
  return j;
}

Result<nlohmann::json> Cluster::WaitForStatus(
    const std::function<bool(const nlohmann::json&)>& predicate, Duration timeout,
    const std::string& what) {
  nlohmann::json last;
  Status last_error;
  bool coordinator_exited = false;
  Status s = WaitUntil(
      [&] {
        if (!coordinator_->Running()) {
          coordinator_exited = true;
          return true;
        }
        auto st = StatusJson();
        if (!st.ok()) {
          last_error = st.status();
          return false;
        }
        last = *st;
        return predicate(last);
      },
      timeout, what, Duration::Millis(100));
  if (coordinator_exited) {
    return FailedPrecondition("the coordinator exited with status " +
                              std::to_string(coordinator_->Kill()) + " while waiting for " + what +
                              "\n" + LogExcerpts());
  }
  if (!s.ok()) {
    return DeadlineExceeded(s.message() + "\nlast status: " + last.dump() +
                            (last_error.ok() ? "" : "\nlast error: " + last_error.message()) +
                            "\n" + LogExcerpts());
  }
  return last;
}

Result<nlohmann::json> Cluster::WaitForJobProcessingRecords(Duration timeout) {
  return WaitForStatus(
      [](const nlohmann::json& st) {
        const nlohmann::json& job = st["job"];
        return job.is_object() && job.value("state", "") == "RUNNING" &&
               job.value("records_processed", int64_t{0}) > 0;
      },
      timeout, "the job to run and process records");
}

Status Cluster::WaitForWorkers(int n, Duration timeout) {
  auto st = WaitForStatus(
      [n](const nlohmann::json& j) {
        std::set<int> slots;
        for (const auto& w : j["workers"]) slots.insert(w.value("slot", -1));
        for (int i = 0; i < n; ++i) {
          if (!slots.count(i)) return false;
        }
        return true;
      },
      timeout, std::to_string(n) + " registered workers");
  return st.status();
}

std::string Cluster::LogExcerpts(int lines) const {
  std::string out = "  coordinator.log:\n" + Tail(CoordinatorLog(), lines);
  for (size_t i = 0; i < workers_.size(); ++i) {
    out +=
        "  worker-" + std::to_string(i) + ".log:\n" + Tail(WorkerLog(static_cast<int>(i)), lines);
  }
  return out;
}

Result<JobRun> RunJob(Cluster& cluster, const std::vector<std::string>& run_args,
                      Duration timeout) {
  std::vector<std::string> args = {"run"};
  args = Concat(args, run_args);
  args.push_back("--wait");
  JobRun run;
  auto r = cluster.Cli(args, timeout);
  if (!r.ok()) return r.status().WithContext("keyflow run\n" + cluster.LogExcerpts());
  run.cli = *r;
  KF_ASSIGN_OR_RETURN(nlohmann::json st, cluster.StatusJson());
  run.job = st["job"];
  return run;
}

Result<std::string> SubmitJob(Cluster& cluster, const std::vector<std::string>& args) {
  KF_ASSIGN_OR_RETURN(CommandResult r, cluster.Cli(args));
  if (r.exit_code != 0) {
    return FailedPrecondition("keyflow run exited with " + std::to_string(r.exit_code) + ": " +
                              r.err + "\n" + cluster.LogExcerpts());
  }
  std::string id = r.out.substr(0, r.out.find('\n'));
  if (id.empty()) return FailedPrecondition("keyflow run printed no job id: " + r.err);
  return id;
}

}  // namespace keyflow::test
