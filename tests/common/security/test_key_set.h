// MakeTestKeySet: a key set laid out as `keyflow keys init` makes it (common/security/
// curve_keys.h), written with the seam functions, for tests of secure processes and sockets.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/security/curve_keys.h"

namespace keyflow::test {

// DIR/coordinator.{key,pub}, DIR/workers/W.{key,pub} per worker, DIR/clients/C.{key,pub} per
// client. Aborts the test's setup with a message on error.
inline Status MakeTestKeySet(const std::string& dir, const std::vector<std::string>& workers,
                             const std::vector<std::string>& clients) {
  KeyDirectory keys{dir};
  for (const std::string& d : {dir, keys.RoleDir(Role::kWorker), keys.RoleDir(Role::kOperator)}) {
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec || ::chmod(d.c_str(), 0700) != 0) return IoError("cannot create " + d);
  }
  auto write = [](const std::string& secret_path, const std::string& public_path,
                  const PeerIdentity& id) -> Status {
    KF_ASSIGN_OR_RETURN(CurveKeyPair pair, GenerateCurveKeyPair());
    KF_RETURN_IF_ERROR(WriteNewKeyFile(secret_path, KeyFile{id, pair}, 0600));
    return WriteNewKeyFile(public_path, KeyFile{id, CurveKeyPair{pair.public_key, ""}}, 0644);
  };
  KF_RETURN_IF_ERROR(
      write(keys.CoordinatorKey(), keys.CoordinatorPub(), {Role::kCoordinator, "coordinator"}));
  for (const auto& w : workers) {
    KF_RETURN_IF_ERROR(write(keys.SecretKeyFile(Role::kWorker, w),
                             keys.PublicKeyFile(Role::kWorker, w), {Role::kWorker, w}));
  }
  for (const auto& c : clients) {
    KF_RETURN_IF_ERROR(write(keys.SecretKeyFile(Role::kOperator, c),
                             keys.PublicKeyFile(Role::kOperator, c), {Role::kOperator, c}));
  }
  return Status::Ok();
}

}  // namespace keyflow::test
