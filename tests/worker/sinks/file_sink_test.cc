#include "worker/sinks/file_sink.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <thread>

#include "common/hashing.h"
#include "common/testing/fault_injection_file_system.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

using test_util::ReadFile;
using test_util::TempDir;

FileSinkOptions Options(const std::string& dir, int32_t subtask = 0, int64_t attempt = 1) {
  FileSinkOptions o;
  o.directory = dir;
  o.subtask = SubtaskIndex(subtask);
  o.attempt = AttemptNumber(attempt);
  return o;
}

// Options(dir) writing through `fs`.
FileSinkOptions OptionsOn(FileSystem* fs, const std::string& dir) {
  FileSinkOptions o = Options(dir);
  o.file_system = fs;
  return o;
}

FileSink OpenSink(const FileSinkOptions& options) {
  Result<FileSink> sink = FileSink::Open(options);
  EXPECT_OK(sink);
  return std::move(sink).value();
}

FileSinkCommittable PreCommit(FileSink& sink, int64_t checkpoint) {
  Result<std::optional<FileSinkCommittable>> c = sink.PreCommit(CheckpointId(checkpoint));
  EXPECT_OK(c);
  EXPECT_TRUE(c->has_value());
  return c->value_or(FileSinkCommittable{});
}

// The result as a reader sees it: every file not starting with '.' or '_', concatenated in name
// order.
std::string Result_(const TempDir& dir) {
  std::string all;
  for (const std::string& name : dir.List()) {
    if (name[0] == '.' || name[0] == '_') continue;
    all += ReadFile(dir.File(name));
  }
  return all;
}

TEST(FileSink, AnEmptyTransactionCreatesNoFileAndNoCommittable) {
  TempDir dir;
  FileSink sink = OpenSink(Options(dir.path()));
  Result<std::optional<FileSinkCommittable>> c = sink.PreCommit(CheckpointId(1));
  ASSERT_OK(c);
  EXPECT_FALSE(c->has_value());
  EXPECT_TRUE(sink.pending_committables().empty());
  EXPECT_TRUE(dir.List().empty());
  Result<std::vector<std::string>> finished = sink.FinishAndCommit();
  ASSERT_OK(finished);
  EXPECT_TRUE(finished->empty());
  EXPECT_TRUE(dir.List().empty());
}

TEST(FileSink, InProgressThenPendingThenCommitted) {
  TempDir dir;
  FileSink sink = OpenSink(Options(dir.path(), 3, 2));
  ASSERT_OK(sink.Write(R"({"k":"a"})"));
  ASSERT_OK(sink.Write(R"({"k":"b"})"));
  EXPECT_EQ(dir.List(), std::vector<std::string>{".part-3-2-0.inprogress"});
  EXPECT_EQ(Result_(dir), "");

  FileSinkCommittable c = PreCommit(sink, 7);
  const std::string content = "{\"k\":\"a\"}\n{\"k\":\"b\"}\n";
  EXPECT_EQ(c.checkpoint, CheckpointId(7));
  EXPECT_EQ(c.pending_name, "_part-3-2-0-7.pending");
  EXPECT_EQ(c.final_name, "part-3-2-7.jsonl");
  EXPECT_EQ(c.size, content.size());
  EXPECT_EQ(c.checksum, Checksum64(content));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"_part-3-2-0-7.pending"});
  EXPECT_EQ(sink.pending_committables(), std::vector<FileSinkCommittable>{c});
  EXPECT_EQ(Result_(dir), "");

  ASSERT_OK(sink.Write(R"({"k":"c"})"));  // opens transaction 1
  EXPECT_EQ(dir.List(),
            (std::vector<std::string>{".part-3-2-1.inprogress", "_part-3-2-0-7.pending"}));

  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(7)));
  EXPECT_EQ(dir.List(), (std::vector<std::string>{".part-3-2-1.inprogress", "part-3-2-7.jsonl"}));
  EXPECT_EQ(ReadFile(dir.File("part-3-2-7.jsonl")), content);
  EXPECT_TRUE(sink.pending_committables().empty());
}

