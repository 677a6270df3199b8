// RestFixture: the REST router of a secure coordinator without the server — a real key set
// (`keyflow keys init`, the operator's token), its authenticator, the control-command bridge and
// a status publisher — for tests that send HttpRequests straight to the router.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "coordinator/cli/keys_command.h"
#include "coordinator/rest/rest_api.h"
#include "coordinator/rest/rest_auth.h"
#include "coordinator/rest/rest_token.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {

// True once `fd` is readable within `timeout_ms`.
inline bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

class RestFixture : public ::testing::Test {
 protected:
  // The key set (operator "operator") and the context; the test's SetUp mounts the routes it
  // tests on router_.
  void SetUp() override {
    keys_ = KeyDirectory{dir_.path() + "/keys"};
    ASSERT_OK(cli::InitKeySet(keys_.dir, 1, {"operator"}));
    LoadKeySet();
    context_.snapshots = &snapshots_;
    context_.bridge = bridge_.get();
    context_.secure = true;
    context_.command_timeout = std::chrono::seconds(10);
    operator_ = ReadRestToken(RestTokenFile(keys_, "operator")).value();
  }

  // (Re)loads the key set's tokens into a new authenticator (after the test added a token).
  void LoadKeySet() {
    store_ = TrustedKeyStore::Load(keys_).value();
    auth_ = std::make_unique<RestAuthenticator>(store_);
    if (!bridge_) bridge_ = ControlCommandBridge::Create().value();
    context_.auth = auth_.get();
  }

  // A request from `address` with `token` as its bearer token (none if empty).
  static HttpRequest Request(std::string method, std::string path, std::string body,
                             const std::string& token, std::string address = "10.0.0.7") {
    HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    r.body = std::move(body);
    r.remote_address = std::move(address);
    if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
    return r;
  }

  TestDir dir_;
  KeyDirectory keys_;
  std::shared_ptr<TrustedKeyStore> store_;
  std::unique_ptr<RestAuthenticator> auth_;
  std::unique_ptr<ControlCommandBridge> bridge_;
  StatusSnapshotPublisher snapshots_;
  RestContext context_;
  RestRouter router_;
  std::string operator_;  // the operator's REST token
};

}  // namespace keyflow::test
