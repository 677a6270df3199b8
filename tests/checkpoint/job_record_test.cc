// The `_job` record: version 2 keeps the CLI commands, version 3 the latest rescale's savepoint;
// version 1 and 2 records are still read.
#include <gtest/gtest.h>

#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/checksummed_envelope.h"
#include "common/binary_io.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

JobSpec TestSpec() {
  JobSpec s;
  s.job_name = "count-window";
  s.input = "gen:events=10,keys=2,splits=1,seed=1";
  s.parallelism = 2;
  s.max_parallelism = 8;
  return s;
}

// The fields every record version starts with, of a RUNNING job `job_id` at `attempt`.
std::string RunningRecordStart(const std::string& job_id, int64_t attempt) {
  std::string body;
  BinaryWriter w(&body);
  w.Bytes(job_id);
  w.Bytes(EncodeJobSpecBlob(TestSpec()));
  w.Bytes("RUNNING");
  w.I64(attempt);
  return body;
}

TEST(JobRecordTest, CommandsRoundTrip) {
  JobRecord r;
  r.job_id = "j";
  r.spec = TestSpec();
  r.state = "RUNNING";
  r.last_attempt = AttemptNumber(3);
  r.pending_commands.push_back({"rescale to 3", "keyflow rescale 3", "", 3});
  r.pending_commands.push_back({"savepoint", "keyflow savepoint", "/sp/dir", 0});
  r.last_command = {"checkpoint", "keyflow checkpoint", "", 0};
  r.last_command_outcome = "completed: /c/chk-4";
  auto d = JobRecord::Decode(r.Encode(), "test");
  ASSERT_OK(d);
  ASSERT_EQ(d->pending_commands.size(), 2u);
  EXPECT_EQ(d->pending_commands[0].what, "rescale to 3");
  EXPECT_EQ(d->pending_commands[0].retry, "keyflow rescale 3");
  EXPECT_EQ(d->pending_commands[0].target_parallelism, 3);
  EXPECT_EQ(d->pending_commands[1].directory, "/sp/dir");
  EXPECT_EQ(d->last_command.what, "checkpoint");
  EXPECT_EQ(d->last_command_outcome, "completed: /c/chk-4");
  EXPECT_EQ(d->last_attempt.value(), 3);
}

TEST(JobRecordTest, Version1RecordWithoutCommandsIsStillRead) {
  std::string body = RunningRecordStart("old-job", 7);
  auto d = JobRecord::Decode(EncodeChecksummedEnvelope(kJobRecordMagic, 1, body), "v1");
  ASSERT_OK(d);
  EXPECT_EQ(d->job_id, "old-job");
  EXPECT_EQ(d->state, "RUNNING");
  EXPECT_EQ(d->last_attempt.value(), 7);
  EXPECT_EQ(d->spec.parallelism, 2);
  EXPECT_TRUE(d->pending_commands.empty());
  EXPECT_TRUE(d->last_command.what.empty());
}

TEST(JobRecordTest, RescaleSavepointRoundTrips) {
  JobRecord r;
  r.job_id = "j";
  r.spec = TestSpec();
  r.state = "RUNNING";
  r.last_attempt = AttemptNumber(2);
  r.rescale_savepoint = "/c/j/savepoint-7";
  r.rescale_savepoint_id = CheckpointId(7);
  auto d = JobRecord::Decode(r.Encode(), "test");
  ASSERT_OK(d);
  EXPECT_EQ(d->rescale_savepoint, "/c/j/savepoint-7");
  EXPECT_EQ(d->rescale_savepoint_id.value(), 7);
}

TEST(JobRecordTest, Version2RecordWithoutRescaleSavepointIsStillRead) {
  std::string body = RunningRecordStart("v2-job", 4);
  BinaryWriter w(&body);
  w.I64(0);  // no pending commands
  for (const char* field : {"checkpoint", "keyflow checkpoint", ""}) w.Bytes(field);
  w.I64(0);
  w.Bytes("completed: /c/chk-3");
  auto d = JobRecord::Decode(EncodeChecksummedEnvelope(kJobRecordMagic, 2, body), "v2");
  ASSERT_OK(d);
  EXPECT_EQ(d->job_id, "v2-job");
  EXPECT_EQ(d->last_attempt.value(), 4);
  EXPECT_EQ(d->last_command.what, "checkpoint");
  EXPECT_EQ(d->last_command_outcome, "completed: /c/chk-3");
  EXPECT_TRUE(d->rescale_savepoint.empty());
  EXPECT_EQ(d->rescale_savepoint_id.value(), 0);
}

TEST(JobRecordTest, UnknownVersionIsRefused) {
  auto d = JobRecord::Decode(EncodeChecksummedEnvelope(kJobRecordMagic, 9, "x"), "v9");
  EXPECT_EQ(d.status(),
            FailedPrecondition("job record v9 was written in format version 9, which this keyflow "
                               "cannot read (it reads format versions 1 to 3); restore it with a "
                               "keyflow that reads format version 9, or from an earlier "
                               "checkpoint or savepoint"));
}

}  // namespace
}  // namespace keyflow
