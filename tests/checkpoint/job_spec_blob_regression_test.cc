// Regression tests for what fuzzing the checkpoint files found (tests/fuzz/
// checkpoint_metadata_fuzzer.cc, job_record_fuzzer.cc): the JobSpec blob inside `_metadata` and
// `_job` was decoded by cereal's stream archive, which resized a string to whatever its length
// field said (crash-c7cc95b6 and crash-07d6a28c asked for 2.6e18 and 3.5e18 bytes). The
// envelope checksum is no protection: a file written by a buggy or foreign writer verifies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "checkpoint/checkpoint_metadata.h"
#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/checksummed_envelope.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

// The job name "count-window" is the first field of the spec blob: its u64 length precedes it.
void PatchJobNameLength(std::string* bytes, uint64_t length) {
  const size_t at = bytes->find("count-window");
  ASSERT_NE(at, std::string::npos);
  ASSERT_GE(at, 8u);
  std::memcpy(bytes->data() + at - 8, &length, 8);
}

// Re-wraps a file's body in a valid envelope, as a writer with a bug would have written it.
std::string Reseal(const std::string& file, std::string_view magic, uint32_t version) {
  std::string_view body =
      std::string_view(file).substr(kEnvelopeHeaderSize, file.size() - kEnvelopeOverhead);
  return EncodeChecksummedEnvelope(magic, version, body);
}

TEST(JobSpecBlobRegressionTest, RejectsAStringLengthBeyondTheBlobBeforeAllocating) {
  std::string blob = EncodeJobSpecBlob(ckpt_test::TestSpec(128, 2));
  PatchJobNameLength(&blob, 0x25221f1c1900000dULL);
  Result<JobSpec> spec = DecodeJobSpecBlob(blob, "checkpoint metadata /x/chk-7/_metadata");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("checkpoint metadata /x/chk-7/_metadata: the job spec does not decode"));
  EXPECT_THAT(spec.status().message(), HasSubstr("a length field claims 2675735334150471693"));
}

TEST(JobSpecBlobRegressionTest, CheckpointMetadataWithAHugeLengthInItsSpecIsCorruption) {
  CheckpointMetadata m = ckpt_test::TestMetadata(128, 2, 7);
  m.job_id = "job-1";  // so that "count-window" first occurs in the spec blob
  std::string file = m.Encode();
  PatchJobNameLength(&file, 0x25221f1c1900000dULL);
  file = Reseal(file, kCheckpointMetadataMagic, kCheckpointMetadataVersion);
  Result<CheckpointMetadata> decoded = CheckpointMetadata::Decode(file, "/x/chk-7/_metadata");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(decoded.status().message(), HasSubstr("a length field claims"));
}

TEST(JobSpecBlobRegressionTest, JobRecordWithAHugeLengthInItsSpecIsCorruption) {
  JobRecord record;
  record.job_id = "job-1";
  record.spec = ckpt_test::TestSpec(128, 2);
  record.state = "RUNNING";
  std::string file = record.Encode();
  PatchJobNameLength(&file, 0x310000000000000dULL);
  file = Reseal(file, kJobRecordMagic, kJobRecordVersion);
  Result<JobRecord> decoded = JobRecord::Decode(file, "/x/job-1/_job");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(decoded.status().message(), HasSubstr("job record /x/job-1/_job"));
  EXPECT_THAT(decoded.status().message(), HasSubstr("a length field claims"));
}

TEST(JobSpecBlobRegressionTest, RejectsAnUnknownKeyType) {
  JobSpec spec = ckpt_test::TestSpec(128, 2);
  spec.ts_field = "ts-marker";
  std::string blob = EncodeJobSpecBlob(spec);
  const size_t key_type = blob.find("ts-marker") + std::string_view("ts-marker").size();
  ASSERT_EQ(blob[key_type], static_cast<char>(KeyType::kString));
  blob[key_type] = 3;
  Result<JobSpec> decoded = DecodeJobSpecBlob(blob, "job record /x/_job");
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.status().message(), HasSubstr("the job spec has an unknown key type 3"));
}

TEST(JobSpecBlobRegressionTest, RejectsTrailingBytesAndDecodesTheIntactBlob) {
  const JobSpec spec = ckpt_test::TestSpec(128, 2);
  const std::string blob = EncodeJobSpecBlob(spec);
  Result<JobSpec> decoded = DecodeJobSpecBlob(blob, "blob");
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->job_name, spec.job_name);
  EXPECT_EQ(decoded->params, spec.params);
  EXPECT_EQ(decoded->max_parallelism, 128);
  EXPECT_EQ(EncodeJobSpecBlob(*decoded), blob);
  Result<JobSpec> trailing = DecodeJobSpecBlob(blob + "z", "blob");
  ASSERT_FALSE(trailing.ok());
  EXPECT_THAT(trailing.status().message(), HasSubstr("the job spec has 1 trailing bytes"));
}

}  // namespace
}  // namespace keyflow
