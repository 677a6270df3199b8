// Faults of incremental checkpoints' shared files, end to end (issue 11, requirement 8): a
// shared file of the newest completed checkpoint damaged (bytes flipped: the worker's checksums
// find it) or deleted (the coordinator's VerifyStateFiles finds it), then a worker SIGKILLed.
// The job restores the previous completed checkpoint, which does not reference that file, and
// its output equals the failure-free run's: nothing lost, nothing duplicated. Heap
// (key-group-incremental `.kgs` files) and RocksDB (native `.sst` files). And a RocksDB
// checkpoint whose native handle has a format version this build cannot read: the job fails
// with the sentence (which version, which one this build reads, what to do), and the
// checkpoint is left untouched.
//
// count-window runs with a count and a timeout larger than the input, so every window closes at
// the end of the input: no part file is committed while the job runs, so a fallback replays no
// committed output (it is automatic; the committed-output guard has its own tests in
// recovery_test.cc), and the per-key counts at the end show any lost or replayed record.
//
// Checkpoints are taken with `keyflow checkpoint` (no periodic ones): the test knows exactly
// which exist. Every wait polls `keyflow status --json` with a deadline; nothing sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "common/binary_io.h"
#include "common/file_io.h"
#include "common/hashing.h"
#include "tests/integration/cluster.h"
#include "tests/integration/count_window_fixture.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/file_faults.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// About 3 s of input at 5000 events/s; 400 keys, so every subtask's state changes between two
// checkpoints (taken after 2000 and 6000 records). The jobs run it held (HeldInput: the input
// ends only once the test has killed its worker), so however long a loaded machine stalls a
// checkpoint, the job cannot finish before the kill.
constexpr char kInput[] = "gen:events=16000,keys=400,splits=2,seed=17,rate=5000";
constexpr int64_t kNoCount = 1'000'000;      // no window closes by count...
constexpr int64_t kNoTimeoutMs = 3'600'000;  // ...nor by time before the end of the input

enum class Damage { kFlipBytes, kDelete };

struct Completed {
  int64_t id = 0;
  std::string directory;
};

// Every file of a directory, path -> content.
std::map<std::string, std::string> Contents(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto bytes = ReadFileToString(e.path().string());
    out[e.path().string()] = bytes.ok() ? *bytes : "<unreadable>";
  }
  return out;
}

class SharedStateFaultsTest : public CountWindowClusterTest {
 protected:
  // Submits count-window (parallelism 2, no periodic checkpoints, incremental) with `extra`.
  std::string Submit(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--parallelism", "2", "--checkpoint-interval", "1h"};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r =
        MustRun(CountWindowRunArgs(HeldInput(), Output(), kNoCount, kNoTimeoutMs, args));
    return r.out.substr(0, r.out.find('\n'));
  }
  std::string Output() const { return dir_.path() + "/output"; }
  // kInput, whose end waits for the file Release() (created after the kill).
  std::string HeldInput() const { return std::string(kInput) + ",hold=" + Release(); }
  std::string Release() const { return dir_.path() + "/release"; }

  // Waits until the job read more than `records` records, then takes a checkpoint.
  Completed CheckpointAfter(int64_t records) {
    WaitForJob(
        [&](const nlohmann::json& j) {
          return j.value("state", "") == "RUNNING" && j.value("records_in", int64_t{0}) > records;
        },
        "more than " + std::to_string(records) + " records");
    auto r = cluster_->Cli({"checkpoint"}, Duration::Seconds(30));
    EXPECT_OK(r);
    if (!r.ok()) return {};
    std::smatch m;
    const std::regex rx("checkpoint ([0-9]+) completed: (\\S+)");
    EXPECT_TRUE(r->exit_code == 0 && std::regex_search(r->out, m, rx))
        << r->out << r->err << cluster_->LogExcerpts();
    if (m.empty()) return {};
    return Completed{std::stoll(m[1]), m[2]};
  }

  static std::set<std::string> SharedNames(const Completed& c) {
    auto m = CheckpointStorage::ReadMetadata(c.directory);
    EXPECT_OK(m);
    std::set<std::string> names;
    if (m.ok()) {
      for (const SharedStateFile& f : m->SharedFiles()) names.insert(f.name);
    }
    return names;
  }

  std::string SharedDir(const std::string& job_id) const {
    return cluster_->CheckpointDir() + "/" + job_id + "/shared";
  }

