#include "coordinator/cli/key_group_commands.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/hashing.h"

namespace keyflow::cli {
namespace {

TEST(RangesCommand, PrintsInclusiveRangesPerSubtask) {
  std::istringstream in;
  std::ostringstream out;
  EXPECT_EQ(RunRangesCommand({"--max-parallelism", "128", "--parallelism", "3"}, in, out), 0);
  EXPECT_EQ(out.str(), "0 0 42\n1 43 85\n2 86 127\n");
}

TEST(RangesCommand, RejectsParallelismAboveMaxWithExitCode2) {
  std::istringstream in;
  std::ostringstream out;
  EXPECT_EQ(RunRangesCommand({"--max-parallelism", "4", "--parallelism", "5"}, in, out), 2);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(RunRangesCommand({"--max-parallelism", "4"}, in, out), 2);  // missing P
}

TEST(KeyGroupCommand, PrintsKeyGroupAndSubtask) {
  std::istringstream in;
  std::ostringstream out;
  EXPECT_EQ(RunKeyGroupCommand({"--max-parallelism", "128", "--parallelism", "3", "uid-0", "uid-1"},
                               in, out),
            0);
  EXPECT_EQ(out.str(), "uid-0\t32\t0\nuid-1\t121\t2\n");
}

TEST(KeyGroupCommand, ReadsKeysFromStdinAndDashWithoutParallelism) {
  std::istringstream in("0\n1\n-3\n");
  std::ostringstream out;
  EXPECT_EQ(RunKeyGroupCommand({"--max-parallelism", "128", "--key-type", "int"}, in, out), 0);
  // Integer.hashCode(-3) = -3.
  int32_t g = keyflow::FlinkMurmurHash(-3) % 128;
  EXPECT_EQ(out.str(), "0\t94\t-\n1\t86\t-\n-3\t" + std::to_string(g) + "\t-\n");
}

TEST(KeyGroupCommand, NegativeIntKeysOnTheCommandLineAreKeysNotOptions) {
  std::istringstream in;
  std::ostringstream out;
  EXPECT_EQ(RunKeyGroupCommand({"--key-type", "int", "-3", "4"}, in, out), 0);
  EXPECT_EQ(out.str(),
            "-3\t" + std::to_string(keyflow::FlinkMurmurHash(-3) % 128) + "\t-\n4\t7\t-\n");
}

TEST(KeyGroupCommand, BadKeysExitWith2AndGoodKeysAreStillPrinted) {
  std::istringstream in("5\nabc\n99999999999\n");
  std::ostringstream out;
  EXPECT_EQ(RunKeyGroupCommand({"--key-type", "int"}, in, out), 2);
  EXPECT_EQ(out.str(), "5\t126\t-\n");
}

TEST(KeyGroupCommand, RejectsParallelismAboveMaxAndUnknownKeyType) {
  std::istringstream in;
  std::ostringstream out;
  EXPECT_EQ(RunKeyGroupCommand({"--max-parallelism", "2", "--parallelism", "3", "a"}, in, out), 2);
  EXPECT_EQ(RunKeyGroupCommand({"--key-type", "float", "a"}, in, out), 2);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace keyflow::cli