TEST(FileSink, NotificationCommitsEveryPendingTransactionUpToItsCheckpoint) {
  TempDir dir;
  FileSink sink = OpenSink(Options(dir.path()));
  for (int64_t cp = 1; cp <= 3; ++cp) {
    ASSERT_OK(sink.Write("line " + std::to_string(cp)));
    PreCommit(sink, cp);
  }
  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(2)));  // 1 was skipped
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"_part-0-1-2-3.pending", "part-0-1-1.jsonl",
                                                  "part-0-1-2.jsonl"}));
  ASSERT_EQ(sink.pending_committables().size(), 1u);
  EXPECT_EQ(sink.pending_committables()[0].checkpoint, CheckpointId(3));
  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(2)));  // late duplicate: no-op
  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(1)));  // out of order: no-op
  EXPECT_EQ(sink.pending_committables().size(), 1u);
  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(3)));
  EXPECT_EQ(Result_(dir), "line 1\nline 2\nline 3\n");
}

TEST(FileSink, CommitIsIdempotentAndFailsWhenBothFilesAreGone) {
  TempDir dir;
  FileSink sink = OpenSink(Options(dir.path()));
  ASSERT_OK(sink.Write("x"));
  FileSinkCommittable c = PreCommit(sink, 4);
  ASSERT_OK(FileSink::Commit(dir.path(), c));
  ASSERT_OK(FileSink::Commit(dir.path(), c));  // already committed
  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(4)));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"part-0-1-4.jsonl"});
  EXPECT_EQ(ReadFile(dir.File("part-0-1-4.jsonl")), "x\n");

  ASSERT_EQ(::unlink(dir.File("part-0-1-4.jsonl").c_str()), 0);
  EXPECT_EQ(FileSink::Commit(dir.path(), c),
            NotFound("cannot commit the output of checkpoint 4: neither '" +
                     dir.File("_part-0-1-0-4.pending") + "' nor '" + dir.File("part-0-1-4.jsonl") +
                     "' exists; was the output directory changed while the job ran?"));
}

TEST(FileSink, CommitDetectsAPendingFileOfTheWrongSize) {
  TempDir dir;
  FileSink sink = OpenSink(Options(dir.path()));
  ASSERT_OK(sink.Write("abc"));
  FileSinkCommittable c = PreCommit(sink, 1);
  dir.Write(c.pending_name, "abcdef\n");
  Status s = FileSink::Commit(dir.path(), c);
  EXPECT_EQ(s, Corruption("cannot commit the output of checkpoint 1: pending file '" +
                          dir.File(c.pending_name) +
                          "' has 7 bytes, the checkpoint recorded 4; it was modified outside "
                          "keyflow"));
}

TEST(FileSink, AbortDeletesTheInProgressFileAndTheDestructorAborts) {
  TempDir dir;
  {
    FileSink sink = OpenSink(Options(dir.path()));
    ASSERT_OK(sink.Write("doomed"));
    ASSERT_OK(sink.Abort());
    EXPECT_TRUE(dir.List().empty());
    ASSERT_OK(sink.Write("kept"));  // a new transaction
    EXPECT_EQ(dir.List(), std::vector<std::string>{".part-0-1-1.inprogress"});
    FileSinkCommittable c = PreCommit(sink, 1);
    EXPECT_EQ(c.size, 5u);
    ASSERT_OK(sink.Write("dropped at close"));
  }
  EXPECT_EQ(dir.List(), std::vector<std::string>{"_part-0-1-1-1.pending"});
}

TEST(FileSink, LargeTransactionsAreFlushedInChunksWithTheRightChecksum) {
  TempDir dir;
  FileSinkOptions options = Options(dir.path());
  options.buffer_bytes = 100;
  FileSink sink = OpenSink(options);
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    std::string line = "{\"i\":" + std::to_string(i) + "}";
    ASSERT_OK(sink.Write(line));
    expected += line + "\n";
  }
  EXPECT_EQ(sink.transaction_bytes(), expected.size());
  FileSinkCommittable c = PreCommit(sink, 1);
  EXPECT_EQ(c.size, expected.size());
  EXPECT_EQ(c.checksum, Checksum64(expected));
  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(1)));
  EXPECT_EQ(ReadFile(dir.File("part-0-1-1.jsonl")), expected);
}

