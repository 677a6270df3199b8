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
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "common/file_io.h"
#include "tests/integration/cluster.h"
#include "tests/integration/count_window_fixture.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// About 4 s of input at 4000 events/s; 400 keys, so every subtask's state changes between two
// checkpoints a second apart.
constexpr char kInput[] = "gen:events=16000,keys=400,splits=2,seed=17,rate=4000";
constexpr int64_t kNoCount = 1'000'000;      // no window closes by count...
constexpr int64_t kNoTimeoutMs = 3'600'000;  // ...nor by time before the end of the input

enum class Damage { kFlipBytes, kDelete };

struct Completed {
  int64_t id = 0;
  std::string directory;
};

class SharedStateFaultsTest : public CountWindowClusterTest {
 protected:
  // Submits count-window (parallelism 2, no periodic checkpoints, incremental) with `extra`.
  std::string Submit(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--parallelism", "2", "--checkpoint-interval", "1h"};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = MustRun(CountWindowRunArgs(kInput, Output(), kNoCount, kNoTimeoutMs, args));
    return r.out.substr(0, r.out.find('\n'));
  }
  std::string Output() const { return dir_.path() + "/output"; }

  // Waits until the job read more than `records` records, then takes a checkpoint.
  Completed CheckpointAfter(int64_t records) {
    WaitForJob(
        [&](const nlohmann::json& j) {
          return j.value("state", "") == "RUNNING" && j.value("records_in", int64_t{0}) > records;
        },
        "more than " + std::to_string(records) + " records");
    auto r = cluster_->Cli({"checkpoint"}, Duration::Seconds(30));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
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
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    std::set<std::string> names;
    if (m.ok()) {
      for (const SharedStateFile& f : m->SharedFiles()) names.insert(f.name);
    }
    return names;
  }

  std::string SharedDir(const std::string& job_id) const {
    return cluster_->CheckpointDir() + "/" + job_id + "/shared";
  }

  static void FlipBytes(const std::string& path) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f) << path;
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    ASSERT_GT(size, 16) << path;
    std::string bytes(8, '\0');
    f.seekg(size / 2);
    f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    for (char& c : bytes) c = static_cast<char>(~c);
    f.seekp(size / 2);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f) << path;
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

    ASSERT_TRUE(cluster_->KillWorker(1).ok());
    ASSERT_TRUE(cluster_->StartWorker(1).ok());
    nlohmann::json job = WaitForJob(
        [](const nlohmann::json& j) { return j.value("state", "") == "FINISHED"; }, "the end");
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

// A checkpoint written by a keyflow whose RocksDB snapshots have another format version (99):
// restoring it fails the job at once with the sentence, and the checkpoint stays as it was.
TEST_F(SharedStateFaultsTest, RocksDbSnapshotOfAnotherFormatVersionFailsTheJobAndStaysIntact) {
  const std::string job_id = Submit(RocksDb(dir_));
  ASSERT_FALSE(job_id.empty());
  const Completed c = CheckpointAfter(2000);
  auto m = CheckpointStorage::ReadMetadata(c.directory);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (SubtaskCheckpointState& s : m->subtasks) {
    ASSERT_TRUE(s.native_state.has_value()) << "subtask " << s.subtask.value();
    s.native_state->format_version = 99;
  }
  ASSERT_TRUE(CheckpointStorage(cluster_->CheckpointDir()).WriteMetadata(c.directory, *m).ok());
  const std::map<std::string, std::string> before = Contents(c.directory),
                                           shared_before = Contents(SharedDir(job_id));

  ASSERT_TRUE(cluster_->KillWorker(1).ok());
  ASSERT_TRUE(cluster_->StartWorker(1).ok());
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "FAILED"; }, "the failure");
  const std::string why = job.value("failure", "");
  EXPECT_THAT(why, HasSubstr("it was written in native format version 99, which this keyflow "
                             "cannot read (it reads version 1); restore it with the keyflow "
                             "version that wrote it, or from a savepoint"));
  EXPECT_THAT(why, HasSubstr("the job cannot continue (no restart can help)"));
  EXPECT_EQ(job.value("restarts", -1), 1) << "only the restart after the SIGKILL: " << job.dump();
  EXPECT_EQ(Contents(c.directory), before) << "the checkpoint was changed";
  for (const auto& [path, bytes] : shared_before) {
    EXPECT_TRUE(fs::exists(path)) << path << " was deleted";
  }
}

}  // namespace
}  // namespace keyflow::test
