#include "common/transport/process_security.h"

#include <cstdlib>
#include <filesystem>

namespace keyflow {

namespace po = boost::program_options;

void AddSecurityFlags(po::options_description& options, Role role, SecurityFlags* flags,
                      const std::string& default_key_name) {
  const char* env = std::getenv("KEYFLOW_KEYS");
  options.add_options()(
      "keys", po::value(&flags->keys_dir)->default_value(env == nullptr ? "" : env),
      "the cluster's key directory (`keyflow keys init DIR`; default: $KEYFLOW_KEYS); "
      "connections are encrypted and only known keys are admitted")(
      "insecure", po::bool_switch(&flags->insecure),
      "run without encryption or authentication: anyone who can reach a port is admitted "
      "(a warning is logged at every start)");
  if (role != Role::kCoordinator) {
    options.add_options()("key-name", po::value(&flags->key_name)->default_value(default_key_name),
                          role == Role::kWorker
                              ? "this worker's key in --keys (DIR/workers/NAME.key)"
                              : "this client's key in --keys (DIR/clients/NAME.key)");
  }
}

CurveOptions ProcessSecurity::ControlServerCurve() const {
  if (!enabled) return {};
  return CurveOptions::Server(own, kControlZapDomain);
}

CurveOptions ProcessSecurity::ControlClientCurve() const {
  if (!enabled) return {};
  return CurveOptions::Client(own, coordinator_public_key);
}

ProcessSecurity ProcessSecurity::Insecure(Role role, std::string name) {
  ProcessSecurity s;
  s.self = PeerIdentity{role, std::move(name)};
  return s;
}

std::string InsecureWarning(std::string_view program) {
  return std::string(program) +
         " runs with --insecure: connections are neither encrypted nor authenticated, and any "
         "process that can reach its ports can join, read or change the job; use --keys DIR "
         "on a shared network";
}

Result<ProcessSecurity> LoadProcessSecurity(const SecurityFlags& flags, Role role) {
  if (flags.insecure) {
    if (!flags.keys_dir.empty()) {
      return InvalidArgument(
          "--keys and --insecure exclude each other: pass --keys DIR for a secure cluster, or "
          "only --insecure (also unset KEYFLOW_KEYS)");
    }
    return ProcessSecurity::Insecure(role, flags.key_name);
  }
  if (flags.keys_dir.empty()) {
    return InvalidArgument(
        "no keys: pass --keys DIR (create DIR with `keyflow keys init DIR`; scripts/"
        "start-cluster.sh does it on first use) or, to run without authentication, --insecure");
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(flags.keys_dir, ec)) {
    return InvalidArgument("--keys " + flags.keys_dir +
                           " is not a directory: create the key set with `keyflow keys init " +
                           flags.keys_dir + "`");
  }
  ProcessSecurity s;
  s.enabled = true;
  s.keys = KeyDirectory{flags.keys_dir};
  if (role == Role::kCoordinator) {
    KF_ASSIGN_OR_RETURN(KeyFile mine,
                        ReadKeyFile(s.keys.CoordinatorKey(), /*require_secret=*/true));
    if (mine.identity.role != Role::kCoordinator) {
      return InvalidArgument("key file " + s.keys.CoordinatorKey() + " is a " +
                             std::string(RoleName(mine.identity.role)) +
                             " key, not the coordinator's");
    }
    s.self = mine.identity;
    s.own = mine.keys;
    s.coordinator_public_key = mine.keys.public_key;
    return s;
  }
  if (flags.key_name.empty()) {
    return InvalidArgument("--key-name is required with --keys: name this " +
                           std::string(RoleName(role)) + "'s key (" +
                           KeyDirectory{flags.keys_dir}.RoleDir(role) + "/NAME.key)");
  }
  KF_RETURN_IF_ERROR_CTX(ValidateKeyName(flags.key_name), "--key-name");
  const std::string secret = s.keys.SecretKeyFile(role, flags.key_name);
  if (!std::filesystem::exists(secret, ec)) {
    const std::string add = role == Role::kWorker ? "add-worker" : "add-client";
    return NotFound("no key file " + secret + ": add it with `keyflow keys " + add + " " +
                    flags.key_name + " --keys " + flags.keys_dir + "`");
  }
  KF_ASSIGN_OR_RETURN(KeyFile mine, ReadKeyFile(secret, /*require_secret=*/true));
  if (mine.identity.role != role || mine.identity.name != flags.key_name) {
    return InvalidArgument("key file " + secret + " holds the key of " + mine.identity.ToUserId() +
                           ", not of " + PeerIdentity{role, flags.key_name}.ToUserId());
  }
  KF_ASSIGN_OR_RETURN(KeyFile coordinator,
                      ReadKeyFile(s.keys.CoordinatorPub(), /*require_secret=*/false));
  if (coordinator.identity.role != Role::kCoordinator) {
    return InvalidArgument("key file " + s.keys.CoordinatorPub() + " is not the coordinator's");
  }
  s.self = mine.identity;
  s.own = mine.keys;
  s.coordinator_public_key = coordinator.keys.public_key;
  return s;
}

}  // namespace keyflow