TEST(FileSink, FinishAndCommitCommitsPendingAndCurrentDataAsFinal) {
  TempDir dir;
  FileSink sink = OpenSink(Options(dir.path(), 1, 5));
  ASSERT_OK(sink.Write("a"));
  PreCommit(sink, 9);
  ASSERT_OK(sink.Write("b"));
  Result<std::vector<std::string>> names = sink.FinishAndCommit();
  ASSERT_OK(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"part-1-5-9.jsonl", "part-1-5-final.jsonl"}));
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"part-1-5-9.jsonl", "part-1-5-final.jsonl"}));
  EXPECT_EQ(Result_(dir), "a\nb\n");
}

TEST(FileSink, WriteRejectsLinesWithANewline) {
  TempDir dir;
  FileSink sink = OpenSink(Options(dir.path()));
  EXPECT_EQ(sink.Write("a\nb"), InvalidArgument("an output line must not contain a newline "
                                                "(JSON Lines): a\nb"));
  EXPECT_TRUE(dir.List().empty());
}

TEST(FileSink, OpenCreatesTheDirectoryAndRejectsBadPrefixes) {
  TempDir dir;
  std::string nested = dir.File("out/deeper");
  ASSERT_OK(FileSink::Open(Options(nested)));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"out"});
  for (std::string prefix : {"", "_part", ".part", "a/b"}) {
    FileSinkOptions o = Options(dir.path());
    o.prefix = prefix;
    EXPECT_EQ(FileSink::Open(o).status(),
              InvalidArgument("invalid output file prefix '" + prefix +
                              "': it must be non-empty, without '/', and not start with '.' or "
                              "'_' (those mark files that are not part of the result)"));
  }
  std::string file = dir.Write("plain", "");
  EXPECT_EQ(FileSink::Open(Options(file)).status(),
            InvalidArgument("output path '" + file + "' exists and is not a directory"));
}

TEST(FileSink, CommittableRoundTripsThroughBinaryIoAndRejectsPaths) {
  FileSinkCommittable c{CheckpointId(12), "_part-0-1-3-12.pending", "part-0-1-12.jsonl", 99,
                        0xABCDEF};
  std::string buf;
  BinaryWriter w(&buf);
  c.EncodeTo(&w);
  BinaryReader r(buf);
  Result<FileSinkCommittable> back = FileSinkCommittable::DecodeFrom(&r);
  ASSERT_OK(back);
  EXPECT_EQ(*back, c);
  EXPECT_TRUE(r.at_end());

  FileSinkCommittable evil = c;
  evil.final_name = "../../etc/passwd";
  buf.clear();
  evil.EncodeTo(&w);
  BinaryReader r2(buf);
  EXPECT_EQ(FileSinkCommittable::DecodeFrom(&r2).status().code(), StatusCode::kCorruption);
  BinaryReader r3(std::string_view(buf).substr(0, 10));
  EXPECT_EQ(FileSinkCommittable::DecodeFrom(&r3).status(),
            Corruption("file sink committable: data is truncated or malformed"));
}

