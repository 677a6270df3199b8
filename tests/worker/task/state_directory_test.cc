// StateDirectory: a subtask's local RocksDB directory is unique per cluster, job, attempt and
// subtask, private (0700), locked while its owner lives and removed when it ends; the directories
// of owners that died are removed by the next sweep, those of live owners never.
#include "worker/task/state_directory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

namespace fs = std::filesystem;

uint32_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0xFFFF;
}

class StateDirectoryTest : public ::testing::Test {
 protected:
  Result<std::unique_ptr<StateDirectory>> Make(std::string_view cluster, int attempt, int subtask) {
    return StateDirectory::Create(root_, cluster, "count-window-20261205-101500",
                                  AttemptNumber(attempt), SubtaskIndex(subtask));
  }
  TempDir tmp_{"state-directory-test"};
  const std::string root_ = tmp_.path() + "/keyflow-state";
};

TEST_F(StateDirectoryTest, IsPrivateAndNamedByClusterJobAttemptAndSubtask) {
  auto d = Make("c1", 3, 1);
  ASSERT_OK(d);
  const std::string attempt_dir = root_ + "/c1/count-window-20261205-101500/attempt-3";
  EXPECT_EQ((*d)->path(), attempt_dir + "/subtask-1");
  EXPECT_TRUE(fs::is_directory((*d)->path()));
  for (const std::string& p :
       {root_ + "/c1", root_ + "/c1/count-window-20261205-101500", attempt_dir, (*d)->path()}) {
    EXPECT_EQ(ModeOf(p), 0700u) << p;
  }
  EXPECT_EQ(ModeOf(attempt_dir + "/subtask-1.lock"), 0600u);
}

TEST_F(StateDirectoryTest, TwoClustersWithTheSameJobIdGetDifferentDirectories) {
  auto a = Make("cluster-a", 1, 0);
  auto b = Make("cluster-b", 1, 0);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_NE((*a)->path(), (*b)->path());
  std::ofstream((*a)->path() + "/000007.sst") << "a's rows";
  b->reset();  // b's end must not touch a's files
  EXPECT_TRUE(fs::exists((*a)->path() + "/000007.sst"));
}

TEST_F(StateDirectoryTest, ASecondOwnerOfTheSameDirectoryIsRefusedWhileTheFirstLives) {
  auto first = Make("c", 1, 0);
  ASSERT_OK(first);
  std::ofstream((*first)->path() + "/CURRENT") << "x";
  auto second = Make("c", 1, 0);
  EXPECT_EQ(second.status(),
            FailedPrecondition("the state directory " + (*first)->path() +
                               " is in use by another process: two workers were given the same "
                               "--state-dir for the same cluster, job, attempt and subtask"));
  EXPECT_TRUE(fs::exists((*first)->path() + "/CURRENT")) << "the refused one deleted nothing";
}

// Two workers on one state root, deploying at once: the other worker's sweep runs right after
// this one created its lock file and before it locked it, finds the file unlocked, and removes
// it with the (then empty) attempt directory. Create must notice it holds an unlinked lock and
// start over, not fail (nor own a directory a later sweep would take).
TEST_F(StateDirectoryTest, ASweepThatTakesTheNewLockFileFirstMakesCreateStartOver) {
  int sweeps = 0;
  std::vector<std::string> swept;
  StateDirectoryHooks hooks;
  hooks.before_lock = [&] {
    if (sweeps++ > 0) return;
    swept = RemoveDeadStateDirectories(root_);
  };
  auto d = StateDirectory::Create(root_, "c", "count-window-20261205-101500", AttemptNumber(1),
                                  SubtaskIndex(0), hooks);
  ASSERT_OK(d);
  EXPECT_EQ(sweeps, 2);
  EXPECT_EQ(swept.size(), 1u) << "the sweep took the fresh lock file";
  EXPECT_TRUE(fs::is_directory((*d)->path()));
  EXPECT_TRUE(fs::exists((*d)->path() + ".lock"));
  // Its lock is held now: another sweep leaves it alone.
  EXPECT_TRUE(RemoveDeadStateDirectories(root_).empty());
  EXPECT_TRUE(fs::is_directory((*d)->path()));
}

TEST_F(StateDirectoryTest, TheEndOfItsOwnerRemovesTheDirectoryAndItsLock) {
  std::string path;
  {
    auto d = Make("c", 2, 4);
    ASSERT_OK(d);
    path = (*d)->path();
    std::ofstream(path + "/000001.sst") << "rows";
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".lock"));
  auto again = Make("c", 2, 4);  // free again
  EXPECT_OK(again);
}

// A worker killed with its subtask's directory open: the kernel drops its lock, so the next
// sweep removes the directory (and the parents left empty); a live owner's stays.
TEST_F(StateDirectoryTest, ASweepRemovesTheDirectoriesOfDeadOwnersOnly) {
  auto live = Make("c", 1, 0);
  ASSERT_OK(live);
  const std::string dead_path = root_ + "/other/count-window-20261205-101500/attempt-1/subtask-1";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto d = StateDirectory::Create(root_, "other", "count-window-20261205-101500",
                                    AttemptNumber(1), SubtaskIndex(1));
    if (!d.ok()) ::_exit(1);
    std::ofstream((*d)->path() + "/000009.sst") << "rows of a killed worker";
    ::_exit(0);  // no destructor runs: as if killed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(fs::exists(dead_path + "/000009.sst"));

  EXPECT_EQ(RemoveDeadStateDirectories(root_), std::vector<std::string>{dead_path});
  EXPECT_FALSE(fs::exists(root_ + "/other")) << "the parents left empty are removed";
  EXPECT_TRUE(fs::is_directory((*live)->path()));
  EXPECT_TRUE(fs::exists(root_));
  EXPECT_TRUE(RemoveDeadStateDirectories(root_).empty());
  EXPECT_TRUE(RemoveDeadStateDirectories(root_ + "/missing").empty());
}

TEST_F(StateDirectoryTest, RelativeRootsAreMadeAbsolute) {
  EXPECT_EQ(AbsoluteStateRoot("/a/b/../c/"), "/a/c");
  EXPECT_EQ(AbsoluteStateRoot("keyflow-state"), (fs::current_path() / "keyflow-state").string());
}

}  // namespace
}  // namespace keyflow
