// ProcessSecurity: the security settings of one keyflow process — whether it runs secure (CURVE
// on every socket, only known keys admitted) or --insecure, and the keys it needs.
//
// Flags (AddSecurityFlags), the same on every binary:
//   --keys DIR       the cluster's key directory (curve_keys.h; default $KEYFLOW_KEYS)
//   --key-name NAME  workers and the CLI: which key of DIR is this process's
//                    (workers/NAME.key, clients/NAME.key); coordinator: not used
//   --insecure       no CURVE, no authentication: anyone who reaches a port is admitted; a
//                    warning is logged at every start
// Exactly one of --keys and --insecure must be given (a process never falls back to insecure
// by itself).
//
// What each role reads from DIR: the coordinator coordinator.key (its pair) and the trusted
// keys of workers/ and clients/ (LoadTrustedKeys, re-read on reload); a worker coordinator.pub
// and workers/NAME.key only; a client coordinator.pub and clients/NAME.key only. So a worker's
// host needs nothing but its own secret key and the coordinator's public key.
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "common/security/curve_keys.h"
#include "common/security/identity.h"
#include "common/status.h"
#include "common/transport/zmq_socket.h"

namespace keyflow {

struct SecurityFlags {
  std::string keys_dir;
  std::string key_name;
  bool insecure = false;
};

// Adds --keys, --insecure and (except for the coordinator) --key-name to `options`;
// `default_key_name` is shown as --key-name's default ("" = none).
void AddSecurityFlags(boost::program_options::options_description& options, Role role,
                      SecurityFlags* flags, const std::string& default_key_name = "");

struct ProcessSecurity {
  bool enabled = false;  // false: --insecure
  KeyDirectory keys;     // --keys
  PeerIdentity self;     // this process's role and key name
  CurveKeyPair own;      // this process's key pair
  // Workers and clients: the coordinator's public key, pinned by every control connection.
  std::string coordinator_public_key;

  // Socket settings for the two ends of the control plane (kOff when !enabled).
  CurveOptions ControlServerCurve() const;  // the coordinator's ROUTER (ZAP domain "control")
  CurveOptions ControlClientCurve() const;  // a worker's or a client's DEALER

  static ProcessSecurity Insecure(Role role, std::string name = "");
};

inline constexpr const char* kControlZapDomain = "control";

// Validates the flags and reads the keys `role` needs (see above). Errors are sentences naming
// the flag or file ("--keys and --insecure exclude each other", "no key file
// DIR/workers/w7.key: add it with `keyflow keys add-worker w7 --keys DIR`").
Result<ProcessSecurity> LoadProcessSecurity(const SecurityFlags& flags, Role role);

// The warning logged (and printed) at every start of an --insecure process.
std::string InsecureWarning(std::string_view program);

}  // namespace keyflow
