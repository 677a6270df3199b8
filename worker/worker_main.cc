// keyflow-worker: one worker process of a keyflow cluster. Runs the source, keyed
// and sink subtask of one index of the job the coordinator deploys.
#include <iostream>

#include "common/file_system.h"
#include "common/logging/logging.h"
#include "common/process/command_line.h"
#include "common/process/file_access.h"
#include "common/process/logging_flags.h"
#include "common/process/signal_waiter.h"
#include "common/transport/process_security.h"
#include "worker/exit_report.h"
#include "worker/runtime/crash_handler.h"
#include "worker/task/state_directory.h"
#include "worker/worker_process.h"

namespace {

// --report-exit: one WorkerExitReport with the worker's own key (worker/exit_report.h).
int ReportExit(keyflow::WorkerOptions options, keyflow::SecurityFlags security_flags,
               const std::string& how) {
  using namespace keyflow;
  using namespace keyflow::cli;
  constexpr Duration kReportTimeout = Duration::Seconds(3);
  if (security_flags.key_name == "worker-<slot>") {
    security_flags.key_name = options.slot >= 0 ? "worker-" + std::to_string(options.slot) : "";
  }
  auto security = LoadProcessSecurity(security_flags, Role::kWorker);
  if (!security.ok()) return Fail(security.status(), kExitUsage);
  options.security = *security;
  auto zmq = ZmqContext::Create(1);
  if (!zmq.ok()) return Fail(zmq.status(), kExitFailure);
  auto reply = ReportWorkerExit(options, how, options.previous_pid, zmq->get(), kReportTimeout);
  if (!reply.ok()) {
    return Fail(reply.status().WithContext("keyflow-worker --report-exit"), kExitFailure);
  }
  std::cerr << "keyflow-worker --report-exit: " << *reply << "\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace keyflow;
  using namespace keyflow::cli;
  SignalWaiter signals;    // before any thread starts
  InstallCrashHandlers();  // a crash names the user call that was running (crash_handler.h)

  po::options_description opts;
  WorkerOptions options;
  std::string config;
  std::string report_exit;
  opts.add_options()("coordinator",
                     po::value(&options.coordinator)->default_value(options.coordinator),
                     "coordinator control endpoint")(
      "slot", po::value(&options.slot)->default_value(-1),
      "worker slot (scripts give worker i slot i; a respawned worker takes over its slot)")(
      "data-host", po::value(&options.data.advertised_host)->default_value("127.0.0.1"),
      "address other workers use to reach this worker's data endpoints")(
      "bind-host", po::value(&options.data.bind_host),
      "interface the data endpoints bind to (default: the address of --data-host; 0.0.0.0 = "
      "every interface)")("hostname", po::value(&options.hostname),
                          "name shown in status (default: the host name)")(
      "cache-dir",
      po::value(&options.data.job_library_cache_dir)->default_value(kDefaultJobLibraryCacheDir),
      "local cache of the job libraries the coordinator ships (files <sha256>.so, verified "
      "before every load; relative to the working directory; workers may share it)")(
      "state-dir", po::value(&options.data.state_root)->default_value(kDefaultStateDir),
      "root of the RocksDB working state of jobs run with --state-backend rocksdb and no "
      "--state-dir of their own (local disk; relative to the working directory; made absolute); "
      "each subtask gets <root>/<cluster>/<job>/attempt-<n>/subtask-<i> (0700), removed when it "
      "ends, and a worker removes those of dead workers at start")(
      "config", po::value(&config), "read options from this file (INI: name = value)")(
      "previous-exit", po::value(&options.previous_exit),
      "set by a supervisor that restarts this worker: how the previous process of this slot "
      "ended (e.g. \"killed by signal 9 (SIGKILL)\"); the coordinator reports it")(
      "previous-pid", po::value(&options.previous_pid)->default_value(0),
      "set by a supervisor: the pid of that previous process (its slot is taken over at once)")(
      "report-exit", po::value(&report_exit),
      "do not run a worker: report to the coordinator how the worker process --previous-pid "
      "ended (e.g. \"died of SIGSEGV while running ...\"), with the worker's own key and "
      "--slot, wait for the answer and exit (0: taken; 1: not taken). The supervisor runs it "
      "as soon as the worker ended, so the report does not wait for the restart delay");
  LoggingFlags logging_flags;
  AddLoggingFlags(opts, &logging_flags);
  bool group_readable = false;
  AddFileAccessFlag(opts, &group_readable);
  SecurityFlags security_flags;
  AddSecurityFlags(opts, Role::kWorker, &security_flags, "worker-<slot>");
  po::variables_map vm;
  int code;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!ParseCommandLine("usage: keyflow-worker --coordinator tcp://HOST:PORT [--slot N] "
                        "[--data-host ADDRESS] [options]\n"
                        "Runs a keyflow worker: registers with the coordinator and runs the "
                        "subtask it is given. Stops cleanly on SIGINT/SIGTERM.",
                        opts, {}, args, &vm, &code, kDefaultStyle, "keyflow-worker")) {
    return code;
  }
  if (Status s = ParseConfigFile(config, opts, &vm); !s.ok()) return Fail(s, kExitUsage);
  // Before any file is written: the log, the cache, RocksDB's state, the file sink's output.
  ApplyFileAccess(group_readable ? FileAccess::kGroupReadable : FileAccess::kPrivate);
  std::string process = options.slot >= 0 ? "worker-" + std::to_string(options.slot) : "worker";
  auto logging = LoggingOptionsFromFlags(process, logging_flags);
  if (!logging.ok()) return Fail(logging.status(), kExitUsage);
  if (options.previous_pid < 0) {
    return Fail(
        "--previous-pid must be a process id (> 0), not " + std::to_string(options.previous_pid),
        kExitUsage);
  }
  if (Status s = EndpointFlag("coordinator", options.coordinator); !s.ok()) {
    return Fail(s, kExitUsage);
  }
  if (vm.count("report-exit")) {
    if (report_exit.empty() || options.previous_pid <= 0) {
      return Fail(
          "--report-exit needs how the process ended (a phrase) and --previous-pid, its pid",
          kExitUsage);
    }
    return ReportExit(options, security_flags, report_exit);
  }
  if (options.data.job_library_cache_dir.empty()) {
    return Fail("--cache-dir must name a directory (it is created if missing)", kExitUsage);
  }
  if (Status s = FileSystem::Default().CreateDirectories(options.data.job_library_cache_dir, 0700);
      !s.ok()) {
    return Fail("cannot use --cache-dir " + options.data.job_library_cache_dir + ": " +
                    s.message() + " (give a directory this user can create and write)",
                kExitUsage);
  }
  if (!vm.count("bind-host")) {
    auto address = BindAddressFor("data-host", options.data.advertised_host);
    if (!address.ok()) return Fail(address.status(), kExitUsage);
    options.data.bind_host = *address;
  }
  if (security_flags.key_name == "worker-<slot>") {
    security_flags.key_name = options.slot >= 0 ? "worker-" + std::to_string(options.slot) : "";
  }
  auto security = LoadProcessSecurity(security_flags, Role::kWorker);
  if (!security.ok()) return Fail(security.status(), kExitUsage);
  options.security = *security;
  if (Status s = InitLogging(*logging); !s.ok()) return Fail(s, kExitUsage);

