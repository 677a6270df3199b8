#include "coordinator/cli/keys_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/security/curve_keys.h"
#include "common/security/tls_certificate.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::cli {
namespace {

namespace fs = std::filesystem;
using test::Mode;

class KeysCommandTest : public ::testing::Test {
 protected:
  int Run(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    return RunKeysCommand(args, out_, err_);
  }

  TempDir tmp_{"keyflow-keys"};
  const std::string root_ = tmp_.path();
  const std::string dir_ = root_ + "/keys";
  std::ostringstream out_, err_;
};

TEST_F(KeysCommandTest, InitCreatesTheKeySetWithPrivateModes) {
  ::umask(022);
  ASSERT_EQ(Run({"init", dir_, "--workers", "3", "--clients", "operator,alice"}), 0) << err_.str();
  EXPECT_EQ(Mode(dir_), 0700u);
  EXPECT_EQ(Mode(dir_ + "/workers"), 0700u);
  EXPECT_EQ(Mode(dir_ + "/clients"), 0700u);
  EXPECT_EQ(Mode(dir_ + "/coordinator.key"), 0600u);
  EXPECT_EQ(Mode(dir_ + "/coordinator.pub"), 0644u);
  for (const char* name : {"worker-0", "worker-1", "worker-2"}) {
    EXPECT_EQ(Mode(dir_ + "/workers/" + name + ".key"), 0600u);
    EXPECT_EQ(Mode(dir_ + "/workers/" + name + ".pub"), 0644u);
  }
  EXPECT_FALSE(fs::exists(dir_ + "/workers/worker-3.key"));
  for (const char* name : {"operator", "alice"}) {
    EXPECT_EQ(Mode(dir_ + "/clients/" + name + ".key"), 0600u);
    EXPECT_EQ(Mode(dir_ + "/clients/" + name + ".pub"), 0644u);
  }
  // The files are what the processes read: a valid pair, role and name per place.
  auto worker = ReadKeyFile(dir_ + "/workers/worker-1.key", /*require_secret=*/true);
  ASSERT_OK(worker);
  EXPECT_EQ(worker->identity, (PeerIdentity{Role::kWorker, "worker-1"}));
  auto trusted = LoadTrustedKeys(KeyDirectory{dir_});
  ASSERT_OK(trusted);
  EXPECT_EQ(trusted->size(), 5u);
  EXPECT_EQ(trusted->at(worker->keys.public_key), (PeerIdentity{Role::kWorker, "worker-1"}));
  auto coordinator = ReadKeyFile(dir_ + "/coordinator.key", true);
  ASSERT_OK(coordinator);
  EXPECT_EQ(coordinator->identity.role, Role::kCoordinator);
  EXPECT_EQ(trusted->count(coordinator->keys.public_key), 0u);
}

TEST_F(KeysCommandTest, InitWritesTheRestServersTlsCertificate) {
  ::umask(0);
  ASSERT_EQ(Run({"init", dir_, "--rest-hosts", "coordinator.example,10.0.0.7"}), 0) << err_.str();
  ::umask(022);
  const KeyDirectory keys{dir_};
  EXPECT_EQ(keys.RestTlsCert(), dir_ + "/rest/tls.crt");
  EXPECT_EQ(Mode(dir_ + "/rest"), 0700u);
  EXPECT_EQ(Mode(keys.RestTlsKey()), 0600u);
  EXPECT_EQ(Mode(keys.RestTlsCert()), 0644u);
  EXPECT_OK(CheckTlsCertificateFiles(keys.RestTlsCert(), keys.RestTlsKey()));
  EXPECT_NE(out_.str().find("--rest-tls-cert " + keys.RestTlsCert()), std::string::npos)
      << out_.str();
  // The key set's trusted CURVE keys are unchanged by it.
  auto trusted = LoadTrustedKeys(keys);
  ASSERT_OK(trusted);
  EXPECT_EQ(trusted->size(), 3u);
}

TEST_F(KeysCommandTest, RestTlsAddsTheCertificateToAnOlderKeySetOnce) {
  ASSERT_EQ(Run({"init", dir_}), 0) << err_.str();
  fs::remove_all(dir_ + "/rest");  // a key set made before init wrote it
  ASSERT_EQ(Run({"rest-tls", "--keys", dir_}), 0) << err_.str();
  const KeyDirectory keys{dir_};
  EXPECT_OK(CheckTlsCertificateFiles(keys.RestTlsCert(), keys.RestTlsKey()));
  EXPECT_EQ(Mode(keys.RestTlsKey()), 0600u);
  EXPECT_EQ(Run({"rest-tls", "--keys", dir_}), 1);
  EXPECT_EQ(err_.str(), "keyflow: TLS certificate " + keys.RestTlsCert() +
                            " already exists: keys are never overwritten; remove it first if you "
                            "really mean to replace it\n");
  EXPECT_EQ(Run({"rest-tls", "--keys", root_ + "/none"}), 1);
  EXPECT_NE(err_.str().find("holds no key set"), std::string::npos) << err_.str();
}

TEST_F(KeysCommandTest, InitDefaultsToTwoWorkersAndTheOperatorClient) {
  ASSERT_EQ(Run({"init", dir_}), 0) << err_.str();
  EXPECT_TRUE(fs::exists(dir_ + "/workers/worker-1.key"));
  EXPECT_FALSE(fs::exists(dir_ + "/workers/worker-2.key"));
  EXPECT_TRUE(fs::exists(dir_ + "/clients/operator.key"));
  EXPECT_NE(out_.str().find("export KEYFLOW_KEYS=" + dir_), std::string::npos) << out_.str();
}

TEST_F(KeysCommandTest, InitRefusesAnExistingKeySetAndKeepsItsKeys) {
  ASSERT_EQ(Run({"init", dir_}), 0);
  auto before = ReadKeyFile(dir_ + "/coordinator.key", true);
  ASSERT_OK(before);
  EXPECT_EQ(Run({"init", dir_}), 1);
  EXPECT_EQ(err_.str(),
            "keyflow: " + dir_ + " already holds a key set; keys are never overwritten\n");
  auto after = ReadKeyFile(dir_ + "/coordinator.key", true);
  ASSERT_OK(after);
  EXPECT_EQ(after->keys, before->keys);
}

TEST_F(KeysCommandTest, InitRefusesANonEmptyDirectoryButTakesAnEmptyOne) {
  fs::create_directories(root_ + "/full");
  std::ofstream(root_ + "/full/notes.txt") << "x";
  EXPECT_EQ(Run({"init", root_ + "/full"}), 1);
  EXPECT_EQ(err_.str(), "keyflow: " + root_ +
                            "/full exists and is not an empty directory: give a new directory "
                            "for the key set\n");
  fs::create_directories(root_ + "/empty");
  fs::permissions(root_ + "/empty", fs::perms::all);
  ASSERT_EQ(Run({"init", root_ + "/empty", "--workers", "1"}), 0) << err_.str();
  EXPECT_EQ(Mode(root_ + "/empty"), 0700u);
}

TEST_F(KeysCommandTest, InitRejectsBadArguments) {
  EXPECT_EQ(Run({"init"}), 2);  // no DIR
  EXPECT_EQ(Run({"init", dir_, "--workers", "-1"}), 2);
  EXPECT_EQ(err_.str(),
            "keyflow: --workers -1 is out of range: give 0..1024 (add more later with `keyflow "
            "keys add-worker NAME`)\n");
  EXPECT_EQ(Run({"init", dir_, "--clients", "ops,../x"}), 2);
  EXPECT_NE(err_.str().find("--clients"), std::string::npos) << err_.str();
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(KeysCommandTest, AddWorkerAndClientAddOneKeyAndRefuseAnExistingName) {
  ASSERT_EQ(Run({"init", dir_, "--workers", "1"}), 0);
  ASSERT_EQ(Run({"add-worker", "worker-7", "--keys", dir_}), 0) << err_.str();
  EXPECT_EQ(Mode(dir_ + "/workers/worker-7.key"), 0600u);
  EXPECT_EQ(Mode(dir_ + "/workers/worker-7.pub"), 0644u);
  ASSERT_EQ(Run({"add-client", "alice", "--keys", dir_}), 0) << err_.str();
  EXPECT_EQ(Mode(dir_ + "/clients/alice.key"), 0600u);
  EXPECT_EQ(Mode(dir_ + "/clients/alice.pub"), 0644u);
  auto alice = ReadKeyFile(dir_ + "/clients/alice.key", true);
  ASSERT_OK(alice);
  EXPECT_EQ(alice->identity, (PeerIdentity{Role::kOperator, "alice"}));

  EXPECT_EQ(Run({"add-worker", "worker-0", "--keys", dir_}), 1);
  EXPECT_EQ(err_.str(), "keyflow: the key set " + dir_ +
                            " already has a worker key named worker-0: keys are never "
                            "overwritten; choose another name\n");
  EXPECT_EQ(Run({"add-client", "operator", "--keys", dir_}), 1);
  EXPECT_EQ(err_.str(), "keyflow: the key set " + dir_ +
                            " already has a operator key named operator: keys are never "
                            "overwritten; choose another name\n");
}

TEST_F(KeysCommandTest, AddRefusesAMissingKeySetAndABadName) {
  EXPECT_EQ(Run({"add-worker", "w1", "--keys", dir_}), 1);
  EXPECT_EQ(
      err_.str(),
      "keyflow: " + dir_ + " holds no key set: create one with `keyflow keys init " + dir_ + "`\n");
  ASSERT_EQ(Run({"init", dir_}), 0);
  EXPECT_EQ(Run({"add-client", ".hidden", "--keys", dir_}), 2);
  EXPECT_FALSE(fs::exists(dir_ + "/clients/.hidden.key"));
  EXPECT_EQ(Run({"add-worker", "--keys", dir_}), 2);  // no NAME
}

TEST_F(KeysCommandTest, AddUsesKeyflowKeysFromTheEnvironment) {
  ASSERT_EQ(Run({"init", dir_}), 0);
  ::setenv("KEYFLOW_KEYS", dir_.c_str(), 1);
  const int code = Run({"add-worker", "from-env"});
  ::unsetenv("KEYFLOW_KEYS");
  EXPECT_EQ(code, 0) << err_.str();
  EXPECT_TRUE(fs::exists(dir_ + "/workers/from-env.key"));
}

TEST_F(KeysCommandTest, ListShowsRolesNamesKeysAndRevokedKeys) {
  ASSERT_EQ(Run({"init", dir_, "--workers", "2"}), 0);
  fs::remove(dir_ + "/workers/worker-1.pub");  // revoked
  auto coordinator = ReadKeyFile(dir_ + "/coordinator.pub", false);
  auto w0 = ReadKeyFile(dir_ + "/workers/worker-0.pub", false);
  auto w1 = ReadKeyFile(dir_ + "/workers/worker-1.key", true);
  auto op = ReadKeyFile(dir_ + "/clients/operator.pub", false);
  ASSERT_TRUE(coordinator.ok() && w0.ok() && w1.ok() && op.ok());

  ASSERT_EQ(Run({"list", "--keys", dir_}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "ROLE         NAME                STATE        PUBLIC-KEY\n"
            "coordinator  coordinator         coordinator  " +
                coordinator->keys.public_key +
                "\n"
                "worker       worker-0            admitted     " +
                w0->keys.public_key +
                "\n"
                "worker       worker-1            revoked      " +
                w1->keys.public_key +
                "\n"
                "operator     operator            admitted     " +
                op->keys.public_key + "\n");

  ASSERT_EQ(Run({"list", "--keys", dir_, "--json"}), 0);
  auto j = nlohmann::json::parse(out_.str());
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[2]["role"], "worker");
  EXPECT_EQ(j[2]["name"], "worker-1");
  EXPECT_EQ(j[2]["state"], "revoked");
  EXPECT_EQ(j[3]["public_key"], op->keys.public_key);
  EXPECT_EQ(out_.str().find("secret"), std::string::npos);  // never prints a secret key
  EXPECT_EQ(out_.str().find(w1->keys.secret_key), std::string::npos);
}

// A viewer is a read-only REST token without a CURVE key (coordinator/rest/rest_token.h).
TEST_F(KeysCommandTest, AddTokenRoleViewerCreatesAReadOnlyTokenThatListShows) {
  ::umask(022);
  ASSERT_EQ(Run({"init", dir_, "--workers", "0"}), 0) << err_.str();
  ASSERT_EQ(Run({"add-token", "grafana", "--role", "viewer", "--keys", dir_}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "added the read-only REST token of viewer grafana: " + dir_ +
                            "/viewers/grafana.token (keep it private; send it as "
                            "`Authorization: Bearer <token>`, e.g. Prometheus' "
                            "authorization.credentials_file)\n");
  EXPECT_EQ(Mode(dir_ + "/viewers"), 0700u);
  EXPECT_EQ(Mode(dir_ + "/viewers/grafana.token"), 0600u);
  EXPECT_EQ(Mode(dir_ + "/viewers/grafana.token-sha256"), 0644u);
  EXPECT_FALSE(fs::exists(dir_ + "/clients/grafana.key")) << "no CURVE key";

  EXPECT_EQ(Run({"add-token", "grafana", "--role", "viewer", "--keys", dir_}), 1);
  EXPECT_EQ(err_.str(), "keyflow: the key set " + dir_ + " already has a viewer named grafana (" +
                            dir_ +
                            "/viewers/grafana.token already exists: tokens are never "
                            "overwritten): choose another name\n");
  EXPECT_EQ(Run({"add-token", "grafana", "--role", "admin", "--keys", dir_}), 2);
  EXPECT_EQ(err_.str(),
            "keyflow: --role admin is not a token role: give operator (reads and commands) or "
            "viewer (reads only)\n");
  EXPECT_EQ(Run({"add-token", "nobody", "--keys", dir_}), 1) << "operator: needs a client key";
  EXPECT_NE(err_.str().find("has no operator client key named nobody"), std::string::npos)
      << err_.str();

  ASSERT_EQ(Run({"add-token", "old", "--role", "viewer", "--keys", dir_}), 0);
  fs::remove(dir_ + "/viewers/old.token-sha256");  // revoked
  ASSERT_EQ(Run({"list", "--keys", dir_}), 0) << err_.str();
  const std::string text = out_.str();
  EXPECT_NE(text.find("viewer       grafana             admitted     - (a REST token, no key)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("viewer       old                 revoked      - (a REST token, no key)\n"),
            std::string::npos)
      << text;
  ASSERT_EQ(Run({"list", "--keys", dir_, "--json"}), 0);
  auto j = nlohmann::json::parse(out_.str());
  ASSERT_EQ(j.size(), 4u);  // coordinator, operator, grafana, old
  EXPECT_EQ(j[2], (nlohmann::json{{"role", "viewer"},
                                  {"name", "grafana"},
                                  {"state", "admitted"},
                                  {"public_key", nullptr}}));
  EXPECT_EQ(j[3]["state"], "revoked");
}

TEST_F(KeysCommandTest, UnknownSubcommandAndHelp) {
  EXPECT_EQ(Run({}), 2);
  EXPECT_EQ(Run({"rotate"}), 2);
  EXPECT_EQ(err_.str().substr(0, 42), "keyflow: unknown subcommand 'keys rotate'\n");
  EXPECT_EQ(Run({"--help"}), 0);
  EXPECT_NE(out_.str().find("add-worker"), std::string::npos);
  testing::internal::CaptureStdout();  // a subcommand's --help goes to stdout
  EXPECT_EQ(Run({"init", "--help"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("--workers"), std::string::npos);
}

}  // namespace
}  // namespace keyflow::cli
