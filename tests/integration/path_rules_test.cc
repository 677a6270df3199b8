// Issue 13, end to end with the real binaries: the paths a client may use (coordinator/README.md
// "Paths a client may use") and the modes of what a job writes.
//   * keyflow-coordinator --allowed-path: bad values are usage errors; a job whose --output is
//     outside the roots is refused (exit 1, nothing written); one inside runs, and its output
//     directory is 0700 with 0600 part files (workers without --group-readable), its checkpoint
//     files 0600 in 0700 directories.
//   * keyflow run as an unprivileged user refuses (exit 2, nothing submitted) an --input that
//     user cannot read and an --output that user cannot write.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/file_io.h"
#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kAsNobody = {"setpriv", "--reuid=65534", "--regid=65534",
                                            "--clear-groups"};

uint32_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<uint32_t>(st.st_mode & 07777);
}

CommandResult RunTool(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv, Duration::Seconds(30));
  EXPECT_OK(r);
  return r.ok() ? *r : CommandResult{};
}

TEST(PathRulesTest, CoordinatorRefusesARelativeOrMissingAllowedPath) {
  CommandResult rel = RunTool({KeyflowBinary("keyflow-coordinator"), "--insecure", "--port", "0",
                               "--allowed-path", "data"});
  EXPECT_EQ(rel.exit_code, 2);
  EXPECT_THAT(rel.err, HasSubstr("keyflow: --allowed-path 'data' must be an absolute path of an "
                                 "existing directory\n"));
  CommandResult missing = RunTool({KeyflowBinary("keyflow-coordinator"), "--insecure", "--port",
                                   "0", "--allowed-path", "/nonexistent-keyflow-root"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("keyflow: --allowed-path /nonexistent-keyflow-root does not "
                                     "exist: create it first\n"));
  CommandResult help = RunTool({KeyflowBinary("keyflow-coordinator"), "--help"});
  EXPECT_THAT(help.out + help.err, HasSubstr("--allowed-path"));
  CommandResult run_help = RunTool({KeyflowBinary("keyflow"), "run", "--help"});
  EXPECT_THAT(run_help.out + run_help.err, HasSubstr("a coordinator started with --allowed-path"));
}

TEST(PathRulesTest, RunAsAnotherUserRefusesPathsThatUserCannotUse) {
  TestDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // searchable, like a home directory
  const std::string secret = dir.path() + "/secret.jsonl";
  ASSERT_OK(WriteFileAtomically(secret, "{\"uid\":\"a\",\"ts\":1}\n"));  // 0600, root's
  const std::vector<std::string> base = {
      KeyflowBinary("keyflow"), "run",           "--job",
      "count-window",           "--coordinator", "tcp://127.0.0.1:1"};
  std::vector<std::string> read = kAsNobody;
  for (const std::string& a : base) read.push_back(a);
  read.insert(read.end(), {"--input", secret});
  CommandResult r = RunTool(read);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "keyflow: --input " + secret +
                       " cannot be read by you (Permission denied): the cluster reads only what "
                       "the user who submits may read\n");

  ASSERT_OK(CreateDirectories(dir.path() + "/private"));  // 0700, root's
  std::vector<std::string> write = kAsNobody;
  for (const std::string& a : base) write.push_back(a);
  write.insert(write.end(), {"--input", "gen:events=10,keys=2,splits=1,seed=1", "--output",
                             dir.path() + "/private/out"});
  r = RunTool(write);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "keyflow: --output " + dir.path() + "/private/out cannot be written by you (" +
                       dir.path() +
                       "/private: Permission denied): the cluster writes only where the user "
                       "who submits may write\n");
  EXPECT_FALSE(PathExists(dir.path() + "/private/out"));
}

TEST(PathRulesTest, CoordinatorWithAllowedPathRefusesOutsidePathsAndTheJobWritesPrivateFiles) {
  TestDir dir;
  const std::string allowed = dir.path();  // logs, <allowed>/checkpoints, the output
  TestDir outside;
  ClusterOptions options;
  options.workers = 1;
  options.coordinator_args.insert(options.coordinator_args.end(), {"--allowed-path", allowed});
  auto cluster = Cluster::Start(dir.path(), options);
  ASSERT_OK(cluster);
  const std::vector<std::string> job = {"run",
                                        "--job",
                                        "count-window",
                                        "--param",
                                        "count=5",
                                        "--input",
                                        "gen:events=200,keys=4,splits=1,seed=3"};

  std::vector<std::string> refused = job;
  refused.insert(refused.end(), {"--output", outside.path() + "/out"});
  auto r = (*cluster)->Cli(refused);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1) << r->err;
  EXPECT_THAT(r->err, HasSubstr("job rejected: --output " + outside.path() +
                                "/out is outside the paths this coordinator may use "
                                "(--allowed-path "));
  EXPECT_FALSE(PathExists(outside.path() + "/out"));

  std::vector<std::string> accepted = job;
  accepted.insert(accepted.end(),
                  {"--output", allowed + "/out", "--checkpoint-interval", "50ms", "--wait"});
  r = (*cluster)->Cli(accepted, Duration::Seconds(60));
  ASSERT_OK(r);
  ASSERT_EQ(r->exit_code, 0) << r->err << (*cluster)->LogExcerpts();
  EXPECT_EQ(ModeOf(allowed + "/out"), 0700u);
  int part_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(allowed + "/out")) {
    EXPECT_EQ(ModeOf(e.path().string()), 0600u) << e.path();
    ++part_files;
  }
  EXPECT_GT(part_files, 0);
  int checked = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator((*cluster)->CheckpointDir())) {
    const uint32_t mode = ModeOf(e.path().string());
    EXPECT_EQ(mode, e.is_directory() ? 0700u : 0600u) << e.path();
    ++checked;
  }
  EXPECT_GT(checked, 2);  // the job directory, _job, checkpoints if any
}

}  // namespace
}  // namespace keyflow::test
