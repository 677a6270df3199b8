#include "checkpoint/checkpoint_storage.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "checkpoint/checksummed_envelope.h"
#include "common/file_io.h"
#include "common/testing/captured_log.h"
#include "common/testing/fault_injection_file_system.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ckpt_test::TestMetadata;

using keyflow::testing::CapturedLog;

class CheckpointStorageTest : public ::testing::Test {
 protected:
  // A completed checkpoint: state files of the recorded sizes, then `_metadata`.
  std::string WriteCompleted(int64_t id, bool savepoint = false) {
    std::string dir = savepoint ? storage_.SavepointDirectory(kJob, CheckpointId(id))
                                : storage_.CheckpointDirectory(kJob, CheckpointId(id));
    EXPECT_OK(storage_.PrepareCheckpointDirectory(dir));
    CheckpointMetadata m = TestMetadata(8, 2, id);
    m.job_id = kJob;
    m.savepoint = savepoint;
    for (const auto& s : m.subtasks) {
      EXPECT_TRUE(
          WriteFileAtomically(dir + "/" + s.keyed_state.path, std::string(s.keyed_state.size, 's'))
              .ok());
    }
    EXPECT_OK(storage_.WriteMetadata(dir, m));
    return dir;
  }
  std::vector<int64_t> Ids(const Result<std::vector<CheckpointLocation>>& r) {
    EXPECT_OK(r);
    std::vector<int64_t> ids;
    if (r.ok()) {
      for (const auto& l : *r) ids.push_back(l.id.value());
    }
    return ids;
  }

  const std::string kJob = "job-1";
  TempDir tmp_{"ckpt-storage"};
  CheckpointStorage storage_{tmp_.path()};
};

TEST_F(CheckpointStorageTest, NamesTheDirectoriesOfTheLayout) {
  EXPECT_EQ(storage_.JobDirectory("j"), tmp_.path() + "/j");
  EXPECT_EQ(storage_.CheckpointDirectory("j", CheckpointId(12)), tmp_.path() + "/j/chk-12");
  EXPECT_EQ(storage_.SavepointDirectory("j", CheckpointId(3)), tmp_.path() + "/j/savepoint-3");
  EXPECT_EQ(CheckpointStorage::MetadataPath("/a/chk-1"), "/a/chk-1/_metadata");
  EXPECT_EQ(CheckpointStorage::SubtaskStateFileName(SubtaskIndex(4)), "subtask-4.kgs");
}

TEST_F(CheckpointStorageTest, RootIsMadeAbsoluteAndNormalised) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  CheckpointStorage relative("ckpts/./x/");
  EXPECT_EQ(relative.root(), std::string(cwd) + "/ckpts/x");
  CheckpointStorage absolute(tmp_.path() + "//a/../b/");
  EXPECT_EQ(absolute.root(), tmp_.path() + "/b");
}

TEST_F(CheckpointStorageTest, WritesMetadataAtomicallyAndReadsItFromDirectoryOrFile) {
  std::string dir = WriteCompleted(4);
  EXPECT_FALSE(PathExists(dir + "/_metadata.tmp"));
  auto from_dir = CheckpointStorage::ReadMetadata(dir);
  ASSERT_OK(from_dir);
  EXPECT_EQ(from_dir->id, CheckpointId(4));
  EXPECT_EQ(from_dir->job_id, kJob);
  auto from_file = CheckpointStorage::ReadMetadata(dir + "/_metadata");
  ASSERT_OK(from_file);
  EXPECT_EQ(from_file->subtasks[1].keyed_state.path, "subtask-1.kgs");
  EXPECT_OK(CheckpointStorage::VerifyStateFiles(dir, *from_dir));
}

TEST_F(CheckpointStorageTest, ReadMetadataSaysWhyThereIsNoCheckpoint) {
  auto missing = CheckpointStorage::ReadMetadata(tmp_.path() + "/nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no such file or directory"), std::string::npos);

  std::string dir = storage_.CheckpointDirectory(kJob, CheckpointId(1));
  ASSERT_OK(storage_.PrepareCheckpointDirectory(dir));
  auto incomplete = CheckpointStorage::ReadMetadata(dir);
  EXPECT_EQ(incomplete.status().code(), StatusCode::kNotFound);
  EXPECT_NE(incomplete.status().message().find("never completed"), std::string::npos);

  ASSERT_OK(WriteFileAtomically(dir + "/_metadata", "KFCKPT01 garbage"));
  auto corrupted = CheckpointStorage::ReadMetadata(dir);
  EXPECT_EQ(corrupted.status().code(), StatusCode::kCorruption);
  EXPECT_NE(corrupted.status().message().find(dir + "/_metadata"), std::string::npos);
}

