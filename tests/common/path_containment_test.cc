// ResolveInside / CheckRelativePath / CanonicalPath (common/file_io.h) and the modes the POSIX
// FileSystem creates files and directories with (issue 13).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/file_io.h"
#include "common/file_system.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

uint32_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return static_cast<uint32_t>(st.st_mode & 07777);
}

// Sets the umask for one scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t m) : old_(::umask(m)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST(CheckRelativePath, RefusesEmptyAbsoluteDotDotAndNul) {
  EXPECT_OK(CheckRelativePath("subtask-0.kgs", "x"));
  EXPECT_OK(CheckRelativePath("a/./b..c/..d", "x"));
  for (std::string bad :
       {std::string(""), std::string("/etc/passwd"), std::string("../x"), std::string("a/../../x"),
        std::string("a/.."), std::string(".."), std::string("a\0b", 3)}) {
    Status s = CheckRelativePath(bad, "the state file");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("the state file path"), std::string::npos) << s.message();
  }
  EXPECT_EQ(CheckRelativePath("a/../../x", "f").message(),
            "f path 'a/../../x' has a '..' component; it must stay inside its directory");
}

TEST(ResolveInside, JoinsARelativePathInsideTheBase) {
  TempDir dir;
  auto p = ResolveInside(dir.path(), "./chk-1//subtask-0.kgs", "f");
  ASSERT_OK(p);
  EXPECT_EQ(*p, dir.path() + "/chk-1/subtask-0.kgs");
  // A base that does not exist yet: nothing can lead out of it, the lexical check decides.
  EXPECT_EQ(*ResolveInside(dir.File("none"), "a", "f"), dir.File("none") + "/a");
  EXPECT_FALSE(ResolveInside(dir.File("none"), "../a", "f").ok());
}

TEST(ResolveInside, RefusesASymbolicLinkThatLeadsOut) {
  TempDir outside;
  TempDir dir;
  ASSERT_OK(WriteFileAtomically(outside.File("secret"), "root only"));
  ASSERT_EQ(::symlink(outside.File("secret").c_str(), dir.File("subtask-0.kgs").c_str()), 0);
  ASSERT_EQ(::symlink(outside.path().c_str(), dir.File("up").c_str()), 0);
  ASSERT_EQ(::symlink(outside.File("missing").c_str(), dir.File("dangling").c_str()), 0);
  for (const char* rel : {"subtask-0.kgs", "up/secret", "up/new-file", "dangling"}) {
    auto p = ResolveInside(dir.path(), rel, "the state file");
    ASSERT_FALSE(p.ok()) << rel;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("leads outside " + dir.path()), std::string::npos)
        << p.status().message();
  }
  // A link that stays inside is fine.
  ASSERT_OK(CreateDirectories(dir.File("real")));
  ASSERT_EQ(::symlink("real", dir.File("alias").c_str()), 0);
  EXPECT_OK(ResolveInside(dir.path(), "alias/x", "f"));
}

TEST(CanonicalPath, ResolvesTheExistingPrefixAndKeepsTheRest) {
  TempDir dir;
  ASSERT_OK(CreateDirectories(dir.File("real")));
  ASSERT_EQ(::symlink(dir.File("real").c_str(), dir.File("link").c_str()), 0);
  auto real_dir = CanonicalPath(dir.path());
  ASSERT_OK(real_dir);
  EXPECT_EQ(*CanonicalPath(dir.File("link/a/../b/c")), *real_dir + "/real/b/c");
  EXPECT_TRUE(IsPathUnder(*real_dir + "/real/b", *real_dir + "/real"));
  EXPECT_TRUE(IsPathUnder(*real_dir + "/real", *real_dir + "/real/"));
  EXPECT_FALSE(IsPathUnder(*real_dir + "/realx", *real_dir + "/real"));
  EXPECT_TRUE(IsPathUnder("/anything", "/"));
}

TEST(PosixFileSystemModes, NewFilesArePrivateWhateverTheUmask) {
  TempDir dir;
  FileSystem& fs = FileSystem::Default();
  for (mode_t umask : {mode_t{0}, mode_t{022}, mode_t{077}}) {
    ScopedUmask u(umask);
    const std::string f = dir.File("f" + std::to_string(umask));
    {
      auto w = fs.NewWritableFile(f, WriteMode::kCreateNew);
      ASSERT_OK(w);
    }
    EXPECT_EQ(ModeOf(f), 0600u) << "umask " << umask;
    ASSERT_OK(fs.WriteFileAtomically(f + ".meta", "x"));
    EXPECT_EQ(ModeOf(f + ".meta"), 0600u);
    const std::string d = dir.File("d" + std::to_string(umask));
    ASSERT_OK(fs.CreateDirectories(d + "/a/b"));
    EXPECT_EQ(ModeOf(d), 0700u);
    EXPECT_EQ(ModeOf(d + "/a/b"), 0700u);
    ASSERT_OK(fs.CreateDirectories(d + "/out", 0750));
    EXPECT_EQ(ModeOf(d + "/out"), 0750u) << "umask " << umask;
    ASSERT_OK(fs.SetPermissions(f, 0640));
    EXPECT_EQ(ModeOf(f), 0640u);
  }
}

TEST(PosixFileSystemModes, ExistingFilesAndDirectoriesKeepTheirMode) {
  TempDir dir;
  FileSystem& fs = FileSystem::Default();
  ASSERT_OK(fs.CreateDirectories(dir.File("shared"), 0755));
  ASSERT_EQ(::chmod(dir.File("shared").c_str(), 0755), 0);
  ASSERT_OK(fs.CreateDirectories(dir.File("shared/sub")));
  EXPECT_EQ(ModeOf(dir.File("shared")), 0755u);  // not narrowed: it was the user's
  EXPECT_EQ(ModeOf(dir.File("shared/sub")), 0700u);
  ASSERT_OK(WriteFileAtomically(dir.File("kept"), "a"));
  ASSERT_EQ(::chmod(dir.File("kept").c_str(), 0644), 0);
  {
    auto w = fs.NewWritableFile(dir.File("kept"), WriteMode::kAppend);
    ASSERT_OK(w);
  }
  EXPECT_EQ(ModeOf(dir.File("kept")), 0644u);
  EXPECT_EQ(fs.SetPermissions(dir.File("absent"), 0600).code(), StatusCode::kIoError);
}

// In a setgid directory (scripts/start-cluster.sh --group) a new directory keeps the setgid bit
// it inherits, whatever mode it is given, so what is created below it keeps the group.
TEST(PosixFileSystemModes, CreateDirectoriesKeepsTheSetgidBitANewDirectoryInherits) {
  TempDir dir;
  FileSystem& fs = FileSystem::Default();
  const std::string run = dir.File("run");
  ASSERT_EQ(::mkdir(run.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(run.c_str(), 02750), 0);
  ASSERT_OK(fs.CreateDirectories(run + "/a/b", 0700));
  ASSERT_OK(fs.CreateDirectories(run + "/out", 0750));
  EXPECT_EQ(ModeOf(run + "/a"), 02700u);
  EXPECT_EQ(ModeOf(run + "/a/b"), 02700u);
  EXPECT_EQ(ModeOf(run + "/out"), 02750u);
  // Outside a setgid directory nothing changes.
  ASSERT_OK(fs.CreateDirectories(dir.File("plain"), 0750));
  EXPECT_EQ(ModeOf(dir.File("plain")), 0750u);
}

}  // namespace
}  // namespace keyflow
