// CURVE keys and the cluster's key directory.
//
// A key pair is two Z85 strings of 40 characters (ZeroMQ's text form of a 32-byte Curve25519
// key). Key files are small versioned text files (format in common/README.md, "Security"):
//
//   # keyflow CURVE key: keep the secret-key line private
//   keyflow-curve-key 1
//   role worker
//   name worker-0
//   public-key <40 Z85 characters>
//   secret-key <40 Z85 characters>      (only in .key files; .pub files have no such line)
//
// A key directory (`keyflow keys init DIR`) holds a cluster's key set:
//
//   DIR/                   0700
//     coordinator.key      0600   the coordinator's key pair
//     coordinator.pub      0644   its public key (every worker and client needs it)
//     workers/NAME.key     0600   a worker's key pair (goes only to that worker's host)
//     workers/NAME.pub     0644   admitted worker keys (the coordinator reads these)
//     clients/NAME.key     0600   an operator client's key pair
//     clients/NAME.pub     0644   admitted operator keys
//
// Removing workers/NAME.pub or clients/NAME.pub and reloading the coordinator's keys revokes that
// key. Reading checks the version, the role and name against the file's place in the directory,
// the Z85 text, and that a secret key matches its public key; every error names the file.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/security/identity.h"
#include "common/status.h"

namespace keyflow {

inline constexpr int kCurveKeyFileVersion = 1;
inline constexpr size_t kZ85KeySize = 40;

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters; empty for a public-only key

  friend bool operator==(const CurveKeyPair&, const CurveKeyPair&) = default;
};

// True when this libzmq supports CURVE (zmq_has("curve")).
bool CurveAvailable();
// A fresh key pair (zmq_curve_keypair). FailedPrecondition if CURVE is not available.
Result<CurveKeyPair> GenerateCurveKeyPair();
// InvalidArgument unless `z85` is 40 valid Z85 characters.
Status ValidateZ85Key(std::string_view z85);

// One key file, parsed.
struct KeyFile {
  PeerIdentity identity;  // role and name
  CurveKeyPair keys;      // secret_key empty for a .pub file
};

// Renders a key file (secret line only if keys.secret_key is set).
std::string RenderKeyFile(const KeyFile& file);
// Parses one; `path` is only for messages. `require_secret`: a .key file must have the secret
// line and it must match the public key.
Result<KeyFile> ParseKeyFile(std::string_view text, std::string_view path, bool require_secret);
Result<KeyFile> ReadKeyFile(const std::string& path, bool require_secret);
// Writes `file` at `path` with `mode` (0600 for .key, 0644 for .pub), refusing to overwrite an
// existing file (AlreadyExists).
Status WriteNewKeyFile(const std::string& path, const KeyFile& file, unsigned mode);
// Writes `text` at `path` with exactly `mode` (fsync'd), refusing to overwrite (AlreadyExists);
// `what` names the file in messages ("key file", "TLS certificate").
Status WriteNewFile(const std::string& path, std::string_view text, unsigned mode,
                    std::string_view what);

// Paths inside a key directory.
struct KeyDirectory {
  std::string dir;

  std::string CoordinatorKey() const { return dir + "/coordinator.key"; }
  std::string CoordinatorPub() const { return dir + "/coordinator.pub"; }
  // workers/NAME.key for kWorker, clients/NAME.key for kOperator.
  std::string SecretKeyFile(Role role, std::string_view name) const;
  std::string PublicKeyFile(Role role, std::string_view name) const;
  std::string RoleDir(Role role) const;  // DIR/workers or DIR/clients
  // The coordinator's REST TLS certificate (PEM, 0644) and its private key (PEM, 0600):
  // `keyflow keys init` writes a self-signed pair (common/security/tls_certificate.h).
  std::string RestDir() const { return dir + "/rest"; }
  std::string RestTlsCert() const { return dir + "/rest/tls.crt"; }
  std::string RestTlsKey() const { return dir + "/rest/tls.key"; }
};

// The keys the coordinator admits: Z85 public key -> identity. Built from DIR/workers/*.pub and
// DIR/clients/*.pub. Errors: an unreadable or malformed file (named), the same public key in
// two files, a missing directory.
using TrustedKeys = std::map<std::string, PeerIdentity, std::less<>>;
Result<TrustedKeys> LoadTrustedKeys(const KeyDirectory& dir);

}  // namespace keyflow
