#include "coordinator/worker_key_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/security/curve_keys.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

class WorkerKeyCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w0_ = GenerateCurveKeyPair().value().public_key;
    w1_ = GenerateCurveKeyPair().value().public_key;
    alice_ = GenerateCurveKeyPair().value().public_key;
    trusted_[w0_] = PeerIdentity{Role::kWorker, "worker-0"};
    trusted_[w1_] = PeerIdentity{Role::kWorker, "worker-1"};
    trusted_[alice_] = PeerIdentity{Role::kOperator, "alice"};
  }
  // What the coordinator's trusted keys say about `peer`'s public key.
  std::string TrustedKeyOf(const PeerIdentity& peer) const {
    for (const auto& [key, identity] : trusted_) {
      if (identity == peer) return key;
    }
    return "";
  }
  Status Check(const std::optional<PeerIdentity>& peer, const std::string& announced) const {
    return CheckWorkerPublicKey(peer, peer ? TrustedKeyOf(*peer) : "", announced);
  }
  std::string w0_, w1_, alice_;
  TrustedKeys trusted_;
};

TEST_F(WorkerKeyCheckTest, AcceptsTheWorkersOwnTrustedKey) {
  EXPECT_OK(Check(PeerIdentity{Role::kWorker, "worker-0"}, w0_));
}

TEST_F(WorkerKeyCheckTest, RefusesAnotherWorkersKey) {
  // worker-0 announcing worker-1's key would make its peers admit worker-1 on its channels.
  Status s = Check(PeerIdentity{Role::kWorker, "worker-0"}, w1_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("worker worker-0 announced a data-plane public key that is "
                                     "not its own trusted key (workers/worker-0.pub)"));
}

TEST_F(WorkerKeyCheckTest, RefusesAnUnknownOrEmptyKey) {
  PeerIdentity w0{Role::kWorker, "worker-0"};
  EXPECT_FALSE(Check(w0, GenerateCurveKeyPair()->public_key).ok());
  EXPECT_FALSE(Check(w0, "").ok());
  // A worker identity with no trusted key announcing none: still refused.
  EXPECT_FALSE(Check(PeerIdentity{Role::kWorker, "ghost"}, "").ok());
}

TEST_F(WorkerKeyCheckTest, RefusesAnOperatorKeyAndAPlainConnection) {
  Status op = Check(PeerIdentity{Role::kOperator, "alice"}, alice_);
  EXPECT_THAT(op.message(),
              HasSubstr("key alice has the role operator and cannot register as a worker"));
  Status plain = Check(std::nullopt, w0_);
  EXPECT_THAT(plain.message(), HasSubstr("start the worker with --keys DIR --key-name NAME"));
}

}  // namespace
}  // namespace keyflow
