// Log files rotate by size through spdlog's rotating sink (MakeLogger): FILE, FILE.1 ...
// FILE.<max_files>, the newest lines in FILE; a file that cannot be opened is a sentence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/file_io.h"
#include "common/logging/logging.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

TEST(LoggingRotationTest, KeepsMaxFilesPlusTheCurrentOneWithTheNewestLineInTheCurrent) {
  TempDir dir("logging-rotation");
  LoggingOptions o;
  o.process = "worker-7";
  o.file = dir.File("worker-7.log");
  o.max_size_bytes = 1024;
  o.max_files = 3;
  auto logger = MakeLogger(o);
  ASSERT_OK(logger);
  // Each line is ~90 bytes: 200 lines are ~18 KiB, far more than (3 + 1) x 1 KiB.
  for (int i = 0; i < 200; ++i) {
    (*logger)->info("record line {:04d} padding={}", i, std::string(40, 'p'));
  }
  (*logger)->flush();
  EXPECT_EQ(FilesIn(dir.path()), (std::set<std::string>{"worker-7.log", "worker-7.1.log",
                                                        "worker-7.2.log", "worker-7.3.log"}));
  for (const std::string& name : FilesIn(dir.path())) {
    EXPECT_LE(std::filesystem::file_size(dir.File(name)), 1024u) << name;
  }
  const std::string current = ReadAll(o.file);
  ASSERT_FALSE(current.empty());
  const std::string last = current.substr(current.rfind('\n', current.size() - 2) + 1);
  EXPECT_THAT(last, HasSubstr(" info worker-7 record line 0199 padding=")) << last;
  // The rotated files are older: FILE.1 ends with the line just before FILE's first line.
  const std::string first_current = current.substr(0, current.find('\n'));
  const std::string previous = ReadAll(dir.File("worker-7.1.log"));
  const std::string last_previous = previous.substr(previous.rfind('\n', previous.size() - 2) + 1);
  const int a = std::stoi(first_current.substr(first_current.find("line ") + 5, 4));
  const int b = std::stoi(last_previous.substr(last_previous.find("line ") + 5, 4));
  EXPECT_EQ(a, b + 1);
}

TEST(LoggingRotationTest, AppendsToAnExistingFileAndCreatesItsDirectory) {
  TempDir dir("logging-rotation");
  LoggingOptions o;
  o.process = "coordinator";
  o.file = dir.File("logs/sub/coordinator.log");
  for (int run = 0; run < 2; ++run) {
    auto logger = MakeLogger(o);
    ASSERT_OK(logger);
    (*logger)->info("run={}", run);
    (*logger)->flush();
  }
  const std::string text = ReadAll(o.file);
  EXPECT_THAT(text, HasSubstr(" info coordinator run=0\n"));
  EXPECT_THAT(text, HasSubstr(" info coordinator run=1\n"));
}

// A directory that cannot be created (a file is in the way: root could write anywhere else).
TEST(LoggingRotationTest, AnUnwritableDirectoryIsASentence) {
  TempDir dir("logging-rotation");
  ASSERT_OK(WriteFileAtomically(dir.File("not-a-dir"), "x"));
  LoggingOptions o;
  o.process = "coordinator";
  o.file = dir.File("not-a-dir/coordinator.log");
  auto logger = MakeLogger(o);
  ASSERT_FALSE(logger.ok());
  EXPECT_EQ(logger.status().code(), StatusCode::kIoError);
  EXPECT_THAT(logger.status().message(), StartsWith("cannot open log file " + o.file + " ("));
  EXPECT_THAT(logger.status().message(),
              HasSubstr("): give --log-file a file in a directory this user can write"));
}

TEST(LoggingRotationTest, ADirectoryAsTheFileIsASentence) {
  TempDir dir("logging-rotation");
  LoggingOptions o;
  o.process = "coordinator";
  o.file = dir.path();
  auto logger = MakeLogger(o);
  ASSERT_FALSE(logger.ok());
  EXPECT_THAT(logger.status().message(), StartsWith("cannot open log file " + dir.path()));
}

}  // namespace
}  // namespace keyflow