  // SIGKILLs worker 1, starts it again, releases the input and waits until the job is in `state`
  // (FINISHED or FAILED); returns its status. Empty (with a test failure) if the worker did not
  // restart.
  nlohmann::json KillWorkerAndWaitFor(const std::string& state) {
    const bool killed = cluster_->KillWorker(1).ok() && cluster_->StartWorker(1).ok();
    EXPECT_TRUE(killed) << cluster_->LogExcerpts();
    EXPECT_OK(WriteFileAtomically(Release(), ""));  // the input may end now
    if (!killed) return nlohmann::json::object();
    return WaitForJob([&](const nlohmann::json& j) { return j.value("state", "") == state; },
                      "the job " + state);
  }

  // Worker 1 SIGKILLed: restoring `c` fails the job at once (no restart but the one after the
  // SIGKILL) with every one of `sentences` in its failure, and `c` stays as it was.
  void KillAndExpectTheJobFailsAtOnce(const Completed& c,
                                      const std::vector<std::string>& sentences) {
    const std::map<std::string, std::string> before = Contents(c.directory);
    nlohmann::json job = KillWorkerAndWaitFor("FAILED");
    const std::string why = job.value("failure", "");
    for (const std::string& sentence : sentences) EXPECT_THAT(why, HasSubstr(sentence));
    EXPECT_THAT(why, HasSubstr("the job cannot continue (no restart can help)"));
    EXPECT_EQ(job.value("restarts", -1), 1) << "only the restart after the SIGKILL: " << job.dump();
    EXPECT_EQ(Contents(c.directory), before) << "the checkpoint was changed";
  }

  std::string CoordinatorLog() const {
    auto log = ReadFileToString(cluster_->CoordinatorLog());
    return log.ok() ? *log : std::string();
  }

  // Two checkpoints; `damage` to a shared file the second one references (and the first one
  // too if `also_the_first`, else only the second); worker 1 SIGKILLed. The job restores the
  // first checkpoint (or, if both are damaged, starts from the beginning of the input) and
  // finishes with the failure-free output.
  void DamageTheNewestAndKill(std::vector<std::string> backend, const std::string& suffix,
                              Damage damage, bool also_the_first = false) {
    const std::vector<std::string> reference =
        ReferenceCountWindowRun(kInput, kNoCount, kNoTimeoutMs);
    const std::string job_id = Submit(std::move(backend));
    ASSERT_FALSE(job_id.empty());
    const Completed first = CheckpointAfter(2000);
    const Completed newest = CheckpointAfter(6000);
    ASSERT_GT(newest.id, first.id);
    const std::set<std::string> old_names = SharedNames(first);
    std::vector<std::string> candidates;
    for (const std::string& name : SharedNames(newest)) {
      if ((old_names.count(name) != 0) == also_the_first && name.ends_with(suffix)) {
        candidates.push_back(name);
      }
    }
    ASSERT_FALSE(candidates.empty())
        << "checkpoint " << newest.id << " has no " << suffix
        << (also_the_first ? " of checkpoint " : " new since ") << first.id;
    const std::string damaged = SharedDir(job_id) + "/" + candidates.front();
    if (damage == Damage::kFlipBytes) {
      ASSERT_NO_FATAL_FAILURE(FlipBytes(damaged));
    } else {
      ASSERT_TRUE(fs::remove(damaged)) << damaged;
    }

    nlohmann::json job = KillWorkerAndWaitFor("FINISHED");
    EXPECT_EQ(job.value("restored_from", int64_t{0}), also_the_first ? 0 : first.id) << job.dump();
    // A flipped byte is found by the restoring worker (its checksums), a missing file by the
    // coordinator before it deploys; either names the file.
    const std::string log = CoordinatorLog();
    const std::string n = std::to_string(newest.id);
    EXPECT_THAT(log, HasSubstr(damage == Damage::kFlipBytes
                                   ? "checkpoint " + n + " is corrupted (checkpoint " + n +
                                         " cannot be restored: "
                                   : "checkpoint " + n + " cannot be restored ("))
        << cluster_->LogExcerpts();
    EXPECT_THAT(log, HasSubstr(damaged)) << "the log names the damaged file";
    EXPECT_THAT(log, HasSubstr("falling back to " +
                               (also_the_first ? "the start of the input"
                                               : "checkpoint " + std::to_string(first.id))));
    ExpectCountWindowOutput(Output(), reference, "restored from the previous checkpoint");
    // The final checkpoint completed after the fallback: the unrestorable one went with it,
    // and with it the damaged file only it referenced.
    EXPECT_FALSE(fs::exists(newest.directory)) << newest.directory;
    EXPECT_NE(fs::exists(first.directory), also_the_first) << first.directory;
    EXPECT_FALSE(fs::exists(damaged)) << damaged;
  }
};

