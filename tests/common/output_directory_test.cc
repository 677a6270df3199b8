#include "common/output_directory.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

class OutputDirectoryTest : public ::testing::Test {
 protected:
  void Touch(const std::string& name) { std::ofstream(dir_ + "/" + name) << "x\n"; }

  test::TestDir tmp_;
  const std::string dir_ = tmp_.path();
};

TEST_F(OutputDirectoryTest, AMissingOrEmptyDirectoryIsFresh) {
  EXPECT_OK(CheckOutputDirectoryIsFresh(dir_ + "/not-yet"));
  EXPECT_OK(CheckOutputDirectoryIsFresh(dir_));
}

TEST_F(OutputDirectoryTest, InProgressAndPendingFilesAreNotResults) {
  Touch(".part-j-0-1-0.inprogress");
  Touch("_part-j-0-1-0-3.pending");
  EXPECT_OK(CheckOutputDirectoryIsFresh(dir_));
}

TEST_F(OutputDirectoryTest, AResultFileIsNamed) {
  Touch("part-j-0-1-3.jsonl");
  Status s = CheckOutputDirectoryIsFresh(dir_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "output directory " + dir_ +
                             " already holds results (part-j-0-1-3.jsonl): use an empty "
                             "directory for a new job, or remove them");
}

}  // namespace
}  // namespace keyflow
