#include "coordinator/worker_key_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  std::string w0_, w1_, alice_;
  TrustedKeys trusted_;
};

TEST_F(WorkerKeyCheckTest, AcceptsTheWorkersOwnTrustedKey) {
  EXPECT_TRUE(CheckWorkerPublicKey(trusted_, PeerIdentity{Role::kWorker, "worker-0"}, w0_).ok());
}

TEST_F(WorkerKeyCheckTest, RefusesAnotherWorkersKey) {
  // worker-0 announcing worker-1's key would make its peers admit worker-1 on its channels.
  Status s = CheckWorkerPublicKey(trusted_, PeerIdentity{Role::kWorker, "worker-0"}, w1_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("worker worker-0 announced a data-plane public key that is "
                                     "not its own trusted key (workers/worker-0.pub)"));
}

TEST_F(WorkerKeyCheckTest, RefusesAnUnknownOrEmptyKey) {
  PeerIdentity w0{Role::kWorker, "worker-0"};
  EXPECT_FALSE(CheckWorkerPublicKey(trusted_, w0, GenerateCurveKeyPair()->public_key).ok());
  EXPECT_FALSE(CheckWorkerPublicKey(trusted_, w0, "").ok());
}

TEST_F(WorkerKeyCheckTest, RefusesAnOperatorKeyAndAPlainConnection) {
  Status op = CheckWorkerPublicKey(trusted_, PeerIdentity{Role::kOperator, "alice"}, alice_);
  EXPECT_THAT(op.message(),
              HasSubstr("key alice has the role operator and cannot register as a worker"));
  Status plain = CheckWorkerPublicKey(trusted_, std::nullopt, w0_);
  EXPECT_THAT(plain.message(), HasSubstr("start the worker with --keys DIR --key-name NAME"));
}

}  // namespace
}  // namespace keyflow