const std::vector<std::string> kHeap = {"--state-backend", "heap"};

std::vector<std::string> RocksDb(const TestDir& dir) {
  return {"--state-backend", "rocksdb", "--state-dir", dir.Subdir("state")};
}

TEST_F(SharedStateFaultsTest, HeapCorruptSharedFileFallsBackToThePreviousCheckpoint) {
  DamageTheNewestAndKill(kHeap, ".kgs", Damage::kFlipBytes);
}

TEST_F(SharedStateFaultsTest, HeapMissingSharedFileFallsBackToThePreviousCheckpoint) {
  DamageTheNewestAndKill(kHeap, ".kgs", Damage::kDelete);
}

TEST_F(SharedStateFaultsTest, RocksDbCorruptSstFallsBackToThePreviousCheckpoint) {
  DamageTheNewestAndKill(RocksDb(dir_), ".sst", Damage::kFlipBytes);
}

TEST_F(SharedStateFaultsTest, RocksDbMissingSstFallsBackToThePreviousCheckpoint) {
  DamageTheNewestAndKill(RocksDb(dir_), ".sst", Damage::kDelete);
}

// An SST both checkpoints reference (RocksDB keeps its files until a compaction): no completed
// checkpoint is restorable, so the job starts again from the beginning of its input (nothing
// was committed yet) and still produces exactly the failure-free output.
TEST_F(SharedStateFaultsTest, RocksDbCorruptSstOfEveryCheckpointRestartsFromTheInput) {
  DamageTheNewestAndKill(RocksDb(dir_), ".sst", Damage::kFlipBytes, /*also_the_first=*/true);
}

// A checkpoint written by a keyflow whose RocksDB snapshots have another format version (99):
// restoring it fails the job at once with the sentence, and the checkpoint stays as it was.
TEST_F(SharedStateFaultsTest, RocksDbSnapshotOfAnotherFormatVersionFailsTheJobAndStaysIntact) {
  const std::string job_id = Submit(RocksDb(dir_));
  ASSERT_FALSE(job_id.empty());
  const Completed c = CheckpointAfter(2000);
  auto m = CheckpointStorage::ReadMetadata(c.directory);
  ASSERT_OK(m);
  for (SubtaskCheckpointState& s : m->subtasks) {
    ASSERT_TRUE(s.native_state.has_value()) << "subtask " << s.subtask.value();
    s.native_state->format_version = 99;
  }
  ASSERT_OK(CheckpointStorage(cluster_->CheckpointDir()).WriteMetadata(c.directory, *m));
  const std::map<std::string, std::string> shared_before = Contents(SharedDir(job_id));
  KillAndExpectTheJobFailsAtOnce(
      c, {"the RocksDB snapshot of key groups KeyGroupRange{start=",
          "} was written in format version 99, which this keyflow cannot read (it reads format "
          "version 1); restore it with a keyflow that reads format version 99, or from an "
          "earlier checkpoint or savepoint"});
  for (const auto& [path, bytes] : shared_before) {
    EXPECT_TRUE(fs::exists(path)) << path << " was deleted";
  }
}

// checkpoint/README.md "Format versions", end to end: a byte flipped in a version field is
// Corruption (the previous checkpoint is restored, the output is exact), an intact file of a
// newer version is a version skew (the job fails at once with the sentence, nothing changes).

// Rewrites the header of the canonical snapshot `path` as a keyflow writing format `version`
// would: the same header layout, the header checksum over the new version.
void RewriteSnapshotVersion(const std::string& path, uint32_t version) {
  auto read = ReadFileToString(path);
  ASSERT_OK(read);
  std::string bytes = *read;
  BinaryReader r(std::string_view(bytes).substr(8));
  r.U32();
  r.I32();
  r.U8();
  r.I32();
  r.I32();
  const uint64_t sections = r.VarU64();
  for (uint64_t i = 0; i < sections; ++i) {
    r.U8();
    r.Bytes();
  }
  ASSERT_OK(r) << path;
  const size_t header_len = bytes.size() - r.remaining();
  std::memcpy(bytes.data() + 8, &version, 4);
  const uint64_t sum = Checksum64(bytes.data(), header_len);
  std::memcpy(bytes.data() + header_len, &sum, 8);
  ASSERT_OK(WriteFileAtomically(path, bytes)) << path;
}

