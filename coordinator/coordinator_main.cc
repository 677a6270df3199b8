// keyflow-coordinator: the coordinator process of a keyflow cluster.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <zmq.hpp>

#include "common/file_io.h"
#include "common/logging/logging.h"
#include "common/process/command_line.h"
#include "common/process/file_access.h"
#include "common/process/logging_flags.h"
#include "common/process/signal_waiter.h"
#include "common/security/tls_certificate.h"
#include "common/transport/endpoint.h"
#include "common/transport/process_security.h"
#include "coordinator/control_server.h"
#include "coordinator/path_rules.h"
#include "coordinator/rest/control_command_bridge.h"
#include "coordinator/rest/rest_api.h"
#include "coordinator/rest/rest_auth.h"
#include "coordinator/rest/rest_server.h"
#include "coordinator/rest/status_snapshot.h"

namespace {

using namespace keyflow;
using namespace keyflow::cli;

constexpr char kUsage[] =
    "usage: keyflow-coordinator [--host H] [--port P | --bind ENDPOINT] [--checkpoint-dir DIR] "
    "[options]\n"
    "Runs the coordinator of a keyflow session cluster: workers register with it, the keyflow\n"
    "CLI submits jobs to it. Stops cleanly on SIGINT/SIGTERM; on SIGHUP (or `keyflow keys\n"
    "reload`) re-reads the trusted keys of --keys DIR: a removed .pub file revokes that key.";

// The flags of this process beyond logging, file access and security.
struct CoordinatorFlags {
  std::string bind, checkpoint_dir, config, hb_interval, hb_timeout, deploy_timeout;
  std::vector<std::string> allowed_paths;
  int64_t port = 6123;
  std::string host = "127.0.0.1";
  int64_t rest_port = 8081;
  std::string rest_bind = "127.0.0.1", rest_port_file;
  std::string rest_tls_cert, rest_tls_key;
  bool rest_insecure_http = false;
};

void AddCoordinatorFlags(po::options_description& opts, CoordinatorFlags* f) {
  opts.add_options()("port", po::value(&f->port)->default_value(f->port),
                     "control port 1-65535, 0 = any free port (binds tcp://HOST:PORT)")(
      "host", po::value(&f->host)->default_value(f->host),
      "address the control port binds and workers and clients reach (an IP or a host name "
      "of this machine; 0.0.0.0 = every interface)")(
      "bind", po::value(&f->bind),
      "control endpoint to bind, e.g. tcp://10.0.0.1:6123 (overrides --host and --port)")(
      "checkpoint-dir", po::value(&f->checkpoint_dir)->default_value("./.keyflow/checkpoints"),
      "directory for checkpoints and savepoints (shared file system on several hosts)")(
      "allowed-path", po::value(&f->allowed_paths)->composing(),
      "accept client paths (--input, --output, --checkpoint-dir, --from-savepoint, savepoint "
      "--dir) only under this absolute directory (repeatable; default: any path)")(
      "heartbeat-interval", po::value(&f->hb_interval)->default_value("200ms"),
      "how often coordinator and workers exchange heartbeats")(
      "heartbeat-timeout", po::value(&f->hb_timeout)->default_value("1s"),
      "a worker silent for longer is declared lost (one deploying its task: --deploy-timeout)")(
      "deploy-timeout", po::value(&f->deploy_timeout)->default_value("30s"),
      "how long a deployment may take before the attempt fails; a worker deploying its task "
      "may be silent (no heartbeat) that long")("config", po::value(&f->config),
                                                "read options from this file (INI: name = value)")(
      "rest-port", po::value(&f->rest_port)->default_value(f->rest_port),
      "port of the REST API (JSON under /api/v1): 1-65535, 0 = any free port, -1 = no REST "
      "server")("rest-bind", po::value(&f->rest_bind)->default_value(f->rest_bind),
                "address the REST port binds (an IP or a host name of this machine; 0.0.0.0 = "
                "every interface)")(
      "rest-port-file", po::value(&f->rest_port_file),
      "write the bound REST port to this file once it listens (atomically; for scripts and "
      "tests using --rest-port 0)")(
      "rest-tls-cert", po::value(&f->rest_tls_cert),
      "serve the REST API over HTTPS with this PEM certificate (e.g. KEYS/rest/tls.crt from "
      "`keyflow keys init`; needs --rest-tls-key)")(
      "rest-tls-key", po::value(&f->rest_tls_key),
      "the PEM private key of --rest-tls-cert (e.g. KEYS/rest/tls.key, mode 0600)")(
      "rest-insecure-http", po::bool_switch(&f->rest_insecure_http),
      "allow plain HTTP on a non-loopback --rest-bind of a secure cluster (operator tokens "
      "then cross the network in clear text)");
}

// Heartbeats, deployment timeout, allowed paths, crash point and the control endpoint (into
// f.bind) of the flags.
Status ApplyControlFlags(CoordinatorFlags& f, CoordinatorOptions& options) {
  const std::string &hb_interval = f.hb_interval, &hb_timeout = f.hb_timeout,
                    &deploy_timeout = f.deploy_timeout, &host = f.host;
  std::string& bind = f.bind;
  const int64_t port = f.port;
  auto roots = CanonicalAllowedRoots(f.allowed_paths);
  if (!roots.ok()) return roots.status();
  options.job.allowed_paths = std::move(roots).value();
  auto interval = DurationFlagMillis("heartbeat-interval", hb_interval, kPositiveDuration);
  auto timeout = DurationFlagMillis("heartbeat-timeout", hb_timeout, kPositiveDuration);
  auto deploy = DurationFlagMillis("deploy-timeout", deploy_timeout, kPositiveDuration);
  for (const auto* r : {&interval, &timeout, &deploy}) {
    if (!r->ok()) return r->status();
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
    return InvalidArgument(
        "--heartbeat-timeout must be longer than --heartbeat-interval (and both > 0)");
  }
  if (bind.empty()) {
    auto checked = PortFlag("port", port, /*allow_ephemeral=*/true);
    if (!checked.ok()) return checked.status();
    auto address = BindAddressFor("host", host);
    if (!address.ok()) return address.status();
    bind = "tcp://" + *address + ":" + (port == 0 ? std::string("*") : std::to_string(port));
  } else if (Status s = EndpointFlag("bind", bind, /*allow_ephemeral=*/true); !s.ok()) {
    return s;
  }
  return Status::Ok();
}

// The REST server's options of the flags (port -1: none).
Result<RestServerOptions> RestOptionsFromFlags(const CoordinatorFlags& f, bool secure) {
  const int64_t rest_port = f.rest_port;
  const std::string &rest_bind = f.rest_bind, &rest_tls_cert = f.rest_tls_cert,
                    &rest_tls_key = f.rest_tls_key, &rest_port_file = f.rest_port_file;
  const bool rest_insecure_http = f.rest_insecure_http;
  RestServerOptions rest_options;
  if (rest_port != -1) {
    auto checked = PortFlag("rest-port", rest_port, /*allow_ephemeral=*/true);
    if (!checked.ok()) {
      return InvalidArgument(checked.status().message() + " (or -1 for no REST server)");
    }
    auto address = BindAddressFor("rest-bind", rest_bind);
    if (!address.ok()) return address.status();
    rest_options.bind_address = *address;
    rest_options.port = static_cast<int>(rest_port);
    if (!rest_tls_cert.empty() || !rest_tls_key.empty()) {
      if (rest_tls_cert.empty() || rest_tls_key.empty()) {
        return InvalidArgument(
            "--rest-tls-cert and --rest-tls-key go together: give both (e.g. "
            "KEYS/rest/tls.crt and KEYS/rest/tls.key from `keyflow keys init`)");
      }
      if (Status s = CheckTlsCertificateFiles(rest_tls_cert, rest_tls_key); !s.ok()) {
        return s;
      }
      rest_options.tls_cert_file = rest_tls_cert;
      rest_options.tls_key_file = rest_tls_key;
    } else if (secure && !IsLoopbackHost(*address) && !rest_insecure_http) {
      return InvalidArgument(
          "the REST API on --rest-bind " + rest_bind +
          " would carry operator tokens over plain HTTP on the network: give "
          "--rest-tls-cert KEYS/rest/tls.crt --rest-tls-key KEYS/rest/tls.key, bind "
          "127.0.0.1, or pass --rest-insecure-http");
    }
  } else if (!rest_port_file.empty()) {
    return InvalidArgument("--rest-port-file needs a REST server: drop --rest-port -1");
  }
  return rest_options;
}

}  // namespace

