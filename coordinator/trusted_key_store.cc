#include "coordinator/trusted_key_store.h"

#include "common/clock.h"
#include "common/logging/logging.h"
#include "coordinator/rest/rest_token.h"

namespace keyflow {
namespace {
constexpr int64_t kRefusalLogEveryMs = 60'000;
constexpr size_t kMaxRefusalLogPeers = 4096;
}  // namespace

Result<std::unique_ptr<TrustedKeyStore>> TrustedKeyStore::Load(KeyDirectory dir) {
  KF_ASSIGN_OR_RETURN(TrustedKeys keys, LoadTrustedKeys(dir));
  KF_ASSIGN_OR_RETURN(RestTokenHashes tokens, LoadRestTokenHashes(dir, keys));
  return std::make_unique<TrustedKeyStore>(std::move(dir), std::move(keys), std::move(tokens));
}

Result<size_t> TrustedKeyStore::Reload() {
  auto loaded = LoadTrustedKeys(dir_);
  Result<RestTokenHashes> tokens =
      loaded.ok() ? LoadRestTokenHashes(dir_, *loaded) : Result<RestTokenHashes>(loaded.status());
  if (!tokens.ok()) {
    return Status(tokens.status().code(),
                  "cannot reload the trusted keys of " + dir_.dir + " (" +
                      tokens.status().message() +
                      "); the previously loaded keys stay in use: fix the file and reload again");
  }
  std::lock_guard lock(mu_);
  keys_ = std::move(loaded).value();
  token_hashes_ = std::move(tokens).value();
  return keys_.size();
}

bool TrustedKeyStore::Trusts(const PeerIdentity& identity) const {
  return !PublicKeyOf(identity).empty();
}

std::string TrustedKeyStore::PublicKeyOf(const PeerIdentity& identity) const {
  std::lock_guard lock(mu_);
  for (const auto& [key, id] : keys_) {
    if (id == identity) return key;
  }
  return "";
}

size_t TrustedKeyStore::size() const {
  std::lock_guard lock(mu_);
  return keys_.size();
}

std::optional<RestCaller> TrustedKeyStore::CallerOfTokenHash(
    std::string_view token_sha256_hex) const {
  std::lock_guard lock(mu_);
  std::optional<RestCaller> found;
  // Every hash is compared (no early exit), each in constant time.
  for (const auto& [hash, caller] : token_hashes_) {
    if (ConstantTimeEquals(hash, token_sha256_hex)) found = caller;
  }
  return found;
}

size_t TrustedKeyStore::token_count() const {
  std::lock_guard lock(mu_);
  return token_hashes_.size();
}

ZapPolicy TrustedKeyStore::Policy() {
  return [this](const ZapRequest& r) { return Decide(r); };
}

ZapDecision TrustedKeyStore::Decide(const ZapRequest& r) {
  std::lock_guard lock(mu_);
  if (auto it = keys_.find(r.client_public_key); it != keys_.end()) {
    return ZapDecision::Admit(it->second.ToUserId());
  }
  std::string reason = "unknown client key " + r.client_public_key.substr(0, 8) + "... (not in " +
                       dir_.dir + "/workers or " + dir_.dir + "/clients)";
  int64_t now = MonotonicMillis();
  auto [it, fresh] = last_refusal_log_.try_emplace(r.address, now);
  if (fresh || now - it->second >= kRefusalLogEveryMs) {
    it->second = now;
    KF_LOG_WARN(
        "refused a control connection from {}: {}; add the key with `keyflow keys "
        "add-worker|add-client NAME` and `keyflow keys reload` if it should be admitted",
        r.address, reason);
  }
  if (last_refusal_log_.size() > kMaxRefusalLogPeers) last_refusal_log_.clear();
  return ZapDecision::Refuse(reason);
}

}  // namespace keyflow