const std::vector<std::string> kHeapFull = {"--state-backend", "heap", "--incremental", "false"};

TEST_F(SharedStateFaultsTest, HeapSnapshotWithAFlippedVersionByteFallsBackToThePreviousCheckpoint) {
  const std::vector<std::string> reference =
      ReferenceCountWindowRun(kInput, kNoCount, kNoTimeoutMs);
  ASSERT_FALSE(Submit(kHeapFull).empty());
  const Completed first = CheckpointAfter(2000);
  const Completed newest = CheckpointAfter(6000);
  ASSERT_GT(newest.id, first.id);
  const std::string file = newest.directory + "/subtask-1.kgs";
  ASSERT_NO_FATAL_FAILURE(FlipBytesAt(file, 8, 1));  // the low byte of the format version

  nlohmann::json job = KillWorkerAndWaitFor("FINISHED");
  EXPECT_EQ(job.value("restored_from", int64_t{0}), first.id) << job.dump();
  const std::string log = CoordinatorLog();
  EXPECT_THAT(
      log, HasSubstr("checkpoint " + std::to_string(newest.id) + " cannot be restored: snapshot " +
                     file + " is corrupted or truncated: header checksum mismatch"))
      << cluster_->LogExcerpts();
  EXPECT_THAT(log, HasSubstr("falling back to checkpoint " + std::to_string(first.id)));
  ExpectCountWindowOutput(Output(), reference, "restored from the previous checkpoint");
}

TEST_F(SharedStateFaultsTest, HeapSnapshotOfANewerFormatVersionFailsTheJobAndStaysIntact) {
  ASSERT_FALSE(Submit(kHeapFull).empty());
  const Completed c = CheckpointAfter(2000);
  for (const char* name : {"/subtask-0.kgs", "/subtask-1.kgs"}) {
    ASSERT_NO_FATAL_FAILURE(RewriteSnapshotVersion(c.directory + name, 4));
  }
  KillAndExpectTheJobFailsAtOnce(
      c, {"snapshot " + c.directory + "/subtask-",
          ".kgs was written in format version 4, which this keyflow cannot read (it reads format "
          "versions 1 to 3); restore it with a keyflow that reads format version 4, or from an "
          "earlier checkpoint or savepoint"});
}

// The native format version is a field of _metadata: flipped, the metadata fails its checksum
// and the checkpoint is skipped; the previous one restores.
TEST_F(SharedStateFaultsTest, RocksDbNativeVersionByteFlippedFallsBackToThePreviousCheckpoint) {
  const std::vector<std::string> reference =
      ReferenceCountWindowRun(kInput, kNoCount, kNoTimeoutMs);
  ASSERT_FALSE(Submit(RocksDb(dir_)).empty());
  const Completed first = CheckpointAfter(2000);
  const Completed newest = CheckpointAfter(6000);
  ASSERT_GT(newest.id, first.id);
  const std::string path = CheckpointStorage::MetadataPath(newest.directory);
  auto bytes = ReadFileToString(path);
  auto m = CheckpointStorage::ReadMetadata(newest.directory);
  ASSERT_TRUE(bytes.ok() && m.ok()) << m.status().ToString();
  ASSERT_EQ(m->Encode(), *bytes) << "precondition: the encoding is deterministic";
  CheckpointMetadata other = *m;
  ASSERT_TRUE(other.subtasks[1].native_state.has_value());
  other.subtasks[1].native_state->format_version = 99;
  const std::string changed = other.Encode();
  ASSERT_EQ(changed.size(), bytes->size());
  size_t at = 0;
  while (at < changed.size() && changed[at] == (*bytes)[at]) ++at;
  ASSERT_LT(at, changed.size() - 8) << "the version field differs before the checksum";
  std::string flipped = *bytes;
  flipped[at] = changed[at];  // format_version 1 -> 99, the checksum of version 1 kept
  ASSERT_OK(WriteFileAtomically(path, flipped));

  nlohmann::json job = KillWorkerAndWaitFor("FINISHED");
  EXPECT_EQ(job.value("restored_from", int64_t{0}), first.id) << job.dump();
  const std::string log = CoordinatorLog();
  EXPECT_THAT(log, HasSubstr("skipping checkpoint directory dir=" + newest.directory))
      << cluster_->LogExcerpts();
  EXPECT_THAT(log, HasSubstr("checksum mismatch"));
  ExpectCountWindowOutput(Output(), reference, "restored from the previous checkpoint");
}

