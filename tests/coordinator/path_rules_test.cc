// coordinator/path_rules.h: the coordinator's --allowed-path roots and the CLI's access(2)
// checks of the paths a client names (issue 13).
#include "coordinator/path_rules.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "common/file_io.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/coordinator/coordinator_harness.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

constexpr uid_t kNobody = 65534;

// Runs `check` in a child process as the unprivileged user `nobody` and returns its Status
// message ("" for OK): the tests run as root, for whom access(2) allows everything.
std::string AsNobody(const std::function<Status()>& check) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(2);
    Status s = check();
    std::string msg = s.ok() ? "" : s.message();
    if (::write(fds[1], msg.data(), msg.size()) < 0) ::_exit(3);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return out;
}

class PathRulesTest : public ::testing::Test {
 protected:
  PathRulesTest() {
    // A world-searchable tree, so that `nobody` meets exactly the modes each test sets.
    EXPECT_EQ(::chmod(tmp_.path().c_str(), 0755), 0);
    EXPECT_OK(CreateDirectories(tmp_.File("allowed")));
    EXPECT_EQ(::chmod(tmp_.File("allowed").c_str(), 0755), 0);
    root_ = *CanonicalPath(tmp_.File("allowed"));
  }
  TempDir tmp_{"path-rules"};
  std::string root_;
};

TEST_F(PathRulesTest, AllowedRootsMustBeAbsoluteExistingDirectories) {
  EXPECT_EQ(CanonicalAllowedRoots({"data"}).status(),
            InvalidArgument("--allowed-path 'data' must be an absolute path of an existing "
                            "directory"));
  EXPECT_EQ(
      CanonicalAllowedRoots({tmp_.File("none")}).status(),
      InvalidArgument("--allowed-path " + tmp_.File("none") + " does not exist: create it first"));
  auto roots = CanonicalAllowedRoots({tmp_.File("allowed/./"), "/"});
  ASSERT_OK(roots);
  EXPECT_EQ(*roots, (std::vector<std::string>{root_, "/"}));
}

