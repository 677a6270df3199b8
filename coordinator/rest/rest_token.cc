#include "coordinator/rest/rest_token.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/file_io.h"
#include "common/security/sha256.h"

namespace keyflow {
namespace {

namespace fs = std::filesystem;

bool IsHex64(std::string_view s) {
  if (s.size() != kRestTokenHexSize) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// Creates `path` with `mode` (O_EXCL: never over an existing file) holding `content`.
Status WriteNewFile(const std::string& path, const std::string& content, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return AlreadyExists(path + " already exists: tokens are never overwritten");
    }
    return IoError("cannot create " + path + ": " + std::strerror(errno));
  }
  // open's mode is reduced by the umask: set it exactly.
  bool ok = fchmod(fd, mode) == 0 &&
            write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()) &&
            fsync(fd) == 0;
  int err = errno;
  close(fd);
  if (!ok) return IoError("cannot write " + path + ": " + std::strerror(err));
  return Status::Ok();
}

}  // namespace

std::string RestTokenFile(const KeyDirectory& keys, std::string_view client) {
  return keys.RoleDir(Role::kOperator) + "/" + std::string(client) + ".token";
}

std::string RestTokenHashFile(const KeyDirectory& keys, std::string_view client) {
  return keys.RoleDir(Role::kOperator) + "/" + std::string(client) + ".token-sha256";
}

std::string ViewerDir(const KeyDirectory& keys) {
  return keys.dir + "/viewers";
}

std::string ViewerTokenFile(const KeyDirectory& keys, std::string_view viewer) {
  return ViewerDir(keys) + "/" + std::string(viewer) + ".token";
}

std::string ViewerTokenHashFile(const KeyDirectory& keys, std::string_view viewer) {
  return ViewerDir(keys) + "/" + std::string(viewer) + ".token-sha256";
}

Result<std::string> GenerateRestToken() {
  unsigned char bytes[kRestTokenHexSize / 2];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal(std::string("cannot read random bytes for a REST token (getrandom: ") +
                      std::strerror(errno) + "): retry");
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

namespace {

// A fresh token in `token_file` (0600) and its hash in `hash_file` (0644).
Status WriteTokenPair(const std::string& token_file, const std::string& hash_file) {
  std::error_code ec;
  for (const std::string& p : {token_file, hash_file}) {
    if (fs::exists(p, ec))
      return AlreadyExists(p + " already exists: tokens are never overwritten");
  }
  KF_ASSIGN_OR_RETURN(std::string token, GenerateRestToken());
  // The secret first, so that a token the coordinator admits always has a holder.
  KF_RETURN_IF_ERROR(WriteNewFile(token_file, token + "\n", 0600));
  return WriteNewFile(hash_file, Sha256Hex(token) + "\n", 0644);
}

// The hash in a .token-sha256 file; Corruption naming it and what to do otherwise.
Result<std::string> ReadTokenHash(const std::string& path, const std::string& add_token_command) {
  KF_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::string_view hash = Trim(text);
  if (!IsHex64(hash)) {
    return Corruption(path +
                      " does not hold a SHA-256 (64 hex digits): remove it and create a new "
                      "token with `" +
                      add_token_command + "`");
  }
  return std::string(hash);
}

constexpr std::string_view kHashSuffix = ".token-sha256";
constexpr std::string_view kTokenSuffix = ".token";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Status WriteNewRestToken(const KeyDirectory& keys, std::string_view client) {
  KF_RETURN_IF_ERROR(ValidateKeyName(client));
  return WriteTokenPair(RestTokenFile(keys, client), RestTokenHashFile(keys, client));
}

Status WriteNewViewerToken(const KeyDirectory& keys, std::string_view viewer) {
  KF_RETURN_IF_ERROR(ValidateKeyName(viewer));
  const std::string dir = ViewerDir(keys);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return IoError("cannot create directory " + dir + ": " + std::strerror(errno) +
                   ": check that the key directory exists and is writable");
  }
  // mkdir's mode is reduced by the umask: set it exactly.
  if (::chmod(dir.c_str(), 0700) != 0) {
    return IoError("cannot make directory " + dir + " private (0700): " + std::strerror(errno));
  }
  return WriteTokenPair(ViewerTokenFile(keys, viewer), ViewerTokenHashFile(keys, viewer));
}

Result<std::string> ReadRestToken(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::string_view token = Trim(text);
  if (!IsHex64(token)) {
    return InvalidArgument(path +
                           " is not a REST token (64 hex digits): create one with "
                           "`keyflow keys add-token NAME`");
  }
  return std::string(token);
}

Result<RestTokenHashes> LoadRestTokenHashes(const KeyDirectory& keys, const TrustedKeys& trusted) {
  RestTokenHashes hashes;
  auto add = [&hashes](std::string hash, RestCaller caller, const std::string& path) -> Status {
    if (!hashes.emplace(std::move(hash), caller).second) {
      return Corruption(path +
                        " holds the same token hash as another token file: remove it and create "
                        "a new token with `keyflow keys add-token " +
                        caller.name + (caller.role == RestRole::kViewer ? " --role viewer" : "") +
                        "`");
    }
    return Status::Ok();
  };
  for (const auto& [public_key, identity] : trusted) {
    if (identity.role != Role::kOperator) continue;  // a worker never has a token
    const std::string path = RestTokenHashFile(keys, identity.name);
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    KF_ASSIGN_OR_RETURN(std::string hash,
                        ReadTokenHash(path, "keyflow keys add-token " + identity.name));
    KF_RETURN_IF_ERROR(add(std::move(hash), RestCaller{RestRole::kOperator, identity.name}, path));
  }
  KF_ASSIGN_OR_RETURN(auto viewers, ListViewers(keys));
  for (const auto& [name, admitted] : viewers) {
    if (!admitted) continue;
    const std::string path = ViewerTokenHashFile(keys, name);
    KF_ASSIGN_OR_RETURN(std::string hash,
                        ReadTokenHash(path, "keyflow keys add-token " + name + " --role viewer"));
    KF_RETURN_IF_ERROR(add(std::move(hash), RestCaller{RestRole::kViewer, name}, path));
  }
  return hashes;
}

Result<std::map<std::string, bool>> ListViewers(const KeyDirectory& keys) {
  std::map<std::string, bool> viewers;
  const std::string dir = ViewerDir(keys);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return viewers;  // a key set without viewers
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    const bool hash = EndsWith(file, kHashSuffix);
    if (!hash && !EndsWith(file, kTokenSuffix)) continue;
    const std::string name =
        file.substr(0, file.size() - (hash ? kHashSuffix.size() : kTokenSuffix.size()));
    if (Status s = ValidateKeyName(name); !s.ok()) {
      return InvalidArgument(entry.path().string() + " is not a viewer's token file (" +
                             s.message() + "): remove it");
    }
    viewers[name] = viewers[name] || hash;
  }
  if (ec) return IoError("cannot list " + dir + ": " + ec.message());
  return viewers;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = static_cast<unsigned char>(
        diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
  }
  return diff == 0;
}

}  // namespace keyflow