// An intact _metadata of a newer format version: the job fails with the sentence instead of
// restoring an older checkpoint, and nothing of the job's checkpoints is deleted.
TEST_F(SharedStateFaultsTest, MetadataOfANewerFormatVersionFailsTheJobAndStaysIntact) {
  const std::string job_id = Submit(kHeap);
  ASSERT_FALSE(job_id.empty());
  const Completed first = CheckpointAfter(2000);
  const Completed newest = CheckpointAfter(6000);
  const std::string path = CheckpointStorage::MetadataPath(newest.directory);
  auto read = ReadFileToString(path);
  ASSERT_OK(read);
  std::string bytes = *read;
  const uint32_t version = 3;
  std::memcpy(bytes.data() + 8, &version, 4);
  const uint64_t sum = Checksum64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  ASSERT_OK(WriteFileAtomically(path, bytes));
  const std::map<std::string, std::string> job_before =
      Contents(cluster_->CheckpointDir() + "/" + job_id);

  nlohmann::json job = KillWorkerAndWaitFor("FAILED");
  EXPECT_THAT(job.value("failure", ""),
              HasSubstr("checkpoint metadata " + path +
                        " was written in format version 3, which this keyflow cannot read (it "
                        "reads format versions 1 and 2); restore it with a keyflow that reads "
                        "format version 3, or from an earlier checkpoint or savepoint"))
      << job.dump();
  for (const auto& [file, content] : job_before) {
    if (file.ends_with("/_job")) continue;  // the job record says FAILED now
    auto now = ReadFileToString(file);
    EXPECT_TRUE(now.ok() && *now == content) << file << " was changed or deleted";
  }
  EXPECT_TRUE(fs::exists(first.directory));
}

// --from-savepoint of a savepoint whose state file has a flipped byte: the restoring worker
// finds it (checksums), and the job fails after that one attempt with what to do, instead of
// restoring the same savepoint at every restart; the savepoint stays as it was.
TEST_F(SharedStateFaultsTest, ACorruptedSavepointFailsTheJobAfterOneAttemptAndStaysIntact) {
  ASSERT_FALSE(Submit(kHeapFull).empty());
  WaitForJob(
      [](const nlohmann::json& j) {
        return j.value("state", "") == "RUNNING" && j.value("records_in", int64_t{0}) > 2000;
      },
      "more than 2000 records");
  const std::string target = dir_.path() + "/savepoint";
  auto taken = cluster_->Cli({"savepoint", "--dir", target}, Duration::Seconds(30));
  ASSERT_OK(taken);
  std::smatch m;
  const std::regex rx("savepoint ([0-9]+) completed: (\\S+)");
  ASSERT_TRUE(taken->exit_code == 0 && std::regex_search(taken->out, m, rx))
      << taken->out << taken->err << cluster_->LogExcerpts();
  const std::string id = m[1], savepoint = m[2];
  auto cancel = cluster_->Cli({"cancel"});
  ASSERT_TRUE(cancel.ok() && cancel->exit_code == 0) << cancel->out << cancel->err;
  ASSERT_NO_FATAL_FAILURE(FlipBytes(savepoint + "/subtask-1.kgs"));
  const std::map<std::string, std::string> before = Contents(savepoint);

  ASSERT_FALSE(Submit({"--state-backend", "heap", "--from-savepoint", savepoint}).empty());
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "FAILED"; }, "the failure");
  const std::string why = job.value("failure", "");
  EXPECT_THAT(why, HasSubstr("savepoint " + id + " in "));
  EXPECT_THAT(why, HasSubstr(" cannot be restored (checkpoint " + id + " cannot be restored: "));
  EXPECT_THAT(why, HasSubstr("subtask-1.kgs"));
  EXPECT_THAT(why, HasSubstr(") and the job has no completed checkpoint of its own to fall back "
                             "to: the job cannot continue; run it again with --from-savepoint "
                             "of another savepoint or checkpoint, or without --from-savepoint to "
                             "start from the beginning of the input"));
  EXPECT_EQ(job.value("restarts", -1), 1)
      << "one failed attempt, no second restore: " << job.dump();
  EXPECT_EQ(Contents(savepoint), before) << "the savepoint was changed";
}

}  // namespace
}  // namespace keyflow::test