// Issue 13: committables come from checkpoint and savepoint files; a crafted one must not make
// a worker rename any file of the output directory that a file sink did not write.
TEST(FileSink, CommittablesNamingFilesASinkDoesNotWriteAreRefusedWithoutSideEffect) {
  TempDir dir;
  const std::string victim = dir.Write("shadow", "root:x:0:0");
  ASSERT_EQ(::chmod(victim.c_str(), 0600), 0);
  const FileSinkCommittable good{CheckpointId(12), "_part-job-1-0-1-3-12.pending",
                                 "part-job-1-0-1-12.jsonl", 10, 0};
  auto with = [&](auto change) {
    FileSinkCommittable c = good;
    change(c);
    return c;
  };
  const std::vector<FileSinkCommittable> crafted = {
      with([](auto& c) { c.pending_name = "shadow"; }),
      with([](auto& c) { c.final_name = "shadow"; }),
      with([](auto& c) { c.pending_name = "_shadow-0-1-3-12.pending"; }),      // another prefix
      with([](auto& c) { c.pending_name = "_part-job-1-1-1-3-12.pending"; }),  // subtask 1
      with([](auto& c) { c.final_name = "part-job-1-0-2-12.jsonl"; }),         // attempt 2
      with([](auto& c) { c.checkpoint = CheckpointId(11); }),
      with([](auto& c) { c.final_name = "part-job-1-0-1-final.jsonl"; }),
      with([](auto& c) { c.pending_name = ".part-job-1-0-1-3.inprogress"; }),
  };
  for (const FileSinkCommittable& c : crafted) {
    std::string buf;
    BinaryWriter w(&buf);
    c.EncodeTo(&w);
    BinaryReader r(buf);
    // What the worker does with a restored committable: decode, then commit what decoded.
    Result<FileSinkCommittable> decoded = FileSinkCommittable::DecodeFrom(&r);
    ASSERT_FALSE(decoded.ok()) << c.pending_name << " " << c.final_name;
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
    EXPECT_NE(decoded.status().message().find("names files a file sink does not write ('" +
                                              c.pending_name + "', '" + c.final_name + "')"),
              std::string::npos)
        << decoded.status().ToString();
  }
  EXPECT_EQ(dir.List(), std::vector<std::string>{"shadow"});
  EXPECT_EQ(ReadFile(victim), "root:x:0:0");
  EXPECT_EQ(test::Mode(victim), 0600u);
  std::string buf;
  BinaryWriter w(&buf);
  good.EncodeTo(&w);
  BinaryReader r(buf);
  EXPECT_OK(FileSinkCommittable::DecodeFrom(&r));
}

// The output's modes follow the worker's FileAccess (--group-readable), whatever the umask:
// private 0700 / 0600 by default, 0750 / 0640 for the group; never anything for others.
TEST(FileSink, OutputIsPrivateOrGroupReadableWhateverTheUmask) {
  struct Case {
    FileAccess access;
    uint32_t dir_mode;
    uint32_t file_mode;
  };
  for (const Case& expected :
       {Case{FileAccess::kPrivate, 0700, 0600}, Case{FileAccess::kGroupReadable, 0750, 0640}}) {
    for (mode_t umask : {mode_t{0}, mode_t{022}, mode_t{077}}) {
      TempDir dir;
      const mode_t old = ::umask(umask);
      const std::string out = dir.File("out");
      FileSinkOptions options = Options(out);
      options.access = expected.access;
      FileSink sink = OpenSink(options);
      ASSERT_OK(sink.Write("a"));
      FileSinkCommittable c = PreCommit(sink, 1);
      ASSERT_OK(sink.Write("b"));  // an in-progress file
      EXPECT_EQ(test::Mode(out), expected.dir_mode) << "umask " << umask;
      EXPECT_EQ(test::Mode(out + "/" + c.pending_name), expected.file_mode);
      EXPECT_EQ(test::Mode(out + "/.part-0-1-1.inprogress"), expected.file_mode);
      ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(1)));
      EXPECT_EQ(test::Mode(out + "/" + c.final_name), expected.file_mode) << "umask " << umask;
      ::umask(old);
    }
  }
}

// In a setgid directory (start-cluster.sh --group) the output directory keeps the setgid bit,
// so its files get the directory's group.
TEST(FileSink, AnOutputDirectoryInASetgidDirectoryStaysSetgid) {
  TempDir dir;
  const std::string parent = dir.File("run");
  ASSERT_EQ(::mkdir(parent.c_str(), 0750), 0);
  ASSERT_EQ(::chmod(parent.c_str(), 02750), 0);
  FileSinkOptions options = Options(parent + "/out");
  options.access = FileAccess::kGroupReadable;
  FileSink sink = OpenSink(options);
  ASSERT_OK(sink.Write("a"));
  EXPECT_EQ(test::Mode(parent + "/out"), 02750u);
}

