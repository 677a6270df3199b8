// `keyflow keys`: the cluster's CURVE key set (common/security/curve_keys.h, "Key directory").
//
//   keyflow keys init DIR [--workers N] [--clients NAME,...]
//       creates DIR (0700) with coordinator.key/.pub, workers/worker-0..N-1 and clients/NAME
//       (default client "operator") and rest/tls.crt + rest/tls.key (the REST server's
//       self-signed TLS certificate, --rest-hosts adds names to it); refuses a DIR that already
//       holds a key set or other files
//   keyflow keys add-worker NAME [--keys DIR]     adds workers/NAME.key and .pub
//   keyflow keys add-client NAME [--keys DIR]     adds clients/NAME.key and .pub, and the
//                                                 client's REST token (NAME.token 0600,
//                                                 NAME.token-sha256 0644)
//   keyflow keys add-token NAME [--keys DIR]      adds the REST token of a client key made
//                                                 before tokens existed
//   keyflow keys add-token NAME --role viewer     adds viewer NAME: a read-only REST token
//                                                 (viewers/NAME.token 0600, .token-sha256 0644)
//   keyflow keys rest-tls [--keys DIR] [--rest-hosts H,...]  adds rest/tls.crt + tls.key (the
//                                                 REST server's self-signed certificate) to a
//                                                 key set made before init wrote them
//   keyflow keys list [--keys DIR] [--json]       role, name, public key and state of every key,
//                                                 then the viewers (role viewer, no key)
//   keyflow keys reload [--coordinator EP] [--keys DIR]  asks a running coordinator to re-read
//                                                 its trusted keys (job_commands.h)
// --keys defaults to $KEYFLOW_KEYS. Keys are never overwritten; .key files are 0600, .pub files
// 0644, the directories 0700.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "common/security/curve_keys.h"
#include "common/status.h"

namespace keyflow::cli {

int RunKeysCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The operations behind the subcommands (errors are the sentences the command prints).
// Creates the key set of InitKeySet's documentation above in `dir`; the REST certificate names
// `rest_hosts` (DefaultRestTlsHosts() if empty, common/security/tls_certificate.h).
Status InitKeySet(const std::string& dir, int workers, const std::vector<std::string>& clients,
                  const std::vector<std::string>& rest_hosts = {});
// Writes the REST server's self-signed certificate and key (KeyDirectory::RestTlsCert/Key) into
// an existing key set; AlreadyExists if they are there.
Status AddRestTls(const std::string& dir, const std::vector<std::string>& hosts = {});
// Adds one worker or client key (role kWorker or kOperator) to an existing key set; a client
// key comes with its REST token (coordinator/rest/rest_token.h).
Status AddKey(const std::string& dir, Role role, const std::string& name);
// Creates the REST token of an existing client key that has none.
Status AddRestToken(const std::string& dir, const std::string& name);
// Creates viewer `name`: a read-only REST token in DIR/viewers (rest_token.h); AlreadyExists if
// that viewer exists.
Status AddViewerToken(const std::string& dir, const std::string& name);

struct ListedKey {
  PeerIdentity identity;
  std::string public_key;
  // "admitted": the .pub file is there (the coordinator trusts it); "revoked": only the .key
  // file is left (its .pub was removed). The coordinator's own key is "coordinator".
  std::string state;
};
// The keys of a key set: the coordinator first, then workers and clients by name.
Result<std::vector<ListedKey>> ListKeys(const std::string& dir);

}  // namespace keyflow::cli
