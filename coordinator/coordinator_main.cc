// keyflow-coordinator: the coordinator process of a keyflow cluster.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <zmq.hpp>

#include "common/file_io.h"
#include "common/logging.h"
#include "common/process/command_line.h"
#include "common/process/file_access.h"
#include "common/process/logging_flags.h"
#include "common/process/signal_waiter.h"
#include "common/security/process_security.h"
#include "common/security/tls_certificate.h"
#include "common/transport/endpoint.h"
#include "coordinator/control_server.h"
#include "coordinator/path_rules.h"
#include "coordinator/rest/control_command_bridge.h"
#include "coordinator/rest/rest_api.h"
#include "coordinator/rest/rest_auth.h"
#include "coordinator/rest/rest_server.h"
#include "coordinator/rest/status_snapshot.h"

namespace {

constexpr char kUsage[] =
    "usage: keyflow-coordinator [--host H] [--port P | --bind ENDPOINT] [--checkpoint-dir DIR] "
    "[options]\n"
    "Runs the coordinator of a keyflow session cluster: workers register with it, the keyflow\n"
    "CLI submits jobs to it. Stops cleanly on SIGINT/SIGTERM; on SIGHUP (or `keyflow keys\n"
    "reload`) re-reads the trusted keys of --keys DIR: a removed .pub file revokes that key.";

}  // namespace