TEST_F(PathRulesTest, OnlyPathsUnderARootAreAccepted) {
  const std::vector<std::string> roots = {root_};
  EXPECT_OK(CheckAllowedPath("--output", "/anywhere", {}));  // no roots: any path
  EXPECT_OK(CheckAllowedPath("--output", root_, roots));
  EXPECT_OK(CheckAllowedPath("--output", root_ + "/new/out", roots));
  EXPECT_OK(CheckAllowedPath("--output", "", roots));  // not given
  Status outside = CheckAllowedPath("--input", "/etc/shadow", roots);
  EXPECT_EQ(outside,
            InvalidArgument("--input /etc/shadow is outside the paths this coordinator may use "
                            "(--allowed-path " +
                            root_ +
                            "): choose a path under one of them, or ask the operator to start "
                            "the coordinator with another --allowed-path"));
  EXPECT_FALSE(CheckAllowedPath("--output", root_ + "x/out", roots).ok());    // a sibling
  EXPECT_FALSE(CheckAllowedPath("--output", root_ + "/../out", roots).ok());  // lexically out
  EXPECT_EQ(CheckAllowedPath("--output", "out", roots),
            InvalidArgument("--output out is not an absolute path; the coordinator accepts only "
                            "absolute paths under its --allowed-path roots (" +
                            root_ + ")"));
  // A symbolic link under the root that leads out is judged by where it leads.
  ASSERT_EQ(::symlink("/etc", (root_ + "/etc-link").c_str()), 0);
  Status linked = CheckAllowedPath("--input", root_ + "/etc-link/shadow", roots);
  EXPECT_EQ(linked.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(linked.message().find("it resolves to /etc/shadow"), std::string::npos)
      << linked.message();
}

TEST_F(PathRulesTest, EveryPathOfAJobIsChecked) {
  const std::vector<std::string> roots = {root_};
  JobSpec spec;
  spec.input = "gen:events=1,keys=1,splits=1,seed=1";  // no file: not checked
  spec.output_dir = root_ + "/out";
  spec.checkpoint_dir = root_ + "/ckpt";
  spec.from_savepoint = root_ + "/sp";
  EXPECT_OK(CheckAllowedJobPaths(spec, roots));
  for (auto [flag, field] : std::vector<std::pair<std::string, std::string JobSpec::*>>{
           {"--input", &JobSpec::input},
           {"--output", &JobSpec::output_dir},
           {"--checkpoint-dir", &JobSpec::checkpoint_dir},
           {"--from-savepoint", &JobSpec::from_savepoint}}) {
    JobSpec bad = spec;
    bad.*field = "/var/elsewhere";
    Status s = CheckAllowedJobPaths(bad, roots);
    EXPECT_EQ(s.message().rfind(flag + " /var/elsewhere is outside", 0), 0u) << s.message();
  }
  // A held generator: the workers look for its hold file, which must be under a root too.
  JobSpec held = spec;
  held.input = "gen:events=1,keys=1,splits=1,seed=1,hold=" + root_ + "/go";
  EXPECT_OK(CheckAllowedJobPaths(held, roots));
  held.input = "gen:events=1,keys=1,splits=1,seed=1,hold=/var/elsewhere/go";
  Status s = CheckAllowedJobPaths(held, roots);
  EXPECT_EQ(s.message().rfind("--input gen:...,hold= /var/elsewhere/go is outside", 0), 0u)
      << s.message();
}

TEST_F(PathRulesTest, TheClientMayNotNameWhatItsUserCannotReadOrWrite) {
  const std::string secret = root_ + "/secret.jsonl";
  ASSERT_OK(WriteFileAtomically(secret, "{}\n"));  // 0600, owned by root
  const std::string open_file = root_ + "/open.jsonl";
  ASSERT_OK(WriteFileAtomically(open_file, "{}\n"));
  ASSERT_EQ(::chmod(open_file.c_str(), 0644), 0);
  ASSERT_OK(CreateDirectories(root_ + "/inputs"));
  ASSERT_EQ(::chmod((root_ + "/inputs").c_str(), 0755), 0);
  ASSERT_OK(WriteFileAtomically(root_ + "/inputs/a.jsonl", "{}\n"));  // 0600
  ASSERT_OK(CreateDirectories(root_ + "/private"));                   // 0700

  EXPECT_EQ(AsNobody([&] { return CheckUserMayRead("--input", secret); }),
            "--input " + secret +
                " cannot be read by you (Permission denied): the cluster reads only what the "
                "user who submits may read");
  EXPECT_EQ(AsNobody([&] { return CheckUserMayRead("--input", open_file); }), "");
  EXPECT_EQ(AsNobody([&] { return CheckUserMayRead("--input", root_ + "/inputs"); }),
            "--input " + root_ +
                "/inputs: its file a.jsonl cannot be read by you (Permission denied): the "
                "cluster reads only what the user who submits may read");
  EXPECT_EQ(AsNobody([&] {
              return CheckUserMayWriteDirectory("--output", root_ + "/private/out/deeper");
            }),
            "--output " + root_ + "/private/out/deeper cannot be written by you (" + root_ +
                "/private: Permission denied): the cluster writes only where the user who "
                "submits may write");
  EXPECT_NE(AsNobody([&] { return CheckUserMayWriteDirectory("--checkpoint-dir", root_); }), "");
  EXPECT_EQ(AsNobody([&] { return CheckUserMayWriteDirectory("--output", "/tmp/kf-out"); }), "");
  JobSpec spec;
  spec.input = open_file;
  spec.from_savepoint = root_ + "/private";
  EXPECT_EQ(AsNobody([&] {
              return CheckClientMayUsePaths(spec);
            }).rfind("--from-savepoint " + root_ + "/private cannot be read by you", 0),
            0u);
  EXPECT_EQ(CheckUserMayWriteDirectory("--output", secret + "/out").message(),
            "--output " + secret + "/out: " + secret + " exists and is not a directory");
}

class AllowedPathCoordinatorTest : public test::CoordinatorHarness {};

TEST_F(AllowedPathCoordinatorTest, ASubmissionOutsideTheRootsIsRefusedBeforeAnythingIsWritten) {
  TempDir outside{"outside"};
  allowed_paths_ = {*CanonicalPath(dir_.path())};
  Reset();
  Register("w0", 0);
  JobSpec spec = Spec(1, 0);
  spec.checkpoint_dir = outside.File("ckpt");
  spec.job_library.sha256 = std::string(64, 'a');
  spec.job_library.size_bytes = 3;
  coord_->OnMessage("cli", SubmitJob{spec, "abc"}, now_);
  auto reply = outbox_.Last<Reply>("cli");
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->ok);
  EXPECT_EQ(reply->message.rfind("job rejected: --checkpoint-dir " + outside.File("ckpt") +
                                     " is outside the paths this coordinator may use",
                                 0),
            0u)
      << reply->message;
  EXPECT_FALSE(PathExists(outside.File("ckpt")));  // no blob store, no job directory
  EXPECT_EQ(coord_->job(), nullptr);

  spec = Spec(1, 1000);
  spec.output_dir = dir_.File("out");
  Submit(spec);  // inside: accepted
  DeployAll({"w0"});
  coord_->OnMessage("cli", CheckpointRequest{true, outside.File("sp")}, now_);
  reply = outbox_.Last<Reply>("cli");
  EXPECT_FALSE(reply->ok);
  EXPECT_EQ(reply->message.rfind("--dir " + outside.File("sp") + " is outside", 0), 0u)
      << reply->message;
  coord_->OnMessage("cli", StopJob{outside.File("sp")}, now_);
  reply = outbox_.Last<Reply>("cli");
  EXPECT_FALSE(reply->ok);
  EXPECT_EQ(reply->message.rfind("--dir " + outside.File("sp") + " is outside", 0), 0u)
      << reply->message;
  EXPECT_FALSE(PathExists(outside.File("sp")));
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
}

