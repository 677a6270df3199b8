// REST bearer tokens (coordinator/README.md "REST API", README "Security"): an operator client
// key of the key set also has a random 256-bit token for the REST API's commands.
//
//   DIR/clients/NAME.token          0600  the token (64 hex digits): only the client keeps it
//   DIR/clients/NAME.token-sha256   0644  its SHA-256 (hex): what the coordinator reads
//
// `keyflow keys init` and `keyflow keys add-client NAME` create both; `keyflow keys add-token
// NAME` adds them to a client key made before tokens existed. The coordinator admits a token
// only while the client key NAME (clients/NAME.pub) is trusted, so revoking the key (remove its
// .pub, `keyflow keys reload`) revokes the token; removing NAME.token-sha256 and reloading
// revokes the token alone. Workers never have tokens.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/security/curve_keys.h"
#include "common/status.h"

namespace keyflow {

inline constexpr size_t kRestTokenHexSize = 64;  // 256 bits

std::string RestTokenFile(const KeyDirectory& keys, std::string_view client);
std::string RestTokenHashFile(const KeyDirectory& keys, std::string_view client);

// 64 lowercase hex digits from the kernel's random source (getrandom).
Result<std::string> GenerateRestToken();
// Writes NAME.token (0600) and NAME.token-sha256 (0644) of a fresh token; AlreadyExists if
// either exists (tokens are never overwritten).
Status WriteNewRestToken(const KeyDirectory& keys, std::string_view client);
// The token in a .token file (trimmed), checked to be 64 hex digits.
Result<std::string> ReadRestToken(const std::string& path);

// token SHA-256 (hex) -> the operator client it belongs to, for every trusted client key with
// a NAME.token-sha256 file. A malformed hash file is an error naming it.
using RestTokenHashes = std::map<std::string, std::string, std::less<>>;
Result<RestTokenHashes> LoadRestTokenHashes(const KeyDirectory& keys, const TrustedKeys& trusted);

// Equal length and bytes, in time independent of where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace keyflow
