#include "coordinator/cli/job_library_upload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/file_io.h"
#include "common/protocol/control_messages.h"
#include "common/security/sha256.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::cli {
namespace {

using ::testing::HasSubstr;

TEST(JobLibraryUploadTest, ReadsTheFileAndRecordsItsHashNameAndSize) {
  TempDir dir("upload");
  ASSERT_OK(WriteFileAtomically(dir.File("libsum.so"), "library bytes"));
  auto up = ReadJobLibraryForUpload(dir.File("libsum.so"));
  ASSERT_OK(up);
  EXPECT_EQ(up->bytes, "library bytes");
  EXPECT_EQ(up->ref.sha256, Sha256Hex("library bytes"));
  EXPECT_EQ(up->ref.file_name, "libsum.so");
  EXPECT_EQ(up->ref.size_bytes, 13u);
}

TEST(JobLibraryUploadTest, RefusesMissingEmptyDirectoryAndOversizedFiles) {
  TempDir dir("upload");
  EXPECT_THAT(ReadJobLibraryForUpload(dir.File("nope.so")).status().message(),
              HasSubstr("--job-library " + dir.File("nope.so") + " does not exist"));
  EXPECT_THAT(ReadJobLibraryForUpload(dir.path()).status().message(), HasSubstr("is a directory"));
  ASSERT_OK(WriteFileAtomically(dir.File("empty.so"), ""));
  EXPECT_THAT(ReadJobLibraryForUpload(dir.File("empty.so")).status().message(),
              HasSubstr("is empty"));
  // A sparse file one byte over the limit: refused from its size, before it is read.
  ASSERT_OK(WriteFileAtomically(dir.File("huge.so"), "x"));
  ASSERT_EQ(::truncate(dir.File("huge.so").c_str(), static_cast<off_t>(kMaxJobLibraryBytes + 1)),
            0);
  auto huge = ReadJobLibraryForUpload(dir.File("huge.so"));
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.status().message(), HasSubstr("more than the limit of 256 MiB"));
}

}  // namespace
}  // namespace keyflow::cli
