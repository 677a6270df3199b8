#include "coordinator/blob_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_io.h"
#include "common/protocol/control_messages.h"
#include "common/security/sha256.h"
#include "common/testing/fault_injection_file_system.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

JobLibraryRef RefOf(const std::string& bytes, std::string name = "libsessions.so") {
  return JobLibraryRef{Sha256Hex(bytes), std::move(name), bytes.size()};
}

class BlobStoreTest : public ::testing::Test {
 protected:
  std::string BlobPath(const JobLibraryRef& ref) const {
    return dir_.path() + "/blobs/" + ref.sha256 + ".so";
  }
  TempDir dir_{"blob-store"};
  std::string bytes_ = std::string(
                           "\x7f"
                           "ELF",
                           4) +
                       std::string(5000, 'j');
};

TEST_F(BlobStoreTest, StoresByContentHashBesideTheCheckpointsInAPrivateDirectory) {
  BlobStore store(dir_.path());
  EXPECT_EQ(store.directory(), dir_.path() + "/blobs");
  ASSERT_OK(store.Store(RefOf(bytes_), bytes_));
  EXPECT_EQ(*ReadFileToString(BlobPath(RefOf(bytes_))), bytes_);
  struct stat st;
  ASSERT_EQ(::stat(store.directory().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(test::Mode(BlobPath(RefOf(bytes_))), 0600u);
  EXPECT_EQ(*store.Read(RefOf(bytes_)), bytes_);
  EXPECT_EQ(*ListDirectory(store.directory()),
            std::vector<std::string>{RefOf(bytes_).sha256 + ".so"})
      << "no temp file left behind";
}

TEST_F(BlobStoreTest, RefusesBytesThatDoNotMatchTheAnnouncedHashAndWritesNothing) {
  BlobStore store(dir_.path());
  JobLibraryRef ref = RefOf(bytes_);
  std::string damaged = bytes_;
  damaged[100] ^= 1;
  Status s = store.Store(ref, damaged);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("libsessions.so"));
  EXPECT_THAT(s.message(), HasSubstr("not " + ref.sha256));
  EXPECT_THAT(s.message(), HasSubstr("submit it again"));
  EXPECT_FALSE(PathExists(BlobPath(ref)));
}

TEST_F(BlobStoreTest, RefusesASizeThatDiffersFromTheRefOrExceedsTheLimit) {
  BlobStore store(dir_.path());
  JobLibraryRef ref = RefOf(bytes_);
  ref.size_bytes += 1;
  EXPECT_THAT(store.Store(ref, bytes_).message(), HasSubstr("announced with 5005 bytes but 5004"));
  ref.size_bytes = kMaxJobLibraryBytes + 1;
  EXPECT_THAT(store.Store(ref, bytes_).message(), HasSubstr("more than the limit of 268435456"));
  ref.sha256 = "../x";
  EXPECT_THAT(store.Store(ref, bytes_).message(), HasSubstr("is not a SHA-256 hash"));
  EXPECT_EQ(store.Store(JobLibraryRef{}, bytes_).code(), StatusCode::kInvalidArgument);
}

TEST_F(BlobStoreTest, StoringTheSameLibraryAgainWritesNothing) {
  FaultInjectionFileSystem fs;
  BlobStore store(dir_.path(), fs);
  ASSERT_OK(store.Store(RefOf(bytes_), bytes_));
  fs.FailWritesTo(dir_.path(), EIO);  // any write now would fail
  EXPECT_OK(store.Store(RefOf(bytes_), bytes_));
  EXPECT_OK(store.Store(RefOf(bytes_), "")) << "a resubmission may omit the bytes";
  EXPECT_THAT(store.Store(RefOf("other"), "").message(),
              HasSubstr("was sent without its bytes and the blob store does not hold it"));
}

TEST_F(BlobStoreTest, AFailedWriteLeavesNoFileAndALaterStoreSucceeds) {
  FaultInjectionFileSystem fs;
  BlobStore store(dir_.path(), fs);
  fs.FailWritesAfter(1000, ENOSPC);
  Status s = store.Store(RefOf(bytes_), bytes_);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("cannot store " + RefOf(bytes_).sha256 +
                                     ".so in the "
                                     "coordinator's blob store " +
                                     dir_.path() + "/blobs"));
  EXPECT_FALSE(PathExists(BlobPath(RefOf(bytes_)))) << "never a torn file under the final name";
  EXPECT_TRUE(ListDirectory(dir_.path() + "/blobs")->empty()) << "the temp file is removed";
  fs.ClearFaults();
  ASSERT_OK(store.Store(RefOf(bytes_), bytes_));
  EXPECT_EQ(*store.Read(RefOf(bytes_)), bytes_);
}

TEST_F(BlobStoreTest, AStoredLibrarySurvivesACrashRightAfterTheStore) {
  FaultInjectionFileSystem fs;
  BlobStore store(dir_.path(), fs);
  ASSERT_OK(store.Store(RefOf(bytes_), bytes_));
  ASSERT_OK(fs.SimulateCrash());
  EXPECT_EQ(*BlobStore(dir_.path()).Read(RefOf(bytes_)), bytes_) << "synced before the reply";
}

TEST_F(BlobStoreTest, AnUnwritableDirectoryIsAClearError) {
  FaultInjectionFileSystem fs;
  BlobStore store(dir_.path(), fs);
  fs.FailWritesTo("/blobs/", EACCES);
  Status s = store.Store(RefOf(bytes_), bytes_);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("ermission denied"));
  EXPECT_THAT(s.message(), HasSubstr("make the directory writable by this process's user"));
}

TEST_F(BlobStoreTest, ADirectoryWithoutWritePermissionIsAClearError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write anywhere";
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0500), 0);
  Status s = BlobStore(dir_.path()).Store(RefOf(bytes_), bytes_);
  ::chmod(dir_.path().c_str(), 0700);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("ermission denied"));
  EXPECT_THAT(s.message(), HasSubstr("make the directory writable"));
}

TEST_F(BlobStoreTest, ADamagedStoredFileIsNeverReadAndIsRemoved) {
  BlobStore store(dir_.path());
  JobLibraryRef ref = RefOf(bytes_);
  ASSERT_OK(store.Store(ref, bytes_));
  std::string damaged = bytes_;
  damaged.back() ^= 1;
  ASSERT_OK(WriteFileAtomically(BlobPath(ref), damaged));
  auto read = store.Read(ref);
  EXPECT_EQ(read.status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(PathExists(BlobPath(ref)));
  EXPECT_THAT(store.Read(ref).status().message(),
              HasSubstr("is not in the coordinator's blob store"));
  ASSERT_OK(store.Store(ref, bytes_)) << "a resubmission repairs it";
  EXPECT_EQ(*store.Read(ref), bytes_);
}

}  // namespace
}  // namespace keyflow