TEST_F(CheckpointStorageTest, ListsOnlyCheckpointsWhoseMetadataVerifiesInIdOrder) {
  WriteCompleted(1);
  WriteCompleted(10);  // sorts after 4 although "chk-10" < "chk-4" as text
  WriteCompleted(4);
  // Killed between the data files and the metadata: only a state file.
  std::string half = storage_.CheckpointDirectory(kJob, CheckpointId(11));
  ASSERT_OK(storage_.PrepareCheckpointDirectory(half));
  ASSERT_OK(WriteFileAtomically(half + "/subtask-0.kgs", "partial"));
  // Corrupted metadata: one flipped byte.
  std::string bad = WriteCompleted(7);
  auto bytes = ReadFileToString(bad + "/_metadata");
  ASSERT_OK(bytes);
  std::string flipped = *bytes;
  flipped[40] = static_cast<char>(flipped[40] ^ 1);
  ASSERT_OK(WriteFileAtomically(bad + "/_metadata", flipped));
  WriteCompleted(5, /*savepoint=*/true);
  ASSERT_OK(CreateDirectories(storage_.JobDirectory(kJob) + "/chk-x"));    // not ours
  ASSERT_OK(CreateDirectories(storage_.JobDirectory(kJob) + "/chk-012"));  // not ours

  CapturedLog log;
  auto completed = storage_.ListCompletedCheckpoints(kJob);
  EXPECT_EQ(Ids(completed), (std::vector<int64_t>{1, 4, 10}));
  ASSERT_OK(completed);
  EXPECT_EQ((*completed)[2].directory, storage_.CheckpointDirectory(kJob, CheckpointId(10)));
  EXPECT_FALSE((*completed)[2].savepoint);
  EXPECT_NE(log.Text().find("skipping checkpoint directory dir=" + bad), std::string::npos)
      << log.Text();
  EXPECT_NE(log.Text().find("checksum mismatch"), std::string::npos) << log.Text();
  EXPECT_EQ(log.Text().find("chk-11"), std::string::npos) << "incomplete is silent";

  auto savepoints = storage_.ListSavepoints(kJob);
  EXPECT_EQ(Ids(savepoints), (std::vector<int64_t>{5}));
  ASSERT_OK(savepoints);
  EXPECT_TRUE((*savepoints)[0].savepoint);

  auto max_id = storage_.MaxUsedId(kJob);
  ASSERT_OK(max_id);
  EXPECT_EQ(*max_id, 11) << "the half-written checkpoint's id counts";
}

// checkpoint/README.md "Format versions": a flipped byte in the version field is skipped like
// any corrupt metadata (an earlier checkpoint may be used); an intact metadata of a newer version
// fails the whole listing, so that nothing of the job is restored, retained or swept by this
// build.
TEST_F(CheckpointStorageTest, AFlippedVersionByteIsSkippedButAnIntactNewerVersionFailsTheListing) {
  WriteCompleted(1);
  const std::string flipped_dir = WriteCompleted(2);
  auto bytes = ReadFileToString(flipped_dir + "/_metadata");
  ASSERT_OK(bytes);
  std::string flipped = *bytes;
  flipped[8] = static_cast<char>(flipped[8] ^ 0x01);  // version 2 -> 3, checksum unchanged
  ASSERT_OK(WriteFileAtomically(flipped_dir + "/_metadata", flipped));
  {
    CapturedLog log;
    auto completed = storage_.ListCompletedCheckpoints(kJob);
    EXPECT_EQ(Ids(completed), (std::vector<int64_t>{1}));
    EXPECT_NE(log.Text().find("skipping checkpoint directory dir=" + flipped_dir),
              std::string::npos)
        << log.Text();
  }

  // The same metadata as a newer keyflow writes it: version 3, checksum over it.
  const std::string newer_dir = WriteCompleted(3);
  ASSERT_TRUE(WriteFileAtomically(
                  newer_dir + "/_metadata",
                  EncodeChecksummedEnvelope(kCheckpointMetadataMagic, 3, "what version 3 holds"))
                  .ok());
  auto listed = storage_.ListCompletedCheckpoints(kJob);
  EXPECT_EQ(listed.status(),
            FailedPrecondition("checkpoint metadata " + newer_dir +
                               "/_metadata was written in format version 3, which this keyflow "
                               "cannot read (it reads format versions 1 and 2); restore it with "
                               "a keyflow that reads format version 3, or from an earlier "
                               "checkpoint or savepoint"));
  auto read = CheckpointStorage::ReadMetadata(newer_dir);
  EXPECT_EQ(read.status(), listed.status());
}

