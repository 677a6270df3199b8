// Cluster: a real keyflow cluster for integration tests — a keyflow-coordinator and N
// keyflow-worker processes from KEYFLOW_BINARY_DIR/bin, their logs in a test directory, the
// coordinator on an ephemeral port (read from its "listening on" line), and the `keyflow` CLI
// to talk to it; its REST API on an ephemeral port (RestPort()). Waits poll `keyflow status --json`
// or a log with a timeout; nothing sleeps to synchronise. RAII: the destructor SIGKILLs every
// process the cluster started, also when the test failed half-way (and ChildProcess's PDEATHSIG
// covers a crashing test binary).
//
// Secure by default (issue 13): Start() creates a key set in DIR/keys with the real `keyflow keys
// init` (and a viewer's REST token, `keyflow keys add-token viewer --role viewer`) and passes
// --keys/--key-name to the coordinator, every worker (worker-SLOT) and every CLI call (client
// "operator"); ClusterOptions::insecure runs every process with --insecure. On a secure cluster
// every REST read needs ViewerToken() (or OperatorToken()).
//
// Each process may run under a command prefix (e.g. `ip netns exec NS`), so the same helper
// runs a cluster spread over network namespaces (network_namespaces.h).
//
// Threading: one test thread.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "tests/integration/child_process.h"

namespace keyflow::test {

// Paths of the binaries under test.
std::string KeyflowBinary(const std::string& name);  // "keyflow", "keyflow-worker", ...

struct WorkerPlacement {
  std::vector<std::string> prefix;      // e.g. {"ip", "netns", "exec", "ns1"}
  std::string data_host = "127.0.0.1";  // --data-host
  std::string bind_host = "127.0.0.1";  // --bind-host
};

struct ClusterOptions {
  int workers = 3;
  // Control endpoint to bind; the port may be 0. Default: --port 0 (all interfaces).
  std::string coordinator_bind;
  // Host workers and the CLI use to reach the coordinator.
  std::string coordinator_host = "127.0.0.1";
  std::vector<std::string> coordinator_prefix;
  std::vector<std::string> cli_prefix;     // prefix of every `keyflow` CLI call
  std::vector<WorkerPlacement> placement;  // per slot; missing slots run locally
  std::vector<std::string> coordinator_args = {"--heartbeat-interval", "100ms",
                                               "--heartbeat-timeout", "1s"};
  Duration start_timeout = Duration::Seconds(30);
  // false (the default): CURVE with a key set in DIR/keys; true: every process gets --insecure.
  bool insecure = false;
};

class Cluster {
 public:
  // Starts the coordinator and options.workers workers (slots 0..N-1) with logs in `dir`
  // (which must exist), and waits until all are registered.
  static Result<std::unique_ptr<Cluster>> Start(const std::string& dir, ClusterOptions options);
  ~Cluster();  // SIGKILLs every process still running

  const std::string& endpoint() const { return endpoint_; }  // tcp://HOST:PORT
  const std::string& dir() const { return dir_; }
  // The coordinator's --checkpoint-dir.
  std::string CheckpointDir() const { return dir_ + "/checkpoints"; }

  // SIGKILL the coordinator, then reap. Returns the pid it had.
  Result<pid_t> KillCoordinator();
  // Starts the coordinator again (after it died or was killed) with the same command line:
  // the same --checkpoint-dir and the port it had bound, so the workers and the CLI find it at
  // the same endpoint. Waits for its new "listening on" line (its log is appended to).
  Status RestartCoordinator();

  // (Re)starts worker `slot` (its log is appended to).
  Status StartWorker(int slot);
  // SIGKILL, then reap. Returns the pid it had.
  Result<pid_t> KillWorker(int slot);
  ChildProcess* worker(int slot);
  ChildProcess& coordinator() { return *coordinator_; }
  std::string WorkerLog(int slot) const;
  // Worker `slot`'s --cache-dir (job libraries), kept across its restarts.
  std::string WorkerCacheDir(int slot) const;
  std::string CoordinatorLog() const { return dir_ + "/coordinator.log"; }
  // The coordinator's REST API (--rest-port 0): the port it bound, from its --rest-port-file
  // (written before its "listening on" line, so ready once Start/RestartCoordinator returned).
  std::string RestPortFile() const { return dir_ + "/rest.port"; }
  Result<int> RestPort() const;
  // The key set (`keyflow keys init`), empty when options.insecure.
  std::string KeysDir() const { return options_.insecure ? std::string() : dir_ + "/keys"; }
  // REST bearer tokens of the key set ("" when options.insecure): the read-only token of viewer
  // "viewer" (KEYS/viewers/viewer.token, made with the key set) and the operator's.
  std::string ViewerToken() const;
  std::string OperatorToken() const;
  // The flags that make a process use the key set as worker key `key_name` ("" for the
  // coordinator; a missing worker key is added), or {"--insecure"}: for tests that start a
  // process of their own against this cluster.
  std::vector<std::string> SecurityArgs(const std::string& key_name) const;

  // `keyflow ARGS... --coordinator ENDPOINT` to completion.
  Result<CommandResult> Cli(std::vector<std::string> args,
                            Duration timeout = Duration::Seconds(20)) const;
  // The same, started in the background (e.g. `run --wait` while the test kills a worker);
  // stdout in `log_path`, stderr in `log_path`.err.
  Result<ChildProcess> StartCli(std::vector<std::string> args, const std::string& log_path) const;

  // `keyflow status --json`, parsed.
  Result<nlohmann::json> StatusJson() const;
  // Polls StatusJson() until `predicate` holds; returns that status. The error names `what` and
  // includes the last status seen.
  // Fails at once if the coordinator process exits meanwhile.
  Result<nlohmann::json> WaitForStatus(const std::function<bool(const nlohmann::json&)>& predicate,
                                       Duration timeout, const std::string& what);
  Status WaitForWorkers(int n, Duration timeout);
  // WaitForStatus until the job is RUNNING and has processed records: a job started in the
  // background is under way (its subtasks' endpoints are in the status returned).
  Result<nlohmann::json> WaitForJobProcessingRecords(Duration timeout = Duration::Seconds(30));

  // Tail of every process log, for a failing test's message.
  std::string LogExcerpts(int lines = 15) const;

 private:
  Cluster(std::string dir, ClusterOptions options)
      : dir_(std::move(dir)), options_(std::move(options)) {}
  // port 0: options_.coordinator_bind (or --port 0); otherwise that port.
  Status StartCoordinator(int port = 0);
  Status CreateKeys() const;
  std::vector<std::string> CliCommand(std::vector<std::string> args) const;

  std::string dir_;
  ClusterOptions options_;
  std::optional<ChildProcess> coordinator_;
  std::vector<std::optional<ChildProcess>> workers_;
  std::string endpoint_;
};

// Runs `keyflow run ... --wait` for a job and returns the result; fails (with log excerpts) if
// the command does not finish in `timeout`.
struct JobRun {
  CommandResult cli;
  nlohmann::json job;  // the job's status after the end
};
Result<JobRun> RunJob(Cluster& cluster, const std::vector<std::string>& run_args, Duration timeout);

// Runs `keyflow ARGS...` (a `run` without --wait) and returns the job id it printed; the error
// has the command's stderr and log excerpts.
Result<std::string> SubmitJob(Cluster& cluster, const std::vector<std::string>& args);

}  // namespace keyflow::test
