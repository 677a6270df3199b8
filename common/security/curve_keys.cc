#include "common/security/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <zmq.h>

#include "common/file_io.h"

namespace keyflow {
namespace {

constexpr std::string_view kHeader = "keyflow-curve-key";

std::string Errno(int e) {
  return std::strerror(e);
}

}  // namespace

bool CurveAvailable() {
  return zmq_has("curve") != 0;
}

Result<CurveKeyPair> GenerateCurveKeyPair() {
  if (!CurveAvailable()) {
    return FailedPrecondition(
        "this libzmq was built without CURVE support: install Debian's libzmq5 (scripts/"
        "install-deps.sh) or run the cluster with --insecure");
  }
  char pub[kZ85KeySize + 1];
  char sec[kZ85KeySize + 1];
  if (zmq_curve_keypair(pub, sec) != 0) {
    return Internal(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{std::string(pub, kZ85KeySize), std::string(sec, kZ85KeySize)};
}

Status ValidateZ85Key(std::string_view z85) {
  if (z85.size() != kZ85KeySize) {
    return InvalidArgument("a CURVE key has " + std::to_string(kZ85KeySize) +
                           " Z85 characters, this one has " + std::to_string(z85.size()));
  }
  std::string text(z85);
  uint8_t bytes[32];
  if (zmq_z85_decode(bytes, text.c_str()) == nullptr) {
    return InvalidArgument("a CURVE key must be Z85 text; this one has characters outside Z85");
  }
  return Status::Ok();
}

std::string RenderKeyFile(const KeyFile& file) {
  std::string out = "# keyflow CURVE key";
  out += file.keys.secret_key.empty() ? " (public part)\n" : ": keep the secret-key line private\n";
  out += std::string(kHeader) + " " + std::to_string(kCurveKeyFileVersion) + "\n";
  out += "role " + std::string(RoleName(file.identity.role)) + "\n";
  out += "name " + file.identity.name + "\n";
  out += "public-key " + file.keys.public_key + "\n";
  if (!file.keys.secret_key.empty()) out += "secret-key " + file.keys.secret_key + "\n";
  return out;
}

Result<KeyFile> ParseKeyFile(std::string_view text, std::string_view path, bool require_secret) {
  const std::string where = "key file " + std::string(path);
  std::istringstream in{std::string(text)};
  std::string line;
  bool saw_header = false;
  bool saw_role = false;
  KeyFile file;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') continue;
    const size_t space = line.find(' ');
    const std::string field = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (!saw_header) {
      if (field != kHeader) {
        return InvalidArgument(where + " is not a keyflow key file (its first line must be '" +
                               std::string(kHeader) + " " + std::to_string(kCurveKeyFileVersion) +
                               "'); create keys with `keyflow keys init DIR`");
      }
      if (value != std::to_string(kCurveKeyFileVersion)) {
        return InvalidArgument(where + " has key file version " + value + ", this keyflow reads " +
                               std::to_string(kCurveKeyFileVersion));
      }
      saw_header = true;
    } else if (field == "role") {
      Result<Role> role = ParseRole(value);
      if (!role.ok()) return role.status().WithContext(where);
      file.identity.role = *role;
      saw_role = true;
    } else if (field == "name") {
      KF_RETURN_IF_ERROR_CTX(ValidateKeyName(value), where);
      file.identity.name = value;
    } else if (field == "public-key") {
      KF_RETURN_IF_ERROR_CTX(ValidateZ85Key(value), where + ": public-key");
      file.keys.public_key = value;
    } else if (field == "secret-key") {
      KF_RETURN_IF_ERROR_CTX(ValidateZ85Key(value), where + ": secret-key");
      file.keys.secret_key = value;
    } else {
      return InvalidArgument(where + " has an unknown line '" + field + "'");
    }
  }
  if (!saw_header || !saw_role || file.identity.name.empty() || file.keys.public_key.empty()) {
    return InvalidArgument(where +
                           " is incomplete: it needs the version, role, name and public-key lines");
  }
  if (require_secret) {
    if (file.keys.secret_key.empty()) {
      return InvalidArgument(where + " has no secret-key line: pass the .key file, not the .pub");
    }
    char derived[kZ85KeySize + 1];
    if (zmq_curve_public(derived, file.keys.secret_key.c_str()) != 0 ||
        file.keys.public_key != std::string_view(derived, kZ85KeySize)) {
      return InvalidArgument(where + ": the secret key does not belong to its public key");
    }
  } else if (!file.keys.secret_key.empty()) {
    return InvalidArgument(where + " holds a secret key where only a public key belongs: it " +
                           "must not be shared; remove its secret-key line");
  }
  return file;
}

Result<KeyFile> ReadKeyFile(const std::string& path, bool require_secret) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseKeyFile(*text, path, require_secret);
}

Status WriteNewFile(const std::string& path, std::string_view text, unsigned mode,
                    std::string_view what) {
  const std::string noun(what);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return AlreadyExists(noun + " " + path + " already exists: keys are never overwritten; " +
                           "remove it first if you really mean to replace it");
    }
    return IoError("cannot create " + noun + " " + path + ": " + Errno(errno));
  }
  // The mode given to open() is reduced by the umask; set it exactly.
  bool ok = ::fchmod(fd, mode) == 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return IoError("cannot write " + noun + " " + path + ": " + Errno(saved));
  }
  return Status::Ok();
}

