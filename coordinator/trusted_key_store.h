// TrustedKeyStore: the keys the coordinator admits (DIR/workers/*.pub, DIR/clients/*.pub of
// --keys), reloadable while the cluster runs (`keyflow keys reload`, SIGHUP).
//
// Reload() keeps the old set when the new one does not load (a malformed file, a duplicate key)
// and says why; a key no longer in the directory is revoked: the ZAP policy (Policy()) refuses
// its new connections at once, and the Coordinator, which asks Trusts() for every message of a
// secure connection, drops the messages of connections still open and the workers registered
// with it.
//
// REST bearer tokens (coordinator/rest/rest_token.h): the store also keeps the SHA-256 of each
// trusted operator client's token (DIR/clients/NAME.token-sha256) and of each viewer's
// (DIR/viewers/NAME.token-sha256), loaded and reloaded with the keys; a client key's token
// counts only while the key does, a viewer's while its hash file is there.
//
// Threading: thread-safe. The ZAP policy runs on the authenticator's thread, Reload() and
// Trusts() on the coordinator's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/security/curve_keys.h"
#include "common/status.h"
#include "common/transport/zap_authenticator.h"
#include "coordinator/rest/rest_access.h"

namespace keyflow {

class TrustedKeyStore {
 public:
  // Reads the keys once; an error names the file and what to do.
  static Result<std::unique_ptr<TrustedKeyStore>> Load(KeyDirectory dir);
  // A store over a fixed set (tests; Reload then re-reads `dir`).
  TrustedKeyStore(KeyDirectory dir, TrustedKeys keys,
                  std::map<std::string, RestCaller, std::less<>> token_hashes = {})
      : dir_(std::move(dir)), keys_(std::move(keys)), token_hashes_(std::move(token_hashes)) {}

  // Re-reads the directory. On success returns the number of keys trusted now; on failure the
  // old set stays and the error says why ("... the previously loaded keys stay in use").
  Result<size_t> Reload();

  // True if `identity` is the identity of a currently trusted key.
  bool Trusts(const PeerIdentity& identity) const;
  // The public key of `identity`, "" if none.
  std::string PublicKeyOf(const PeerIdentity& identity) const;
  size_t size() const;

  // The viewer or operator client whose REST token hashes to `token_sha256_hex`, nullopt if
  // none. Compares with every stored hash in constant time.
  std::optional<RestCaller> CallerOfTokenHash(std::string_view token_sha256_hex) const;
  size_t token_count() const;

  // The ZAP policy of the control ROUTER: admits exactly the trusted keys, with user id
  // identity.ToUserId(); logs refusals (at most once per peer address per minute).
  ZapPolicy Policy();

  const KeyDirectory& directory() const { return dir_; }

 private:
  ZapDecision Decide(const ZapRequest& request);

  const KeyDirectory dir_;
  mutable std::mutex mu_;
  TrustedKeys keys_;                                             // guarded by mu_
  std::map<std::string, RestCaller, std::less<>> token_hashes_;  // sha256 -> holder; mu_
  std::map<std::string, int64_t> last_refusal_log_;  // peer address -> ms; guarded by mu_
};

}  // namespace keyflow