// A savepoint's pending results are committed in the output directory it names: a crafted one
// must not make a worker rename files elsewhere.
TEST_F(AllowedPathCoordinatorTest, ASavepointWhoseOutputDirectoryIsOutsideTheRootsIsRefused) {
  allowed_paths_ = {*CanonicalPath(dir_.path())};
  Reset();
  Register("w0", 0);
  CheckpointStorage storage(dir_.path());
  const std::string sp = storage.SavepointDirectory("old-job", CheckpointId(3));
  ASSERT_OK(storage.PrepareCheckpointDirectory(sp));
  CheckpointMetadata m = ckpt_test::TestMetadata(8, 1, 3);
  m.savepoint = true;
  m.spec.output_dir = "/etc";
  for (const auto& s : m.subtasks) {
    ASSERT_TRUE(
        WriteFileAtomically(sp + "/" + s.keyed_state.path, std::string(s.keyed_state.size, 's'))
            .ok());
  }
  ASSERT_OK(storage.WriteMetadata(sp, m));
  JobSpec spec = Spec(1, 0);
  spec.from_savepoint = sp;
  coord_->OnMessage("cli", SubmitJob{spec}, now_);
  auto reply = outbox_.Last<Reply>("cli");
  EXPECT_FALSE(reply->ok);
  EXPECT_EQ(reply->message.rfind("job rejected: the output directory of the savepoint " + sp +
                                     " /etc is outside the paths this coordinator may use",
                                 0),
            0u)
      << reply->message;
  EXPECT_EQ(coord_->job(), nullptr);
}

}  // namespace
}  // namespace keyflow