Status WriteNewKeyFile(const std::string& path, const KeyFile& file, unsigned mode) {
  return WriteNewFile(path, RenderKeyFile(file), mode, "key file");
}

std::string KeyDirectory::RoleDir(Role role) const {
  return dir + (role == Role::kWorker ? "/workers" : "/clients");
}

std::string KeyDirectory::SecretKeyFile(Role role, std::string_view name) const {
  if (role == Role::kCoordinator) return CoordinatorKey();
  return RoleDir(role) + "/" + std::string(name) + ".key";
}

std::string KeyDirectory::PublicKeyFile(Role role, std::string_view name) const {
  if (role == Role::kCoordinator) return CoordinatorPub();
  return RoleDir(role) + "/" + std::string(name) + ".pub";
}

Result<TrustedKeys> LoadTrustedKeys(const KeyDirectory& dir) {
  TrustedKeys keys;
  std::map<std::string, std::string> file_of;  // public key -> file, for duplicate messages
  for (Role role : {Role::kWorker, Role::kOperator}) {
    const std::string role_dir = dir.RoleDir(role);
    std::error_code ec;
    if (!std::filesystem::is_directory(role_dir, ec)) {
      return NotFound("key directory " + dir.dir + " has no " + role_dir +
                      ": create the key set with `keyflow keys init " + dir.dir + "`");
    }
    for (const auto& entry : std::filesystem::directory_iterator(role_dir, ec)) {
      const std::string path = entry.path().string();
      if (entry.path().extension() != ".pub") continue;
      Result<KeyFile> file = ReadKeyFile(path, /*require_secret=*/false);
      if (!file.ok()) return file.status();
      if (file->identity.role != role || file->identity.name != entry.path().stem().string()) {
        return InvalidArgument("key file " + path + " says it is " + file->identity.ToUserId() +
                               ", but its place in the key directory makes it " +
                               std::string(RoleName(role)) + ":" + entry.path().stem().string());
      }
      if (auto [it, inserted] = file_of.emplace(file->keys.public_key, path); !inserted) {
        return InvalidArgument("key files " + it->second + " and " + path +
                               " hold the same public key: remove one of them");
      }
      keys.emplace(file->keys.public_key, file->identity);
    }
    if (ec) return IoError("cannot list " + role_dir + ": " + ec.message());
  }
  return keys;
}

}  // namespace keyflow
