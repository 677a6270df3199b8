#include "common/security/curve_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/file_io.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

KeyFile WorkerKey(const std::string& name) {
  return KeyFile{PeerIdentity{Role::kWorker, name}, GenerateCurveKeyPair().value()};
}

TEST(CurveKeysTest, CurveIsAvailableAndGeneratesDistinctZ85Pairs) {
  ASSERT_TRUE(CurveAvailable());
  CurveKeyPair a = GenerateCurveKeyPair().value();
  CurveKeyPair b = GenerateCurveKeyPair().value();
  EXPECT_EQ(a.public_key.size(), 40u);
  EXPECT_EQ(a.secret_key.size(), 40u);
  EXPECT_NE(a.public_key, b.public_key);
  EXPECT_OK(ValidateZ85Key(a.public_key));
}

TEST(CurveKeysTest, Z85ValidationNamesWhatIsWrong) {
  EXPECT_EQ(ValidateZ85Key("abc").message(), "a CURVE key has 40 Z85 characters, this one has 3");
  EXPECT_EQ(ValidateZ85Key(std::string(40, '"')).message(),
            "a CURVE key must be Z85 text; this one has characters outside Z85");
}

TEST(CurveKeysTest, AKeyFileRoundTripsAndItsPublicPartHasNoSecret) {
  KeyFile k = WorkerKey("worker-0");
  Result<KeyFile> back = ParseKeyFile(RenderKeyFile(k), "w.key", /*require_secret=*/true);
  ASSERT_OK(back);
  EXPECT_EQ(back->identity, k.identity);
  EXPECT_EQ(back->keys, k.keys);

  KeyFile pub = k;
  pub.keys.secret_key.clear();
  const std::string text = RenderKeyFile(pub);
  EXPECT_EQ(text.find("secret-key"), std::string::npos);
  Result<KeyFile> pub_back = ParseKeyFile(text, "w.pub", /*require_secret=*/false);
  ASSERT_OK(pub_back);
  EXPECT_EQ(pub_back->keys.public_key, k.keys.public_key);
  // A .pub where a .key is required, and the other way round.
  EXPECT_EQ(ParseKeyFile(text, "w.pub", true).status().message(),
            "key file w.pub has no secret-key line: pass the .key file, not the .pub");
  EXPECT_EQ(ParseKeyFile(RenderKeyFile(k), "w.pub", false).status().message(),
            "key file w.pub holds a secret key where only a public key belongs: it must not be "
            "shared; remove its secret-key line");
}

TEST(CurveKeysTest, ASecretKeyThatDoesNotMatchItsPublicKeyIsRefused) {
  KeyFile k = WorkerKey("worker-0");
  k.keys.secret_key = GenerateCurveKeyPair().value().secret_key;
  EXPECT_EQ(ParseKeyFile(RenderKeyFile(k), "w.key", true).status().message(),
            "key file w.key: the secret key does not belong to its public key");
}

TEST(CurveKeysTest, MalformedKeyFilesAreRefusedWithTheFileName) {
  EXPECT_EQ(ParseKeyFile("hello\n", "x", false).status().message(),
            "key file x is not a keyflow key file (its first line must be 'keyflow-curve-key 1'); "
            "create keys with `keyflow keys init DIR`");
  EXPECT_EQ(ParseKeyFile("keyflow-curve-key 2\n", "x", false).status().message(),
            "key file x has key file version 2, this keyflow reads 1");
  EXPECT_EQ(ParseKeyFile("keyflow-curve-key 1\nrole worker\n", "x", false).status().message(),
            "key file x is incomplete: it needs the version, role, name and public-key lines");
  EXPECT_EQ(ParseKeyFile("keyflow-curve-key 1\nrole admin\n", "x", false).status().message(),
            "key file x: unknown role 'admin': expected coordinator, worker or operator");
  EXPECT_EQ(ParseKeyFile("keyflow-curve-key 1\nname ../x\n", "x", false).status().message(),
            "key file x: key name '../x' is not valid: use 1 to 64 letters, digits, '.', '_' or "
            "'-', not starting with '.'");
}

TEST(CurveKeysTest, WriteNewKeyFileSetsTheModeAndNeverOverwrites) {
  TempDir dir;
  const std::string path = dir.path() + "/w.key";
  KeyFile k = WorkerKey("w");
  ASSERT_OK(WriteNewKeyFile(path, k, 0600));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string before = ReadFileToString(path).value();
  Status again = WriteNewKeyFile(path, WorkerKey("w"), 0600);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadFileToString(path).value(), before);
}

TEST(CurveKeysTest, TrustedKeysComeFromWorkersAndClientsPublicFiles) {
  TempDir dir;
  KeyDirectory kd{dir.path()};
  std::filesystem::create_directories(kd.RoleDir(Role::kWorker));
  std::filesystem::create_directories(kd.RoleDir(Role::kOperator));
  KeyFile w = WorkerKey("w0");
  KeyFile op{PeerIdentity{Role::kOperator, "alice"}, GenerateCurveKeyPair().value()};
  for (KeyFile f : {w, op}) {
    ASSERT_OK(WriteNewKeyFile(kd.SecretKeyFile(f.identity.role, f.identity.name), f, 0600));
    f.keys.secret_key.clear();
    ASSERT_OK(WriteNewKeyFile(kd.PublicKeyFile(f.identity.role, f.identity.name), f, 0644));
  }
  Result<TrustedKeys> keys = LoadTrustedKeys(kd);
  ASSERT_OK(keys);
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ(keys->at(w.keys.public_key), w.identity);
  EXPECT_EQ(keys->at(op.keys.public_key), op.identity);

  // A worker .pub filed under clients/ is refused: its place in the directory is its role.
  KeyFile moved = w;
  moved.keys.secret_key.clear();
  moved.identity.name = "bob";
  ASSERT_OK(WriteNewKeyFile(kd.PublicKeyFile(Role::kOperator, "bob"), moved, 0644));
  EXPECT_EQ(LoadTrustedKeys(kd).status().message(),
            "key file " + kd.PublicKeyFile(Role::kOperator, "bob") +
                " says it is worker:bob, but its place in the key directory makes it "
                "operator:bob");
}

TEST(IdentityTest, UserIdsRoundTripAndRejectAnythingElse) {
  PeerIdentity w{Role::kWorker, "worker-0"};
  EXPECT_EQ(w.ToUserId(), "worker:worker-0");
  EXPECT_EQ(PeerIdentity::FromUserId("worker:worker-0"), w);
  EXPECT_EQ(PeerIdentity::FromUserId(""), std::nullopt);
  EXPECT_EQ(PeerIdentity::FromUserId("root:x"), std::nullopt);
  EXPECT_EQ(PeerIdentity::FromUserId("operator:"), std::nullopt);
}

}  // namespace
}  // namespace keyflow