// A crash of attempt 1 after checkpoint 2 completed (but before its commit) and after checkpoint 3
// was pre-committed but never completed.
TEST(FileSink, RecoverCommitsTheRestoredCheckpointAndDeletesUncommittedLeftovers) {
  TempDir dir;
  std::vector<FileSinkCommittable> state_of_checkpoint_2;
  {
    FileSink s0 = OpenSink(Options(dir.path(), 0, 1));
    FileSink s1 = OpenSink(Options(dir.path(), 1, 1));
    ASSERT_OK(s0.Write("s0 cp1"));
    ASSERT_OK(s1.Write("s1 cp1"));
    PreCommit(s0, 1);
    PreCommit(s1, 1);
    ASSERT_OK(s0.NotifyCheckpointComplete(CheckpointId(1)));
    ASSERT_OK(s1.NotifyCheckpointComplete(CheckpointId(1)));
    ASSERT_OK(s0.Write("s0 cp2"));
    ASSERT_OK(s1.Write("s1 cp2"));
    PreCommit(s0, 2);
    PreCommit(s1, 2);
    state_of_checkpoint_2 = s0.pending_committables();
    state_of_checkpoint_2.insert(state_of_checkpoint_2.end(), s1.pending_committables().begin(),
                                 s1.pending_committables().end());
    ASSERT_OK(s1.NotifyCheckpointComplete(CheckpointId(2)));  // s0 crashed before
    ASSERT_OK(s0.Write("s0 cp3"));
    ASSERT_OK(s1.Write("s1 cp3"));
    PreCommit(s0, 3);  // checkpoint 3 never completes
    PreCommit(s1, 3);
    ASSERT_OK(s0.Write("s0 after cp3"));
    // The crash: the in-progress file stays (the destructor would delete it).
    ASSERT_EQ(::link(dir.File(".part-0-1-3.inprogress").c_str(),
                     dir.File(".part-0-1-9.inprogress").c_str()),
              0);
  }
  dir.Write("notes.txt", "not ours");
  dir.Write("_SUCCESS", "");
  dir.Write(".other-0-1-0.inprogress", "another prefix");
  // Attempt 2 has already started writing.
  FileSink new_sink = OpenSink(Options(dir.path(), 0, 2));
  ASSERT_OK(new_sink.Write("s0 replayed cp2.."));

  Result<FileSinkRecoveryStats> stats = FileSink::Recover(dir.path(), "part", CheckpointId(2),
                                                          state_of_checkpoint_2, AttemptNumber(2));
  ASSERT_OK(stats);
  EXPECT_EQ(stats->committed, 1);          // s0's checkpoint 2
  EXPECT_EQ(stats->already_committed, 1);  // s1's checkpoint 2
  // s0's pending 3 and in-progress, s1's pending 3.
  EXPECT_EQ(stats->deleted, 3);
  EXPECT_EQ(dir.List(),
            (std::vector<std::string>{".other-0-1-0.inprogress", ".part-0-2-0.inprogress",
                                      "_SUCCESS", "notes.txt", "part-0-1-1.jsonl",
                                      "part-0-1-2.jsonl", "part-1-1-1.jsonl", "part-1-1-2.jsonl"}));
  EXPECT_EQ(ReadFile(dir.File("part-0-1-2.jsonl")), "s0 cp2\n");

  // Running it again (another subtask, or a retry) changes nothing.
  Result<FileSinkRecoveryStats> again = FileSink::Recover(dir.path(), "part", CheckpointId(2),
                                                          state_of_checkpoint_2, AttemptNumber(2));
  ASSERT_OK(again);
  EXPECT_EQ(again->committed, 0);
  EXPECT_EQ(again->already_committed, 2);
  EXPECT_EQ(again->deleted, 0);
}