int main(int argc, char** argv) {
  using namespace keyflow;
  using namespace keyflow::cli;
  SignalWaiter signals(SignalWaiter::kWithReload);  // before any thread starts

  po::options_description opts;
  std::string bind, checkpoint_dir, config, hb_interval, hb_timeout, deploy_timeout;
  std::vector<std::string> allowed_paths;
  int64_t port = 6123;
  std::string host = "127.0.0.1";
  int64_t rest_port = 8081;
  std::string rest_bind = "127.0.0.1", rest_port_file;
  std::string rest_tls_cert, rest_tls_key;
  bool rest_insecure_http = false;
  opts.add_options()("port", po::value(&port)->default_value(port),
                     "control port 1-65535, 0 = any free port (binds tcp://HOST:PORT)")(
      "host", po::value(&host)->default_value(host),
      "address the control port binds and workers and clients reach (an IP or a host name "
      "of this machine; 0.0.0.0 = every interface)")(
      "bind", po::value(&bind),
      "control endpoint to bind, e.g. tcp://10.0.0.1:6123 (overrides --host and --port)")(
      "checkpoint-dir", po::value(&checkpoint_dir)->default_value("./.keyflow/checkpoints"),
      "directory for checkpoints and savepoints (shared file system on several hosts)")(
      "allowed-path", po::value(&allowed_paths)->composing(),
      "accept client paths (--input, --output, --checkpoint-dir, --from-savepoint, savepoint "
      "--dir) only under this absolute directory (repeatable; default: any path)")(
      "heartbeat-interval", po::value(&hb_interval)->default_value("200ms"),
      "how often coordinator and workers exchange heartbeats")(
      "heartbeat-timeout", po::value(&hb_timeout)->default_value("1s"),
      "a worker silent for longer is declared lost")(
      "deploy-timeout", po::value(&deploy_timeout)->default_value("30s"),
      "how long a deployment may take before the attempt fails")(
      "config", po::value(&config), "read options from this file (INI: name = value)")(
      "rest-port", po::value(&rest_port)->default_value(rest_port),
      "port of the REST API (JSON under /api/v1): 1-65535, 0 = any free port, -1 = no REST "
      "server")("rest-bind", po::value(&rest_bind)->default_value(rest_bind),
                "address the REST port binds (an IP or a host name of this machine; 0.0.0.0 = "
                "every interface)")(
      "rest-port-file", po::value(&rest_port_file),
      "write the bound REST port to this file once it listens (atomically; for scripts and "
      "tests using --rest-port 0)")(
      "rest-tls-cert", po::value(&rest_tls_cert),
      "serve the REST API over HTTPS with this PEM certificate (e.g. KEYS/rest/tls.crt from "
      "`keyflow keys init`; needs --rest-tls-key)")(
      "rest-tls-key", po::value(&rest_tls_key),
      "the PEM private key of --rest-tls-cert (e.g. KEYS/rest/tls.key, mode 0600)")(
      "rest-insecure-http", po::bool_switch(&rest_insecure_http),
      "allow plain HTTP on a non-loopback --rest-bind of a secure cluster (operator tokens "
      "then cross the network in clear text)");
  LoggingFlags logging_flags;
  AddLoggingFlags(opts, &logging_flags);
  bool group_readable = false;
  AddFileAccessFlag(opts, &group_readable);
  SecurityFlags security_flags;
  AddSecurityFlags(opts, Role::kCoordinator, &security_flags);
  po::variables_map vm;
  int code;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!ParseCommandLine(kUsage, opts, {}, args, &vm, &code, kDefaultStyle, "keyflow-coordinator")) {
    return code;
  }
  if (Status s = ParseConfigFile(config, opts, &vm); !s.ok()) return Fail(s, kExitUsage);
  // Before any file is written (the log, the REST port file, checkpoints' directories).
  ApplyFileAccess(group_readable ? FileAccess::kGroupReadable : FileAccess::kPrivate);
  auto logging = LoggingOptionsFromFlags("coordinator", logging_flags);
  if (!logging.ok()) return Fail(logging.status(), kExitUsage);

  CoordinatorOptions options;
  options.job.checkpoint_root = checkpoint_dir;
  auto security = LoadProcessSecurity(security_flags, Role::kCoordinator);
  if (!security.ok()) return Fail(security.status(), kExitUsage);
  options.security = *security;
  auto roots = CanonicalAllowedRoots(allowed_paths);
  if (!roots.ok()) return Fail(roots.status(), kExitUsage);
  options.job.allowed_paths = std::move(roots).value();
  auto interval = DurationFlagMillis("heartbeat-interval", hb_interval, kPositiveDuration);
  auto timeout = DurationFlagMillis("heartbeat-timeout", hb_timeout, kPositiveDuration);
  auto deploy = DurationFlagMillis("deploy-timeout", deploy_timeout, kPositiveDuration);
  for (const auto* r : {&interval, &timeout, &deploy}) {
    if (!r->ok()) return Fail(r->status(), kExitUsage);
  }
  options.heartbeat_interval_ms = *interval;
  options.heartbeat_timeout_ms = *timeout;
  options.job.deploy_timeout_ms = *deploy;
  // Fault injection for crash drills (coordinator/README.md "Crash points"): the process kills
  // itself with SIGKILL when it reaches the named step, as `kill -9` at that instant would.
  if (const char* at = std::getenv("KEYFLOW_CRASH_AT"); at != nullptr && *at != '\0') {
    options.job.crash_point = [step = std::string(at)](std::string_view reached) {
      if (reached != step) return;
      std::fprintf(stderr,
                   "keyflow-coordinator: crash point %s reached (KEYFLOW_CRASH_AT): "
                   "killing this process\n",
                   step.c_str());
      std::fflush(stderr);
      ::raise(SIGKILL);
    };
  }
  if (options.heartbeat_interval_ms <= 0 ||
      options.heartbeat_timeout_ms <= options.heartbeat_interval_ms) {
    return Fail("--heartbeat-timeout must be longer than --heartbeat-interval (and both > 0)",
                kExitUsage);
  }
  if (bind.empty()) {
    auto checked = PortFlag("port", port, /*allow_ephemeral=*/true);
    if (!checked.ok()) return Fail(checked.status(), kExitUsage);
    auto address = BindAddressFor("host", host);
    if (!address.ok()) return Fail(address.status(), kExitUsage);
    bind = "tcp://" + *address + ":" + (port == 0 ? std::string("*") : std::to_string(port));
  } else if (Status s = EndpointFlag("bind", bind, /*allow_ephemeral=*/true); !s.ok()) {
    return Fail(s, kExitUsage);
  }

  RestServerOptions rest_options;
  if (rest_port != -1) {
    auto checked = PortFlag("rest-port", rest_port, /*allow_ephemeral=*/true);
    if (!checked.ok()) {
      return Fail(checked.status().message() + " (or -1 for no REST server)", kExitUsage);
    }
    auto address = BindAddressFor("rest-bind", rest_bind);
    if (!address.ok()) return Fail(address.status(), kExitUsage);
    rest_options.bind_address = *address;
    rest_options.port = static_cast<int>(rest_port);
    if (!rest_tls_cert.empty() || !rest_tls_key.empty()) {
      if (rest_tls_cert.empty() || rest_tls_key.empty()) {
        return Fail(
            "--rest-tls-cert and --rest-tls-key go together: give both (e.g. "
            "KEYS/rest/tls.crt and KEYS/rest/tls.key from `keyflow keys init`)",
            kExitUsage);
      }
      if (Status s = CheckTlsCertificateFiles(rest_tls_cert, rest_tls_key); !s.ok()) {
        return Fail(s, kExitUsage);
      }
      rest_options.tls_cert_file = rest_tls_cert;
      rest_options.tls_key_file = rest_tls_key;
    } else if (options.security.enabled && !IsLoopbackHost(*address) && !rest_insecure_http) {
      return Fail("the REST API on --rest-bind " + rest_bind +
                      " would carry operator tokens over plain HTTP on the network: give "
                      "--rest-tls-cert KEYS/rest/tls.crt --rest-tls-key KEYS/rest/tls.key, bind "
                      "127.0.0.1, or pass --rest-insecure-http",
                  kExitUsage);
    }
  } else if (!rest_port_file.empty()) {
    return Fail("--rest-port-file needs a REST server: drop --rest-port -1", kExitUsage);
  }

  if (Status s = InitLogging(*logging); !s.ok()) {
    return Fail(s, kExitUsage);
  }
  if (!options.security.enabled) KF_LOG_WARN("{}", InsecureWarning("keyflow-coordinator"));
  if (rest_port != -1 && rest_options.tls_cert_file.empty() && options.security.enabled &&
      !IsLoopbackHost(rest_options.bind_address)) {
    KF_LOG_WARN(
        "--rest-insecure-http: the REST API on {} is plain HTTP; operator tokens cross "
        "the network in clear text",
        rest_options.bind_address);
  }
  auto ctx = ZmqContext::Create(1);
  if (!ctx.ok()) return Fail(ctx.status(), kExitFailure);
  SystemClock clock;
  // Declared before the control server: they outlive its loop (which publishes and replies).
  StatusSnapshotPublisher snapshots;
  auto bridge = ControlCommandBridge::Create();
  if (!bridge.ok()) return Fail(bridge.status(), kExitFailure);
  const bool secure = options.security.enabled;
  if (secure) {  // shared by the control ROUTER's ZAP policy and the REST tokens
    auto keys = TrustedKeyStore::Load(options.security.keys);
    if (!keys.ok()) {
      KF_LOG_ERROR("{}", keys.status().message());
      return Fail(keys.status(), kExitFailure);
    }
    options.trusted_keys = std::move(keys).value();
  }
  std::optional<RestAuthenticator> rest_auth;
  if (secure) rest_auth.emplace(options.trusted_keys);
  auto server = ControlServer::Bind(**ctx, bind, options, &clock);
  if (!server.ok()) {
    KF_LOG_ERROR("{}", server.status().message());
    return Fail(server.status(), kExitFailure);
  }
  if (Status r = (*server)->coordinator().ResumeJobs(MonotonicMillis()); !r.ok()) {
    KF_LOG_ERROR("cannot resume jobs from {}: {}", checkpoint_dir, r.message());
    return Fail(r, kExitFailure);
  }

  RestRouter router;
  RestContext rest_context;
  rest_context.snapshots = &snapshots;
  rest_context.bridge = bridge->get();
  rest_context.secure = secure;
  rest_context.auth = rest_auth ? &*rest_auth : nullptr;
  MountRestRoutes(router, rest_context);
  std::unique_ptr<RestServer> rest;  // declared last: stops (and joins) first
  if (rest_port != -1) {
    auto started = RestServer::Start(&router, rest_options);
    if (!started.ok()) {
      KF_LOG_ERROR("{}", started.status().message());
      return Fail(started.status(), kExitFailure);
    }
    rest = std::move(started).value();
    RestServer* http = rest.get();
    const RestAuthenticator* auth = rest_context.auth;
    // The REST server's own counters, in every published status (GET /api/v1/overview "rest").
    (*server)->AttachRest(&snapshots, bridge->get(), [http, auth](nlohmann::json& status) {
      RestServerStats st = http->stats();
      status["rest"] = {{"url", http->url()},
                        {"requests", st.requests},
                        {"connections", st.connections},
                        {"shed_connections", st.shed_connections},
                        {"cut_connections", st.cut_connections},
                        {"tls", http->tls()},
                        {"tls_handshake_failures", st.tls_handshake_failures},
                        {"failed_auth", auth != nullptr ? auth->failed_attempts() : 0}};
    });
    std::cerr << "keyflow-coordinator: REST API at " << rest->url() << "/api/v1/overview\n";
    if (!rest_port_file.empty()) {
      if (Status w = WriteFileAtomically(rest_port_file, std::to_string(rest->port()) + "\n");
          !w.ok()) {
        return Fail(w, kExitFailure);
      }
    }
  }
  // After the REST server: a harness that waits for this line finds the REST port ready too.
  std::cerr << "keyflow-coordinator: listening on " << (*server)->endpoint() << "\n";
  Status s =
      (*server)->Run(signals.fd(), signals.reload_fd(), [&signals] { signals.ReloadRequested(); });
  (*bridge)->Close();  // REST handlers waiting for a command's answer return now
  rest.reset();
  if (!s.ok()) {
    KF_LOG_ERROR("{}", s.message());
    return Fail(s, kExitFailure);
  }
  return kExitOk;
}
