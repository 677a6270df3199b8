#include "common/file_system.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/testing/fault_injection_file_system.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

Status WriteFile(FileSystem& fs, const std::string& path, std::string_view data, bool sync) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                      fs.NewWritableFile(path, WriteMode::kTruncate));
  KF_RETURN_IF_ERROR(f->Append(data));
  if (sync) KF_RETURN_IF_ERROR(f->Sync());
  return f->Close();
}

TEST(PosixFileSystem, WritesReadsListsRenamesAndRemoves) {
  TempDir dir;
  FileSystem& fs = FileSystem::Default();
  ASSERT_OK(fs.CreateDirectories(dir.File("a/b"), 0750));
  EXPECT_TRUE(fs.IsDirectory(dir.File("a/b")));
  ASSERT_OK(WriteFile(fs, dir.File("a/x"), "hello", true));
  {
    auto f = fs.NewWritableFile(dir.File("a/x"), WriteMode::kAppend);
    ASSERT_OK(f);
    EXPECT_EQ((*f)->size(), 5u);
    ASSERT_OK((*f)->Append(" world"));
    EXPECT_EQ((*f)->size(), 11u);
  }
  auto exclusive = fs.NewWritableFile(dir.File("a/x"), WriteMode::kCreateNew);
  EXPECT_FALSE(exclusive.ok());
  EXPECT_EQ(exclusive.status().code(), StatusCode::kIoError);
  auto info = fs.Stat(dir.File("a/x"));
  ASSERT_OK(info);
  EXPECT_EQ(info->size, 11u);
  EXPECT_FALSE(info->is_directory);
  auto missing = fs.Stat(dir.File("nope"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto r = fs.NewRandomAccessFile(dir.File("a/x"));
  ASSERT_OK(r);
  std::string out;
  ASSERT_OK((*r)->ReadAt(6, 5, &out));
  EXPECT_EQ(out, "world");
  EXPECT_EQ((*r)->ReadAt(8, 5, &out).code(), StatusCode::kCorruption);
  ASSERT_OK(fs.Rename(dir.File("a/x"), dir.File("a/y")));
  ASSERT_OK(fs.SyncDirectory(dir.File("a")));
  EXPECT_EQ(*fs.ListDirectory(dir.File("a")), (std::vector<std::string>{"b", "y"}));
  ASSERT_OK(fs.WriteFileAtomically(dir.File("a/m"), "meta"));
  EXPECT_EQ(*fs.ReadFileToString(dir.File("a/m")), "meta");
  EXPECT_FALSE(fs.Exists(dir.File("a/m.tmp")));
  ASSERT_OK(fs.RemoveFile(dir.File("a/y")));
  ASSERT_OK(fs.RemoveFile(dir.File("a/y")));  // absent: OK
  ASSERT_OK(fs.RemoveAll(dir.File("a")));
  EXPECT_FALSE(fs.Exists(dir.File("a")));
}

TEST(PosixFileSystem, CreateDirectoriesRejectsAFileInTheWay) {
  TempDir dir;
  ASSERT_OK(WriteFile(FileSystem::Default(), dir.File("f"), "", false));
  Status s = FileSystem::Default().CreateDirectories(dir.File("f"), 0755);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'" + dir.File("f") + "' exists and is not a directory");
}

TEST(FaultInjectionFileSystem, CrashKeepsSyncedBytesAndDurableEntriesOnly) {
  TempDir dir;
  FaultInjectionFileSystem fs;
  // Synced, entry durable: survives, minus what was appended after the sync.
  {
    auto f = fs.NewWritableFile(dir.File("kept"), WriteMode::kTruncate);
    ASSERT_OK(f);
    ASSERT_OK((*f)->Append("synced"));
    ASSERT_OK((*f)->Sync());
    ASSERT_OK((*f)->Append(" lost"));
  }
  ASSERT_OK(WriteFile(fs, dir.File("renamed"), "r", true));
  ASSERT_OK(fs.SyncDirectory(dir.path()));
  // After the directory sync: a new file whose entry is never synced, and a rename of a
  // durable file that is not made durable.
  ASSERT_OK(WriteFile(fs, dir.File("new"), "n", true));
  ASSERT_OK(fs.Rename(dir.File("renamed"), dir.File("renamed.to")));
  auto open = fs.NewWritableFile(dir.File("open"), WriteMode::kTruncate);
  ASSERT_OK(open);

  ASSERT_OK(fs.SimulateCrash());
  EXPECT_EQ(*fs.ListDirectory(dir.path()), (std::vector<std::string>{"kept", "renamed"}));
  EXPECT_EQ(*fs.ReadFileToString(dir.File("kept")), "synced");
  EXPECT_EQ((*open)->Append("x").message(),
            "cannot use " + dir.File("open") + ": the file was open at a simulated crash");
}

TEST(FaultInjectionFileSystem, FullDiskWritesWhatFitsThenFailsWithEnospc) {
  TempDir dir;
  FaultInjectionFileSystem fs;
  fs.FailWritesAfter(4);
  auto f = fs.NewWritableFile(dir.File("f"), WriteMode::kTruncate);
  ASSERT_OK(f);
  ASSERT_OK((*f)->Append("ab"));
  Status s = (*f)->Append("cdef");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message(), "cannot write " + dir.File("f") + ": No space left on device");
  EXPECT_EQ((*f)->size(), 4u);
  EXPECT_FALSE((*f)->Append("g").ok());
  fs.ClearFaults();
  ASSERT_OK((*f)->Append("g"));
  ASSERT_OK((*f)->Close());
  EXPECT_EQ(*fs.ReadFileToString(dir.File("f")), "abcdg");
}

TEST(FaultInjectionFileSystem, FailsSyncsAndWritesOnAPathPatternAndCountsSyncs) {
  TempDir dir;
  FaultInjectionFileSystem fs;
  fs.FailSyncs("bad");
  fs.FailWritesTo("worse", EIO);
  EXPECT_EQ(WriteFile(fs, dir.File("bad-file"), "x", true).message(),
            "cannot sync " + dir.File("bad-file") + ": Input/output error");
  EXPECT_EQ(WriteFile(fs, dir.File("worse"), "x", false).message(),
            "cannot write " + dir.File("worse") + ": Input/output error");
  ASSERT_OK(WriteFile(fs, dir.File("good"), "x", true));
  ASSERT_OK(fs.SyncDirectory(dir.path()));
  EXPECT_EQ(fs.file_syncs(), 2);  // the failed one counts too
  EXPECT_EQ(fs.directory_syncs(), 1);
  EXPECT_EQ(fs.sync_threads().size(), 3u);
}

}  // namespace
}  // namespace keyflow