TEST(FileSink, RecoverFromScratchDeletesEveryUncommittedFileOfEarlierAttempts) {
  TempDir dir;
  {
    FileSink s = OpenSink(Options(dir.path(), 0, 3));
    ASSERT_OK(s.Write("x"));
    PreCommit(s, 1);
    ASSERT_OK(s.Write("y"));
    PreCommit(s, 2);
    ASSERT_OK(s.Write("z"));
    ASSERT_EQ(::link(dir.File(".part-0-3-2.inprogress").c_str(),
                     dir.File(".part-0-3-7.inprogress").c_str()),
              0);  // the crash
  }
  Result<FileSinkRecoveryStats> stats =
      FileSink::Recover(dir.path(), "part", std::nullopt, {}, AttemptNumber(4));
  ASSERT_OK(stats);
  EXPECT_EQ(stats->deleted, 3);
  EXPECT_TRUE(dir.List().empty());
  // A directory that was never created has nothing to recover.
  EXPECT_OK(FileSink::Recover(dir.File("never"), "part", std::nullopt, {}, AttemptNumber(1)));
}

// Issue 9, Liveness 2: recovery used to delete committed files newer than the restored
// checkpoint (and final files) and write those results again under new names.
TEST(FileSink, RecoverNeverDeletesCommittedFilesTheRestoredCheckpointDoesNotCover) {
  TempDir dir;
  std::vector<FileSinkCommittable> state_of_checkpoint_1;
  {
    FileSink s0 = OpenSink(Options(dir.path(), 0, 1));
    ASSERT_OK(s0.Write("s0 cp1"));
    PreCommit(s0, 1);
    state_of_checkpoint_1 = s0.pending_committables();
    ASSERT_OK(s0.NotifyCheckpointComplete(CheckpointId(1)));
    ASSERT_OK(s0.Write("s0 cp2"));
    PreCommit(s0, 2);
    ASSERT_OK(s0.NotifyCheckpointComplete(CheckpointId(2)));  // 2 completed, then lost
    ASSERT_OK(s0.Write("s0 cp3"));
    PreCommit(s0, 3);
  }
  dir.Write("part-1-1-final.jsonl", "s1 final\n");
  const std::vector<std::string> before = dir.List();
  const std::string committed_2 = ReadFile(dir.File("part-0-1-2.jsonl"));

  Result<FileSinkRecoveryStats> stats = FileSink::Recover(dir.path(), "part", CheckpointId(1),
                                                          state_of_checkpoint_1, AttemptNumber(2));
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(stats.status().message(),
            "output directory '" + dir.path() +
                "' holds 2 committed file(s) of earlier attempts that the restored checkpoint 1 "
                "does not cover (part-0-1-2.jsonl, part-1-1-final.jsonl), and committed output "
                "is never deleted: restoring would emit those results a second time; restore a "
                "newer checkpoint, or start a new job with --from-savepoint to accept the "
                "replay into new part files (checkpoint/README.md, \"When a checkpoint is "
                "corrupt\")");
  EXPECT_EQ(dir.List(), before);  // nothing deleted, not even the pending file
  EXPECT_EQ(ReadFile(dir.File("part-0-1-2.jsonl")), committed_2);
  // From scratch, committed output of earlier attempts is refused the same way.
  Result<FileSinkRecoveryStats> scratch =
      FileSink::Recover(dir.path(), "part", std::nullopt, {}, AttemptNumber(2));
  ASSERT_FALSE(scratch.ok());
  EXPECT_NE(scratch.status().message().find("3 committed file(s) of earlier attempts that a "
                                            "restart from scratch does not cover"),
            std::string::npos)
      << scratch.status().message();
  EXPECT_EQ(dir.List(), before);
}

