// The coordinator side of shipping job libraries, driven message by message: SubmitJob stores
// the verified bytes in the blob store, every DeployTask names the library, and a worker's
// FetchJobLibrary is answered with the stored bytes — also by a restarted coordinator.
#include <gmock/gmock.h>

#include "common/security/sha256.h"
#include "coordinator/blob_store.h"
#include "tests/coordinator/coordinator_harness.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

class JobLibraryShippingTest : public CoordinatorHarness {
 protected:
  JobLibraryShippingTest() { Reset("first"); }

  JobSpec LibrarySpec(int32_t parallelism) {
    JobSpec spec = Spec(parallelism, 60'000);
    spec.job_library = ref_;
    return spec;
  }
  std::string BlobPath() const { return dir_.path() + "/blobs/" + ref_.sha256 + ".so"; }
  JobLibraryBlob Fetch(const std::string& identity) {
    size_t before = outbox_.To<JobLibraryBlob>(identity).size();
    coord_->OnMessage(identity,
                      FetchJobLibrary{ids_[identity], coord_->job()->attempt(), ref_.sha256}, now_);
    auto blobs = outbox_.To<JobLibraryBlob>(identity);
    EXPECT_EQ(blobs.size(), before + 1);
    return blobs.empty() ? JobLibraryBlob{} : blobs.back();
  }

  std::string bytes_ = std::string(
                           "\x7f"
                           "ELF",
                           4) +
                       std::string(20'000, 'L');
  JobLibraryRef ref_{Sha256Hex(bytes_), "libsessions.so", bytes_.size()};
};

TEST_F(JobLibraryShippingTest, SubmitStoresTheLibraryAndEveryDeploymentNamesIt) {
  Register("w0", 0);
  Register("w1", 1);
  coord_->OnMessage("cli", SubmitJob{LibrarySpec(2), bytes_}, now_);
  ASSERT_TRUE(outbox_.Last<Reply>("cli")->ok) << outbox_.Last<Reply>("cli")->message;
  EXPECT_EQ(*ReadFileToString(BlobPath()), bytes_);
  for (const char* w : {"w0", "w1"}) {
    auto d = outbox_.Last<DeployTask>(w);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->spec.job_library, ref_) << w;
  }
  EXPECT_EQ(coord_->job()->spec().job_library, ref_) << "kept in the job record's spec";
  EXPECT_EQ(JobStatus()["job_library"], nlohmann::json({{"file_name", "libsessions.so"},
                                                        {"sha256", ref_.sha256},
                                                        {"size_bytes", bytes_.size()}}));
}

TEST_F(JobLibraryShippingTest, BytesThatDoNotMatchTheRefAreRejectedAndNothingIsDeployed) {
  Register("w0", 0);
  std::string damaged = bytes_;
  damaged[7] = '!';
  coord_->OnMessage("cli", SubmitJob{LibrarySpec(1), damaged}, now_);
  auto reply = outbox_.Last<Reply>("cli");
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->ok);
  EXPECT_THAT(reply->message, HasSubstr("job rejected: job library libsessions.so"));
  EXPECT_THAT(reply->message, HasSubstr("not " + ref_.sha256));
  EXPECT_EQ(coord_->job(), nullptr);
  EXPECT_TRUE(outbox_.To<DeployTask>("w0").empty());
  EXPECT_FALSE(PathExists(BlobPath()));
}

TEST_F(JobLibraryShippingTest, BytesWithoutALibraryRefAreRejected) {
  coord_->OnMessage("cli", SubmitJob{Spec(1, 0), bytes_}, now_);
  EXPECT_THAT(outbox_.Last<Reply>("cli")->message,
              HasSubstr("carries job library bytes but names no job library"));
}

TEST_F(JobLibraryShippingTest, AWorkerFetchesTheStoredBytes) {
  Register("w0", 0);
  coord_->OnMessage("cli", SubmitJob{LibrarySpec(1), bytes_}, now_);
  JobLibraryBlob blob = Fetch("w0");
  EXPECT_EQ(blob.error, "");
  EXPECT_EQ(blob.sha256, ref_.sha256);
  EXPECT_EQ(blob.attempt, coord_->job()->attempt());
  EXPECT_EQ(blob.bytes, bytes_);
}

TEST_F(JobLibraryShippingTest, OnlyTheCurrentJobsLibraryIsServedAndOnlyToWorkers) {
  Register("w0", 0);
  coord_->OnMessage("cli", SubmitJob{LibrarySpec(1), bytes_}, now_);
  coord_->OnMessage("w0", FetchJobLibrary{ids_["w0"], AttemptNumber(1), Sha256Hex("other")}, now_);
  auto blob = outbox_.Last<JobLibraryBlob>("w0");
  ASSERT_TRUE(blob.has_value());
  EXPECT_EQ(blob->bytes, "");
  EXPECT_THAT(blob->error, HasSubstr("does not use job library " + Sha256Hex("other")));
  coord_->OnMessage("stranger", FetchJobLibrary{WorkerId(99), AttemptNumber(1), ref_.sha256}, now_);
  EXPECT_TRUE(outbox_.To<JobLibraryBlob>("stranger").empty());
}

TEST_F(JobLibraryShippingTest,
       ABlobDeletedBeforeACoordinatorRestartIsAnErrorThatSaysToSubmitAgain) {
  Register("w0", 0);
  coord_->OnMessage("cli", SubmitJob{LibrarySpec(1), bytes_}, now_);
  ASSERT_OK(RemoveFile(BlobPath()));
  EXPECT_EQ(Fetch("w0").bytes, bytes_) << "this coordinator keeps the verified bytes in memory";
  DeployAll({"w0"});

  Reset("second");
  ASSERT_OK(coord_->ResumeJobs(now_));
  Register("w0b", 0);
  Advance(500);
  ASSERT_TRUE(outbox_.Last<DeployTask>("w0b").has_value());
  JobLibraryBlob blob = Fetch("w0b");
  EXPECT_EQ(blob.bytes, "");
  EXPECT_THAT(blob.error, HasSubstr("is not in the coordinator's blob store"));
  EXPECT_THAT(blob.error, HasSubstr("keyflow run --job-library"));
}

TEST_F(JobLibraryShippingTest, ARestartedCoordinatorDeploysAndServesTheSameLibrary) {
  Register("w0", 0);
  coord_->OnMessage("cli", SubmitJob{LibrarySpec(1), bytes_}, now_);
  DeployAll({"w0"});

  Reset("second");
  ASSERT_OK(coord_->ResumeJobs(now_));
  ASSERT_NE(coord_->job(), nullptr);
  EXPECT_EQ(coord_->job()->spec().job_library, ref_) << "read back from the _job record";
  size_t deploys = outbox_.To<DeployTask>("w0b").size();
  Register("w0b", 0);
  Advance(500);
  auto deploy = outbox_.Last<DeployTask>("w0b");
  ASSERT_TRUE(deploy.has_value());
  EXPECT_GT(outbox_.To<DeployTask>("w0b").size(), deploys);
  EXPECT_EQ(deploy->spec.job_library, ref_);
  EXPECT_EQ(Fetch("w0b").bytes, bytes_);
}

}  // namespace
}  // namespace keyflow::test