TEST_F(CheckpointStorageTest, MaxUsedIdCountsCheckpointsAndSavepointsWithOrWithoutMetadata) {
  auto none = storage_.MaxUsedId(kJob);
  ASSERT_OK(none);
  EXPECT_EQ(*none, 0);
  ASSERT_OK(CreateDirectories(storage_.CheckpointDirectory(kJob, CheckpointId(3))));
  EXPECT_EQ(*storage_.MaxUsedId(kJob), 3);
  ASSERT_OK(CreateDirectories(storage_.SavepointDirectory(kJob, CheckpointId(9))));
  EXPECT_EQ(*storage_.MaxUsedId(kJob), 9);
  WriteCompleted(6);
  EXPECT_EQ(*storage_.MaxUsedId(kJob), 9);
  EXPECT_EQ(*storage_.MaxUsedId("other-job"), 0);
}

TEST_F(CheckpointStorageTest, TempFileLeftByACrashBeforeTheRenameIsIgnored) {
  // Crash between write and rename: `_metadata.tmp` holds complete, valid bytes, but the
  // rename (the commit point) never happened.
  std::string dir = storage_.CheckpointDirectory(kJob, CheckpointId(2));
  ASSERT_OK(storage_.PrepareCheckpointDirectory(dir));
  CheckpointMetadata m = TestMetadata(8, 2, 2);
  ASSERT_OK(WriteFileAtomically(dir + "/_metadata.tmp", m.Encode()));
  EXPECT_EQ(Ids(storage_.ListCompletedCheckpoints(kJob)), std::vector<int64_t>{});
  EXPECT_EQ(CheckpointStorage::ReadMetadata(dir).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*storage_.MaxUsedId(kJob), 2);

  // A stale temp file next to a committed `_metadata` does not hide it either.
  std::string done = WriteCompleted(3);
  ASSERT_OK(WriteFileAtomically(done + "/_metadata.tmp", "torn"));
  EXPECT_EQ(Ids(storage_.ListCompletedCheckpoints(kJob)), std::vector<int64_t>{3});
}

TEST_F(CheckpointStorageTest, NoJobDirectoryListsNothing) {
  EXPECT_EQ(Ids(storage_.ListCompletedCheckpoints("absent")), std::vector<int64_t>{});
  EXPECT_EQ(Ids(storage_.ListSavepoints("absent")), std::vector<int64_t>{});
  auto records = CheckpointStorage(tmp_.path() + "/no-root").ListJobRecords();
  ASSERT_OK(records);
  EXPECT_TRUE(records->empty());
}

TEST_F(CheckpointStorageTest, VerifyStateFilesNamesAMissingOrTruncatedFile) {
  std::string dir = WriteCompleted(1);
  CheckpointMetadata m = *CheckpointStorage::ReadMetadata(dir);
  const uint64_t size1 = m.subtasks[1].keyed_state.size;
  ASSERT_OK(WriteFileAtomically(dir + "/subtask-1.kgs", std::string(size1 - 1, 's')));
  Status truncated = CheckpointStorage::VerifyStateFiles(dir, m);
  EXPECT_EQ(truncated.code(), StatusCode::kCorruption);
  EXPECT_NE(truncated.message().find(dir + "/subtask-1.kgs"), std::string::npos);
  EXPECT_NE(truncated.message().find("truncated: expected " + std::to_string(size1) +
                                     " bytes, found " + std::to_string(size1 - 1)),
            std::string::npos)
      << truncated.ToString();

  ASSERT_OK(RemoveFile(dir + "/subtask-0.kgs"));
  Status missing = CheckpointStorage::VerifyStateFiles(dir, m);
  EXPECT_EQ(missing.code(), StatusCode::kCorruption);
  EXPECT_NE(missing.message().find("subtask-0.kgs"), std::string::npos);
  EXPECT_NE(missing.message().find("missing"), std::string::npos);
}