// Liveness 6: the task thread's half of the pre-commit does no fsync; the committable becomes
// durable in the sync, which may run on another thread.
TEST(FileSink, StartPreCommitDoesNoFsyncAndTheSyncMakesTheCommittableDurable) {
  TempDir dir;
  FaultInjectionFileSystem fs;
  FileSink sink = OpenSink(OptionsOn(&fs, dir.path()));
  ASSERT_OK(sink.Write("a"));
  Result<std::optional<FileSinkPreCommit>> pre = sink.StartPreCommit(CheckpointId(4));
  ASSERT_OK(pre);
  ASSERT_TRUE(pre->has_value());
  EXPECT_EQ(fs.file_syncs(), 0);
  EXPECT_EQ(fs.directory_syncs(), 0);
  EXPECT_EQ(sink.pending_committables().size(), 1u);
  EXPECT_EQ(dir.List(), (std::vector<std::string>{".part-0-1-0.inprogress"}));
  ASSERT_OK(sink.Write("b"));  // the next transaction opens meanwhile

  Status synced;
  std::thread helper([&] { synced = (*pre)->sync->Run(); });
  const std::thread::id helper_id = helper.get_id();
  helper.join();
  ASSERT_OK(synced);
  EXPECT_EQ(fs.file_syncs(), 1);
  EXPECT_EQ(fs.directory_syncs(), 1);
  EXPECT_EQ(fs.sync_threads(), (std::vector<std::thread::id>{helper_id, helper_id}));
  EXPECT_EQ(ReadFile(dir.File("_part-0-1-0-4.pending")), "a\n");
  // A crash now keeps the pre-committed transaction and loses the unsynced data of the next
  // (its empty file was made durable by the directory sync).
  ASSERT_OK(fs.SimulateCrash());
  EXPECT_EQ(dir.List(),
            (std::vector<std::string>{".part-0-1-1.inprogress", "_part-0-1-0-4.pending"}));
  EXPECT_EQ(ReadFile(dir.File(".part-0-1-1.inprogress")), "");
}

TEST(FileSink, AFailedSyncLeavesNoDurableCommittableAndSaysWhatFailed) {
  TempDir dir;
  FaultInjectionFileSystem fs;
  FileSink sink = OpenSink(OptionsOn(&fs, dir.path()));
  ASSERT_OK(sink.Write("a"));
  fs.FailSyncs(".inprogress");
  Result<std::optional<FileSinkCommittable>> c = sink.PreCommit(CheckpointId(1));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "cannot fsync output file '" +
                                      dir.File(".part-0-1-0.inprogress") + "': cannot sync " +
                                      dir.File(".part-0-1-0.inprogress") + ": Input/output error");
  EXPECT_TRUE(sink.pending_committables().empty());
}

// A crash that loses every unsynced byte: recovery from the last completed checkpoint gives
// exactly the output of a run that stopped there.
TEST(FileSink, CrashLosingUnsyncedDataRecoversTheCommittedResultExactly) {
  TempDir dir;
  FaultInjectionFileSystem fs;
  std::vector<FileSinkCommittable> state_of_checkpoint_2;
  {
    FileSinkOptions o = OptionsOn(&fs, dir.path());
    o.buffer_bytes = 4;  // every line reaches the file at once
    FileSink s = OpenSink(o);
    ASSERT_OK(s.Write("one"));
    PreCommit(s, 1);
    ASSERT_OK(s.NotifyCheckpointComplete(CheckpointId(1)));
    ASSERT_OK(s.Write("two"));
    PreCommit(s, 2);
    state_of_checkpoint_2 = s.pending_committables();  // completed; notification lost
    ASSERT_OK(s.Write("three, written but never synced"));
    ASSERT_OK(fs.SimulateCrash());
  }  // the destructor's abort finds the in-progress file gone already
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"_part-0-1-1-2.pending", "part-0-1-1.jsonl"}));
  Result<FileSinkRecoveryStats> stats = FileSink::Recover(
      dir.path(), "part", CheckpointId(2), state_of_checkpoint_2, AttemptNumber(2), fs);
  ASSERT_OK(stats);
  EXPECT_EQ(stats->committed, 1);
  EXPECT_EQ(Result_(dir), "one\ntwo\n");
  ASSERT_OK(fs.SimulateCrash());  // recovery synced what it did
  EXPECT_EQ(Result_(dir), "one\ntwo\n");
}

