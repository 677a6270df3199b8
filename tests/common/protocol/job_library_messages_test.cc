// The control messages that carry job libraries: SubmitJob's bytes, FetchJobLibrary and
// JobLibraryBlob round trip exactly; the size bound holds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/protocol/control_messages.h"
#include "common/security/sha256.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

TEST(JobLibraryMessagesTest, SubmitJobCarriesTheLibraryRefAndItsBytes) {
  std::string library(1 << 20, '\0');
  for (size_t i = 0; i < library.size(); ++i) library[i] = static_cast<char>(i * 7);
  SubmitJob submit;
  submit.spec.job_name = "sessions";
  submit.spec.job_library = JobLibraryRef{Sha256Hex(library), "libsessions.so", library.size()};
  submit.job_library_bytes = library;
  auto decoded = DecodeControlMessage(EncodeControlMessage(submit), "test");
  ASSERT_OK(decoded);
  const auto& got = std::get<SubmitJob>(*decoded);
  EXPECT_EQ(got.spec.job_library, submit.spec.job_library);
  EXPECT_EQ(got.job_library_bytes, library);
}

TEST(JobLibraryMessagesTest, FetchAndBlobRoundTrip) {
  FetchJobLibrary fetch{WorkerId(3), AttemptNumber(2), Sha256Hex("x")};
  auto f = DecodeControlMessage(EncodeControlMessage(fetch), "test");
  ASSERT_OK(f);
  EXPECT_EQ(ControlMessageName(*f), "FetchJobLibrary");
  EXPECT_EQ(std::get<FetchJobLibrary>(*f).worker, WorkerId(3));
  EXPECT_EQ(std::get<FetchJobLibrary>(*f).attempt, AttemptNumber(2));
  EXPECT_EQ(std::get<FetchJobLibrary>(*f).sha256, Sha256Hex("x"));

  JobLibraryBlob blob{AttemptNumber(2), Sha256Hex("x"), "x", "no such blob"};
  auto b = DecodeControlMessage(EncodeControlMessage(blob), "test");
  ASSERT_OK(b);
  EXPECT_EQ(ControlMessageName(*b), "JobLibraryBlob");
  const auto& got = std::get<JobLibraryBlob>(*b);
  EXPECT_EQ(got.attempt, AttemptNumber(2));
  EXPECT_EQ(got.sha256, Sha256Hex("x"));
  EXPECT_EQ(got.bytes, "x");
  EXPECT_EQ(got.error, "no such blob");
}

TEST(JobLibraryMessagesTest, TheMessageLimitLeavesRoomForTheLargestLibrary) {
  EXPECT_EQ(kMaxJobLibraryBytes, size_t{256} << 20);
  EXPECT_GE(kMaxControlMessageBytes, kMaxJobLibraryBytes + 4096);
}

TEST(JobLibraryMessagesTest, ATruncatedLibraryIsRefusedNotAllocated) {
  SubmitJob submit;
  submit.job_library_bytes = std::string(100'000, 'l');
  std::string bytes = EncodeControlMessage(submit);
  bytes.resize(bytes.size() - 10);
  auto decoded = DecodeControlMessage(bytes, "the CLI");
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(decoded.status().message(), ::testing::HasSubstr("malformed control message"));
}

}  // namespace
}  // namespace keyflow
