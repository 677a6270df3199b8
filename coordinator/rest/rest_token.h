// REST bearer tokens (coordinator/README.md "REST API", README "Security"): random 256-bit
// tokens of two roles (rest_access.h). An operator client key of the key set has one for reads
// and commands; a viewer is a token alone, without a CURVE key, for reads only.
//
//   DIR/clients/NAME.token          0600  an operator's token (64 hex digits): only it keeps it
//   DIR/clients/NAME.token-sha256   0644  its SHA-256 (hex): what the coordinator reads
//   DIR/viewers/                    0700
//   DIR/viewers/NAME.token          0600  a viewer's token
//   DIR/viewers/NAME.token-sha256   0644  its SHA-256
//
// `keyflow keys init` and `keyflow keys add-client NAME` create an operator's pair; `keyflow
// keys add-token NAME` adds it to a client key made before tokens existed, `keyflow keys
// add-token NAME --role viewer` creates a viewer. The coordinator admits an operator's token
// only while the client key NAME (clients/NAME.pub) is trusted, so revoking the key (remove its
// .pub, `keyflow keys reload`) revokes the token; removing NAME.token-sha256 (of either role)
// and reloading revokes the token alone. Workers never have tokens.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/security/curve_keys.h"
#include "common/status.h"
#include "coordinator/rest/rest_access.h"

namespace keyflow {

inline constexpr size_t kRestTokenHexSize = 64;  // 256 bits

// An operator client's token files (DIR/clients/NAME.token, .token-sha256).
std::string RestTokenFile(const KeyDirectory& keys, std::string_view client);
std::string RestTokenHashFile(const KeyDirectory& keys, std::string_view client);
// DIR/viewers, and a viewer's token files in it.
std::string ViewerDir(const KeyDirectory& keys);
std::string ViewerTokenFile(const KeyDirectory& keys, std::string_view viewer);
std::string ViewerTokenHashFile(const KeyDirectory& keys, std::string_view viewer);

// 64 lowercase hex digits from the kernel's random source (getrandom).
Result<std::string> GenerateRestToken();
// Writes clients/NAME.token (0600) and NAME.token-sha256 (0644) of a fresh token; AlreadyExists
// if either exists (tokens are never overwritten).
Status WriteNewRestToken(const KeyDirectory& keys, std::string_view client);
// The same for viewer NAME in DIR/viewers (created 0700 if missing).
Status WriteNewViewerToken(const KeyDirectory& keys, std::string_view viewer);
// The token in a .token file (trimmed), checked to be 64 hex digits.
Result<std::string> ReadRestToken(const std::string& path);

// token SHA-256 (hex) -> whose token it is: every trusted operator client key with a
// clients/NAME.token-sha256 file, and every DIR/viewers/NAME.token-sha256. A malformed hash
// file, a viewer file with a bad name or the same hash twice is an error naming the file.
using RestTokenHashes = std::map<std::string, RestCaller, std::less<>>;
Result<RestTokenHashes> LoadRestTokenHashes(const KeyDirectory& keys, const TrustedKeys& trusted);

// The viewers of a key set by name: true when the coordinator would admit the token (its
// .token-sha256 is there), false when only the .token is left (revoked).
Result<std::map<std::string, bool>> ListViewers(const KeyDirectory& keys);

// Equal length and bytes, in time independent of where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace keyflow