TEST(FileSink, RecoverDetectsContentThatDoesNotMatchTheCheckpoint) {
  TempDir dir;
  FileSinkCommittable c;
  {
    FileSink s = OpenSink(Options(dir.path()));
    ASSERT_OK(s.Write("abc"));
    c = PreCommit(s, 1);
  }
  dir.Write(c.pending_name, "xyz\n");  // same size, other bytes
  Result<FileSinkRecoveryStats> stats =
      FileSink::Recover(dir.path(), "part", CheckpointId(1), {&c, 1}, AttemptNumber(2));
  EXPECT_EQ(stats.status(),
            Corruption("output file '" + dir.File(c.pending_name) +
                       "' of checkpoint 1 has 4 bytes with another checksum; the checkpoint "
                       "recorded 4 bytes; it was modified outside keyflow"));
  EXPECT_EQ(dir.List(), std::vector<std::string>{c.pending_name});  // nothing committed
}

// The end-to-end promise: after a crash and a restore, the committed output equals the
// output of a run without crashes.
TEST(FileSink, CommittedOutputAfterACrashAndRestoreEqualsACleanRun) {
  TempDir dir;
  const int kLines = 100;
  const int kPerCheckpoint = 10;
  std::string clean;
  for (int i = 0; i < kLines; ++i) clean += "line " + std::to_string(i) + "\n";

  // Attempt 1: checkpoints 1..5 complete, 6 is pre-committed, then a crash at line 67.
  std::vector<FileSinkCommittable> restored_state;
  int restored_position = 0;
  {
    FileSink sink = OpenSink(Options(dir.path(), 0, 1));
    for (int i = 0; i < 67; ++i) {
      ASSERT_OK(sink.Write("line " + std::to_string(i)));
      if ((i + 1) % kPerCheckpoint == 0) {
        int64_t cp = (i + 1) / kPerCheckpoint;
        PreCommit(sink, cp);
        if (cp == 5) {  // the last checkpoint to complete: its state is what we
                        // restore
          restored_state = sink.pending_committables();
          restored_position = i + 1;
        }
        // Notifications for 4 and 5 are lost in the crash.
        if (cp <= 3) {
          ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(cp)));
        }
      }
    }
    ASSERT_EQ(::link(dir.File(".part-0-1-6.inprogress").c_str(),
                     dir.File(".part-0-1-99.inprogress").c_str()),
              0);
  }
  ASSERT_EQ(restored_state.size(),
            2u);  // checkpoints 4 and 5, both not yet committed

  // Attempt 2: recover, replay from the restored source position, finish.
  ASSERT_TRUE(
      FileSink::Recover(dir.path(), "part", CheckpointId(5), restored_state, AttemptNumber(2))
          .ok());
  FileSink sink = OpenSink(Options(dir.path(), 0, 2));
  for (int i = restored_position; i < kLines; ++i) {
    ASSERT_OK(sink.Write("line " + std::to_string(i)));
    if ((i + 1) % kPerCheckpoint == 0) {
      int64_t cp = 5 + (i + 1 - restored_position) / kPerCheckpoint;
      PreCommit(sink, cp);
      ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(cp)));
    }
  }
  ASSERT_OK(sink.FinishAndCommit());

  // Every committed line exactly once.
  std::vector<std::string> lines;
  std::string all = Result_(dir);
  for (size_t pos = 0; pos < all.size();) {
    size_t nl = all.find('\n', pos);
    lines.push_back(all.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::sort(lines.begin(), lines.end());
  std::vector<std::string> expected;
  for (int i = 0; i < kLines; ++i) expected.push_back("line " + std::to_string(i));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(lines, expected);
  for (const std::string& name : dir.List()) {
    EXPECT_NE(name[0], '.') << name;
    EXPECT_NE(name[0], '_') << name;
  }
}

}  // namespace
}  // namespace keyflow
