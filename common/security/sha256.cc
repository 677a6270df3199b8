#include "common/security/sha256.h"

#include <sodium.h>

#include <cstring>

#include "common/check.h"

namespace keyflow {
namespace {

static_assert(sizeof(crypto_hash_sha256_state) <= 128, "Sha256::state_ is too small");

std::string Hex(const unsigned char* digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * crypto_hash_sha256_BYTES, '0');
  for (size_t i = 0; i < crypto_hash_sha256_BYTES; ++i) {
    out[2 * i] = kDigits[digest[i] >> 4];
    out[2 * i + 1] = kDigits[digest[i] & 0xF];
  }
  return out;
}

crypto_hash_sha256_state* State(unsigned char* storage) {
  return reinterpret_cast<crypto_hash_sha256_state*>(storage);
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.FinishHex();
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 2 * crypto_hash_sha256_BYTES) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Sha256::Sha256() {
  // The SHA-256 functions need no sodium_init() (no randomness, no CPU dispatch).
  std::memset(state_, 0, sizeof(state_));
  KF_CHECK(crypto_hash_sha256_init(State(state_)) == 0);
}

void Sha256::Update(std::string_view bytes) {
  KF_CHECK(crypto_hash_sha256_update(State(state_),
                                     reinterpret_cast<const unsigned char*>(bytes.data()),
                                     bytes.size()) == 0);
}

std::string Sha256::FinishHex() {
  unsigned char digest[crypto_hash_sha256_BYTES];
  KF_CHECK(crypto_hash_sha256_final(State(state_), digest) == 0);
  return Hex(digest);
}

}  // namespace keyflow