int main(int argc, char** argv) {
  SignalWaiter signals(SignalWaiter::kWithReload);  // before any thread starts

  po::options_description opts;
  CoordinatorFlags flags;
  AddCoordinatorFlags(opts, &flags);
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
  if (Status s = ParseConfigFile(flags.config, opts, &vm); !s.ok()) return Fail(s, kExitUsage);
  // Before any file is written (the log, the REST port file, checkpoints' directories).
  ApplyFileAccess(group_readable ? FileAccess::kGroupReadable : FileAccess::kPrivate);
  auto logging = LoggingOptionsFromFlags("coordinator", logging_flags);
  if (!logging.ok()) return Fail(logging.status(), kExitUsage);

  CoordinatorOptions options;
  options.job.checkpoint_root = flags.checkpoint_dir;
  auto security = LoadProcessSecurity(security_flags, Role::kCoordinator);
  if (!security.ok()) return Fail(security.status(), kExitUsage);
  options.security = *security;
  if (Status s = ApplyControlFlags(flags, options); !s.ok()) return Fail(s, kExitUsage);

  auto rest_flags = RestOptionsFromFlags(flags, options.security.enabled);
  if (!rest_flags.ok()) return Fail(rest_flags.status(), kExitUsage);
  RestServerOptions rest_options = *std::move(rest_flags);

  if (Status s = InitLogging(*logging); !s.ok()) {
    return Fail(s, kExitUsage);
  }
  if (!options.security.enabled) KF_LOG_WARN("{}", InsecureWarning("keyflow-coordinator"));
  if (flags.rest_port != -1 && rest_options.tls_cert_file.empty() && options.security.enabled &&
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
  auto server = ControlServer::Bind(**ctx, flags.bind, options, &clock);
  if (!server.ok()) {
    KF_LOG_ERROR("{}", server.status().message());
    return Fail(server.status(), kExitFailure);
  }
  if (Status r = (*server)->coordinator().ResumeJobs(MonotonicMillis()); !r.ok()) {
    KF_LOG_ERROR("cannot resume jobs from {}: {}", flags.checkpoint_dir, r.message());
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
  if (flags.rest_port != -1) {
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
    if (!flags.rest_port_file.empty()) {
      if (Status w = WriteFileAtomically(flags.rest_port_file, std::to_string(rest->port()) + "\n");
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