  if (!options.security.enabled) KF_LOG_WARN("{}", InsecureWarning("keyflow-worker"));
  if (options.data.state_root.empty()) {
    return Fail("--state-dir must name a directory (it is created when a job needs it)",
                kExitUsage);
  }
  options.data.state_root = AbsoluteStateRoot(options.data.state_root);
  for (const std::string& dead : RemoveDeadStateDirectories(options.data.state_root)) {
    KF_LOG_INFO("removed the RocksDB working state of a dead attempt: {}", dead);
  }
  // Two I/O threads: thread 0 carries the control plane, thread 1 the data plane (and its CURVE
  // encryption), so that a saturated data plane never delays heartbeats (zmq_context.h).
  auto zmq = ZmqContext::Create(2);
  if (!zmq.ok()) return Fail(zmq.status(), kExitFailure);
  SystemClock clock;
  auto worker = WorkerProcess::Create(options, zmq->get(), &clock);
  if (!worker.ok()) {
    KF_LOG_ERROR("{}", worker.status().message());
    return Fail(worker.status(), kExitUsage);
  }
  Status s = (*worker)->Run(signals.fd());
  worker->reset();
  if (!s.ok()) {
    KF_LOG_ERROR("{}", s.message());
    return Fail(s, kExitFailure);
  }
  return kExitOk;
}
