// SHA-256 (libsodium's crypto_hash_sha256) as lowercase hex: the content hash of job libraries
// (JobLibraryRef::sha256). Used by the CLI (hash at submit), the coordinator's blob store
// (verify what arrived) and the worker's job library cache (verify before every load).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keyflow {

// Lowercase hex SHA-256 of `bytes` (64 characters).
std::string Sha256Hex(std::string_view bytes);

// True for exactly 64 lowercase hex digits: what Sha256Hex returns. A JobLibraryRef from the
// wire is checked with it before its hash becomes part of a file name.
bool IsSha256Hex(std::string_view s);

// Incremental hashing, for files read in chunks.
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  std::string FinishHex();  // call once

 private:
  alignas(16) unsigned char state_[128];  // crypto_hash_sha256_state (104 bytes in libsodium)
};

}  // namespace keyflow
