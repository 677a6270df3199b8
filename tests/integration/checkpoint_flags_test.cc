// `keyflow run --tolerable-checkpoint-failures`: bad values are refused before anything is
// submitted (exit 2, one sentence); --help documents the flag and its default.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/cluster.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

TEST(CheckpointFlagsTest, ANegativeTolerableCheckpointFailuresIsRefused) {
  // No coordinator runs at this port: the flag is refused before the CLI tries to submit.
  auto r = RunCommand({KeyflowBinary("keyflow"), "run", "--job", "count-window", "--input",
                       "gen:events=10,keys=2,splits=1,seed=1", "--coordinator", "tcp://127.0.0.1:1",
                       "--tolerable-checkpoint-failures", "-1"},
                      Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2) << r->err;
  EXPECT_THAT(r->err, HasSubstr("--tolerable-checkpoint-failures must be 0 or more, not -1"));
}

TEST(CheckpointFlagsTest, ANonNumericTolerableCheckpointFailuresIsRefused) {
  auto r = RunCommand({KeyflowBinary("keyflow"), "run", "--job", "count-window", "--input",
                       "gen:events=10,keys=2,splits=1,seed=1", "--coordinator", "tcp://127.0.0.1:1",
                       "--tolerable-checkpoint-failures", "many"},
                      Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2) << r->err;
  EXPECT_THAT(r->err, HasSubstr("tolerable-checkpoint-failures"));
}

TEST(CheckpointFlagsTest, HelpDocumentsTheDefault) {
  auto r = RunCommand({KeyflowBinary("keyflow"), "run", "--help"}, Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_THAT(r->out + r->err, HasSubstr("--tolerable-checkpoint-failures arg (=5)"));
}

}  // namespace
}  // namespace keyflow::test