TEST_F(CheckpointStorageTest, VerifyStateFilesChecksSharedAndPrivateFilesOfIncrementalHandles) {
  const std::string dir = storage_.CheckpointDirectory(kJob, CheckpointId(5));
  ASSERT_OK(storage_.PrepareCheckpointDirectory(dir));
  ASSERT_OK(storage_.PrepareSharedDirectory(kJob));
  const std::string shared = storage_.SharedDirectory(kJob);
  EXPECT_EQ(shared, tmp_.path() + "/" + kJob + "/shared");
  EXPECT_EQ(CheckpointStorage::SharedDirectoryOf(dir + "/"), shared);
  struct stat st;
  ASSERT_EQ(::stat(shared.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  CheckpointMetadata m = TestMetadata(8, 2, 5);
  m.job_id = kJob;
  m.subtasks[0].keyed_state = ckpt_test::TestIncrementalHandle(
      m.subtasks[0].keyed_state.range, {{"a-1-0.kgs", 30, 1}, {"a-5-0.kgs", 20, 2}});
  for (int32_t i = 0; i < 2; ++i) {
    auto& s = m.subtasks[static_cast<size_t>(i)];
    s.native_state = ckpt_test::TestNativeHandle(i, s.keyed_state.range,
                                                 {{"sst-" + std::to_string(i) + ".sst", 100, 3}});
    ASSERT_OK(CreateDirectories(dir + "/subtask-" + std::to_string(i) + "-db"));
    ASSERT_TRUE(
        WriteFileAtomically(dir + "/" + s.native_state->private_files[0].path, std::string(64, 'm'))
            .ok());
    ASSERT_TRUE(
        WriteFileAtomically(shared + "/sst-" + std::to_string(i) + ".sst", std::string(100, 's'))
            .ok());
  }
  ASSERT_TRUE(
      WriteFileAtomically(dir + "/subtask-1.kgs", std::string(m.subtasks[1].keyed_state.size, 'k'))
          .ok());
  ASSERT_OK(WriteFileAtomically(shared + "/a-1-0.kgs", std::string(30, 'a')));
  ASSERT_OK(WriteFileAtomically(shared + "/a-5-0.kgs", std::string(20, 'a')));
  ASSERT_OK(storage_.WriteMetadata(dir, m));
  EXPECT_OK(CheckpointStorage::VerifyStateFiles(dir, m));

  ASSERT_OK(WriteFileAtomically(shared + "/a-5-0.kgs", std::string(19, 'a')));
  EXPECT_EQ(CheckpointStorage::VerifyStateFiles(dir, m),
            Corruption("shared state file " + shared +
                       "/a-5-0.kgs of subtask 0 of checkpoint 5 is truncated: expected 20 bytes, "
                       "found 19"));
  ASSERT_OK(WriteFileAtomically(shared + "/a-5-0.kgs", std::string(20, 'a')));

  ASSERT_OK(RemoveFile(shared + "/sst-1.sst"));
  Status missing = CheckpointStorage::VerifyStateFiles(dir, m);
  EXPECT_EQ(missing.code(), StatusCode::kCorruption);
  EXPECT_NE(missing.message().find("shared state file " + shared +
                                   "/sst-1.sst of subtask 1 of checkpoint 5 is missing"),
            std::string::npos)
      << missing.ToString();
  // A shared file that is a symbolic link out of the shared directory.
  ASSERT_OK(WriteFileAtomically(tmp_.path() + "/outside", std::string(100, 'o')));
  ASSERT_EQ(::symlink((tmp_.path() + "/outside").c_str(), (shared + "/sst-1.sst").c_str()), 0);
  Status link = CheckpointStorage::VerifyStateFiles(dir, m);
  EXPECT_EQ(link.code(), StatusCode::kCorruption);
  EXPECT_NE(link.message().find("leads outside " + shared), std::string::npos) << link.ToString();
  ASSERT_OK(RemoveFile(shared + "/sst-1.sst"));
  ASSERT_OK(WriteFileAtomically(shared + "/sst-1.sst", std::string(100, 's')));

  ASSERT_OK(RemoveFile(dir + "/subtask-0-db/MANIFEST-000001"));
  EXPECT_NE(CheckpointStorage::VerifyStateFiles(dir, m).message().find(
                "private state file " + dir +
                "/subtask-0-db/MANIFEST-000001 of subtask 0 of checkpoint 5 is missing"),
            std::string::npos);
}

// Issue 13: a crafted `_metadata` (or a savepoint handed in by a client) must not make a
// restore read a file outside its directory.
TEST_F(CheckpointStorageTest, CraftedMetadataWithAPathOutOfTheDirectoryIsCorruption) {
  std::string dir = WriteCompleted(1);
  std::string bytes = *ReadFileToString(CheckpointStorage::MetadataPath(dir));
  auto envelope =
      DecodeChecksummedEnvelope(bytes, kCheckpointMetadataMagic, kCheckpointMetadataVersion,
                                kCheckpointMetadataVersion, "test");
  ASSERT_OK(envelope);
  std::string crafted(envelope->body);
  // "subtask-0.kgs" (13 bytes) -> "../../../etc" + 1 byte: same length, the rest stays valid.
  const size_t at = crafted.find("subtask-0.kgs");
  ASSERT_NE(at, std::string::npos);
  crafted.replace(at, 13, "../../../etcX");
  ASSERT_TRUE(WriteFileAtomically(CheckpointStorage::MetadataPath(dir),
                                  EncodeChecksummedEnvelope(kCheckpointMetadataMagic,
                                                            kCheckpointMetadataVersion, crafted))
                  .ok());
  auto m = CheckpointStorage::ReadMetadata(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kCorruption);
  EXPECT_NE(m.status().message().find("subtask 0's state file path '../../../etcX' has a '..' "
                                      "component; it must stay inside its directory"),
            std::string::npos)
      << m.status().ToString();
}

TEST_F(CheckpointStorageTest, VerifyStateFilesRefusesAStateFileThatLinksOutOfTheDirectory) {
  TempDir outside{"ckpt-victim"};
  std::string dir = WriteCompleted(1, /*savepoint=*/true);
  CheckpointMetadata m = *CheckpointStorage::ReadMetadata(dir);
  const uint64_t size0 = m.subtasks[0].keyed_state.size;
  const std::string victim = outside.File("victim");
  ASSERT_OK(WriteFileAtomically(victim, std::string(size0, 'v')));  // the recorded size
  ASSERT_EQ(::chmod(victim.c_str(), 0600), 0);
  ASSERT_OK(RemoveFile(dir + "/subtask-0.kgs"));
  ASSERT_EQ(::symlink(victim.c_str(), (dir + "/subtask-0.kgs").c_str()), 0);
  Status s = CheckpointStorage::VerifyStateFiles(dir, m);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("the state file of subtask 0 of checkpoint 1 path 'subtask-0.kgs' "
                             "leads outside " +
                             dir + " through a symbolic link"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(*ReadFileToString(victim), std::string(size0, 'v'));
  EXPECT_EQ(test::Mode(victim), 0600u);
}

TEST_F(CheckpointStorageTest, JobRecordAndItsDirectoryArePrivate) {
  JobRecord r;
  r.job_id = kJob;
  r.spec = ckpt_test::TestSpec(8, 2);
  r.state = "RUNNING";
  ASSERT_OK(storage_.WriteJobRecord(r));
  EXPECT_EQ(test::Mode(storage_.JobDirectory(kJob)), 0700u);
  EXPECT_EQ(test::Mode(storage_.JobDirectory(kJob) + "/_job"), 0600u);
}

// Through the fault-injecting file system: a crash right after WriteMetadata keeps the
// checkpoint (it was fsynced and its directory entry synced), and a full disk while writing the
// metadata leaves the previous completed checkpoint the newest one, readable.
TEST_F(CheckpointStorageTest, CompletedCheckpointSurvivesACrashAndAFullDiskKeepsThePreviousOne) {
  FaultInjectionFileSystem fs;
  CheckpointStorage storage(tmp_.path(), fs);
  CheckpointMetadata m = TestMetadata(8, 2, 1);
  m.job_id = kJob;
  const std::string dir1 = storage.CheckpointDirectory(kJob, CheckpointId(1));
  ASSERT_OK(storage.PrepareCheckpointDirectory(dir1));
  ASSERT_OK(storage.WriteMetadata(dir1, m));
  ASSERT_OK(fs.SimulateCrash());
  EXPECT_EQ(Ids(storage.ListCompletedCheckpoints(kJob)), (std::vector<int64_t>{1}));

  CheckpointMetadata m2 = TestMetadata(8, 2, 2);
  m2.job_id = kJob;
  const std::string dir2 = storage.CheckpointDirectory(kJob, CheckpointId(2));
  ASSERT_OK(storage.PrepareCheckpointDirectory(dir2));
  fs.FailWritesAfter(10);
  Status full = storage.WriteMetadata(dir2, m2);
  EXPECT_EQ(full.code(), StatusCode::kIoError);
  EXPECT_EQ(full.message(), "cannot write the metadata of checkpoint 2: cannot write " + dir2 +
                                "/_metadata.tmp: No space left on device");
  fs.ClearFaults();
  ASSERT_OK(fs.SimulateCrash());
  EXPECT_EQ(Ids(storage.ListCompletedCheckpoints(kJob)), (std::vector<int64_t>{1}));
  auto back = CheckpointStorage::ReadMetadata(dir1, fs);
  ASSERT_OK(back);
  EXPECT_EQ(back->id, CheckpointId(1));
}

TEST_F(CheckpointStorageTest, PrepareRefusesANonEmptyDirectoryButTakesAnEmptyOne) {
  std::string empty = tmp_.File("empty");
  ASSERT_OK(CreateDirectories(empty));
  EXPECT_OK(storage_.PrepareCheckpointDirectory(empty));
  std::string nested = tmp_.File("a/b/c");
  EXPECT_OK(storage_.PrepareCheckpointDirectory(nested));
  EXPECT_TRUE(std::filesystem::is_directory(nested));
  ASSERT_OK(WriteFileAtomically(nested + "/x", "x"));
  Status s = storage_.PrepareCheckpointDirectory(nested);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("not empty"), std::string::npos);
}

TEST_F(CheckpointStorageTest, DeleteCheckpointRemovesTheDirectory) {
  std::string dir = WriteCompleted(1);
  EXPECT_OK(storage_.DeleteCheckpoint(dir));
  EXPECT_FALSE(PathExists(dir));
  EXPECT_OK(storage_.DeleteCheckpoint(dir)) << "absent is fine";
}

JobRecord TestRecord(const std::string& id, const std::string& state) {
  JobRecord r;
  r.job_id = id;
  r.spec = ckpt_test::TestSpec(128, 3);
  r.state = state;
  r.last_attempt = AttemptNumber(4);
  return r;
}

TEST_F(CheckpointStorageTest, JobRecordsRoundTripAndCorruptedOnesAreSkipped) {
  ASSERT_OK(storage_.WriteJobRecord(TestRecord("b-job", "RUNNING")));
  ASSERT_OK(storage_.WriteJobRecord(TestRecord("a-job", "FINISHED")));
  ASSERT_OK(storage_.WriteJobRecord(TestRecord("c-job", "RUNNING")));
  ASSERT_OK(storage_.WriteJobRecord(TestRecord("b-job", "CANCELED")));  // overwrite
  ASSERT_OK(CreateDirectories(storage_.JobDirectory("no-record")));
  ASSERT_OK(WriteFileAtomically(storage_.JobDirectory("c-job") + "/_job", "KFJOBR01xx"));
  EXPECT_FALSE(PathExists(storage_.JobDirectory("a-job") + "/_job.tmp"));

  CapturedLog log;
  auto records = storage_.ListJobRecords();
  ASSERT_OK(records);
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].job_id, "a-job");
  EXPECT_EQ((*records)[0].state, "FINISHED");
  EXPECT_EQ((*records)[0].last_attempt, AttemptNumber(4));
  EXPECT_EQ((*records)[0].spec.parallelism, 3);
  EXPECT_EQ((*records)[0].spec.params.at("timeout"), "12h");
  EXPECT_EQ((*records)[1].job_id, "b-job");
  EXPECT_EQ((*records)[1].state, "CANCELED");
  EXPECT_NE(log.Text().find("skipping job record path=" + storage_.JobDirectory("c-job")),
            std::string::npos)
      << log.Text();
}

TEST(JobRecord, EveryTruncationAndFlippedByteIsCorruption) {
  const std::string bytes = TestRecord("job", "RUNNING").Encode();
  EXPECT_EQ(bytes.substr(0, 8), "KFJOBR01");
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(JobRecord::Decode(bytes.substr(0, n), "t").status().code(), StatusCode::kCorruption)
        << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_EQ(JobRecord::Decode(bad, "t").status().code(), StatusCode::kCorruption) << i;
  }
  EXPECT_OK(JobRecord::Decode(bytes, "t"));
}

}  // namespace
}  // namespace keyflow
