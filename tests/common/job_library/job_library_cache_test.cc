#include "common/job_library/job_library_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/file_io.h"
#include "common/job_library/job_library.h"
#include "common/security/sha256.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

class JobLibraryCacheTest : public ::testing::Test {
 protected:
  JobLibraryRef Ref() const { return JobLibraryRef{Sha256Hex(bytes_), "libsum.so", bytes_.size()}; }
  std::string CachedPath() const { return dir_.path() + "/" + Sha256Hex(bytes_) + ".so"; }
  TempDir dir_{"job-library-cache"};
  std::string bytes_ = std::string(
                           "\x7f"
                           "ELF",
                           4) +
                       std::string(3000, 's');
};

TEST_F(JobLibraryCacheTest, StoresAndResolvesAVerifiedCopy) {
  JobLibraryCache cache(dir_.path());
  EXPECT_FALSE(cache.Find(Ref())->has_value());
  EXPECT_EQ(ResolveJobLibraryPath(Ref(), dir_.path()).status().code(),
            StatusCode::kFailedPrecondition);
  ASSERT_EQ(*cache.Store(Ref(), bytes_), CachedPath());
  EXPECT_EQ(**cache.Find(Ref()), CachedPath());
  EXPECT_EQ(*ResolveJobLibraryPath(Ref(), dir_.path()), CachedPath());
  EXPECT_EQ(*ReadFileToString(CachedPath()), bytes_);
}

TEST_F(JobLibraryCacheTest, TheCacheDirectoryIs0700AndItsFiles0600WhateverTheUmask) {
  const mode_t old = ::umask(0);
  JobLibraryCache cache(dir_.File("cache"));
  ASSERT_OK(cache.Store(Ref(), bytes_));
  ::umask(old);
  EXPECT_EQ(test::Mode(dir_.File("cache")), 0700u);
  EXPECT_EQ(test::Mode(dir_.File("cache") + "/" + Ref().sha256 + ".so"), 0600u);
}

TEST_F(JobLibraryCacheTest, TheDefaultRefResolvesToTheInstallationsDefaultLibrary) {
  auto resolved = ResolveJobLibraryPath(JobLibraryRef{}, dir_.path());
  ASSERT_OK(resolved);
  EXPECT_EQ(*resolved, *DefaultJobLibraryPath());
}

TEST_F(JobLibraryCacheTest, RefusesBytesThatDoNotMatchTheRef) {
  JobLibraryCache cache(dir_.path());
  std::string other = bytes_;
  other[10] = 'x';
  auto stored = cache.Store(Ref(), other);
  EXPECT_EQ(stored.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(stored.status().message(), HasSubstr("libsum.so"));
  EXPECT_FALSE(PathExists(CachedPath()));
  EXPECT_EQ(cache.Store(Ref(), bytes_ + "x").status().code(), StatusCode::kCorruption);
}

TEST_F(JobLibraryCacheTest, ACorruptCachedFileIsNeverResolvedAndIsReplacedByTheNextStore) {
  JobLibraryCache cache(dir_.path());
  ASSERT_OK(cache.Store(Ref(), bytes_));
  // Same size, one bit flipped: only the hash can tell.
  std::string corrupt = bytes_;
  corrupt[2000] ^= 0x10;
  ASSERT_OK(WriteFileAtomically(CachedPath(), corrupt));
  auto resolved = ResolveJobLibraryPath(Ref(), dir_.path());
  EXPECT_EQ(resolved.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(resolved.status().message(), HasSubstr("damaged and removed"));
  EXPECT_FALSE(PathExists(CachedPath())) << "the corrupt copy is removed, never loaded";
  EXPECT_FALSE(cache.Find(Ref())->has_value());
  ASSERT_OK(cache.Store(Ref(), bytes_));
  EXPECT_EQ(*ReadFileToString(*ResolveJobLibraryPath(Ref(), dir_.path())), bytes_);
}

TEST_F(JobLibraryCacheTest, ATruncatedCachedFileIsReplacedByStore) {
  JobLibraryCache cache(dir_.path());
  ASSERT_OK(CreateDirectories(dir_.path()));
  ASSERT_OK(WriteFileAtomically(CachedPath(), bytes_.substr(0, 100)));
  ASSERT_EQ(*cache.Store(Ref(), bytes_), CachedPath());
  EXPECT_EQ(*ReadFileToString(CachedPath()), bytes_);
}

TEST_F(JobLibraryCacheTest, AnUnusableCacheDirectoryIsAClearError) {
  ASSERT_OK(WriteFileAtomically(dir_.File("file"), "x"));
  JobLibraryCache cache(dir_.File("file") + "/cache");
  auto stored = cache.Store(Ref(), bytes_);
  EXPECT_EQ(stored.status().code(), StatusCode::kIoError);
  EXPECT_THAT(stored.status().message(), HasSubstr("the worker's job library cache (--cache-dir)"));
}

}  // namespace
}  // namespace keyflow
