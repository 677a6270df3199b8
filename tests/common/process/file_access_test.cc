// FileAccess (common/process/file_access.h): the umask a binary sets at start, the modes what it
// creates without an explicit mode then gets, and the --group-readable flag.
#include "common/process/file_access.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/process/command_line.h"
#include "tests/testutil/file_modes.h"

namespace keyflow {
namespace {

TEST(FileAccessTest, PrivateAddsEverythingOfGroupAndOthersToTheInheritedUmask) {
  EXPECT_EQ(UmaskFor(FileAccess::kPrivate, 0), 0077u);
  EXPECT_EQ(UmaskFor(FileAccess::kPrivate, 0022), 0077u);
  EXPECT_EQ(UmaskFor(FileAccess::kPrivate, 0002), 0077u);
  EXPECT_EQ(UmaskFor(FileAccess::kPrivate, 0277), 0277u);  // stricter bits stay
}

TEST(FileAccessTest, GroupReadableLetsTheGroupReadButNeverWriteAndOthersNothing) {
  EXPECT_EQ(UmaskFor(FileAccess::kGroupReadable, 0), 0027u);
  EXPECT_EQ(UmaskFor(FileAccess::kGroupReadable, 0022), 0027u);
  EXPECT_EQ(UmaskFor(FileAccess::kGroupReadable, 0002), 0027u);
  EXPECT_EQ(UmaskFor(FileAccess::kGroupReadable, 0077), 0027u);  // asked for: the group reads
  EXPECT_EQ(DirectoryModeFor(FileAccess::kPrivate), 0700u);
  EXPECT_EQ(FileModeFor(FileAccess::kPrivate), 0600u);
  EXPECT_EQ(DirectoryModeFor(FileAccess::kGroupReadable), 0750u);
  EXPECT_EQ(FileModeFor(FileAccess::kGroupReadable), 0640u);
}

// What a process creates with open(0666) and mkdir(0777) — spdlog's log file, RocksDB's files,
// std::filesystem::create_directories — after ApplyFileAccess.
TEST(FileAccessTest, ApplyFileAccessSetsTheModesOfWhatTheProcessCreates) {
  char tmpl[] = "/tmp/keyflow-file-access-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const mode_t original = ::umask(0022);
  struct Case {
    FileAccess access;
    uint32_t file_mode;
    uint32_t dir_mode;
  };
  for (const Case& c :
       {Case{FileAccess::kPrivate, 0600, 0700}, Case{FileAccess::kGroupReadable, 0640, 0750}}) {
    ::umask(0022);
    ApplyFileAccess(c.access);
    EXPECT_EQ(ProcessFileAccess(), c.access);
    const std::string file = dir + "/f" + std::to_string(static_cast<int>(c.access));
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const std::string sub = dir + "/d" + std::to_string(static_cast<int>(c.access)) + "/e";
    std::filesystem::create_directories(sub);
    EXPECT_EQ(test::Mode(file), c.file_mode);
    EXPECT_EQ(test::Mode(sub), c.dir_mode);
  }
  ApplyFileAccess(FileAccess::kPrivate);
  ::umask(original);
  std::filesystem::remove_all(dir);
}

TEST(FileAccessTest, TheGroupReadableFlag) {
  for (bool given : {false, true}) {
    cli::po::options_description opts;
    bool group_readable = !given;
    cli::AddFileAccessFlag(opts, &group_readable);
    cli::po::variables_map vm;
    int code = -1;
    std::vector<std::string> args;
    if (given) args.push_back("--group-readable");
    ASSERT_TRUE(cli::ParseCommandLine("usage", opts, {}, args, &vm, &code));
    EXPECT_EQ(group_readable, given);
  }
}

}  // namespace
}  // namespace keyflow
