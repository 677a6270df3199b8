#include "checkpoint/shared_state_registry.h"

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

class SharedStateRegistryTest : public ::testing::Test {
 protected:
  SharedStateRegistryTest() { EXPECT_OK(CreateDirectories(dir_)); }
  SharedStateFile Write(const std::string& name, uint64_t size) {
    EXPECT_OK(WriteFileAtomically(dir_ + "/" + name, std::string(size, 'x')));
    return SharedStateFile{name, size, 0x100 + size};
  }
  bool Exists(const std::string& name) { return PathExists(dir_ + "/" + name); }

  TempDir tmp_{"shared-registry"};
  const std::string dir_ = tmp_.path() + "/job/shared";
  SharedStateRegistry registry_{dir_, FileSystem::Default()};
};

TEST_F(SharedStateRegistryTest, AFileIsDeletedOnlyWhenItsLastCheckpointIsUnregistered) {
  SharedStateFile a = Write("a.kgs", 10), b = Write("b.kgs", 20), c = Write("c.kgs", 30);
  std::vector<std::string> fresh;
  ASSERT_OK(registry_.Register(CheckpointId(1), {a, b}, &fresh));
  EXPECT_EQ(fresh, (std::vector<std::string>{"a.kgs", "b.kgs"}));
  fresh.clear();
  ASSERT_OK(registry_.Register(CheckpointId(2), {b, c, b}, &fresh));
  EXPECT_EQ(fresh, (std::vector<std::string>{"c.kgs"})) << "b was registered by checkpoint 1";
  EXPECT_EQ(registry_.ReferencesOf("b.kgs"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(registry_.size(), 3u);

  EXPECT_EQ(registry_.Unregister(CheckpointId(1)), 1u);
  EXPECT_FALSE(Exists("a.kgs"));
  EXPECT_TRUE(Exists("b.kgs")) << "checkpoint 2 still references it";
  EXPECT_TRUE(Exists("c.kgs"));
  EXPECT_EQ(registry_.Find("a.kgs"), nullptr);
  EXPECT_EQ(registry_.ReferencesOf("b.kgs"), (std::vector<int64_t>{2}));
  EXPECT_EQ(registry_.Unregister(CheckpointId(1)), 0u) << "twice: nothing more";

  EXPECT_EQ(registry_.Unregister(CheckpointId(2)), 2u);
  EXPECT_FALSE(Exists("b.kgs"));
  EXPECT_FALSE(Exists("c.kgs"));
  EXPECT_EQ(registry_.size(), 0u);
}

TEST_F(SharedStateRegistryTest, ANameWithAnotherSizeOrChecksumIsRefusedAndNothingIsRegistered) {
  SharedStateFile a = Write("a.kgs", 10);
  SharedStateFile b = Write("b.kgs", 20);
  ASSERT_OK(registry_.Register(CheckpointId(1), {a}));
  SharedStateFile other = a;
  other.checksum = 7;
  Status s = registry_.Register(CheckpointId(2), {b, other});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("its shared file a.kgs has 10 bytes and checksum 7, but the "
                             "registered file of that name has 10 bytes and checksum 266"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(registry_.Find("b.kgs"), nullptr);
  EXPECT_EQ(registry_.ReferencesOf("a.kgs"), (std::vector<int64_t>{1}));
  EXPECT_EQ(registry_.Unregister(CheckpointId(2)), 0u);
  EXPECT_TRUE(Exists("a.kgs"));
}

TEST_F(SharedStateRegistryTest, DeleteUnreferencedSweepsOnlyFilesNobodyHolds) {
  SharedStateFile a = Write("a.kgs", 10);
  Write("orphan-1.sst", 5);
  Write("orphan-2.kgs", 7);
  ASSERT_OK(CreateDirectories(dir_ + "/not-ours"));
  ASSERT_OK(registry_.Register(CheckpointId(4), {a}));
  auto swept = registry_.DeleteUnreferenced();
  ASSERT_OK(swept);
  EXPECT_EQ(swept->files, 2u);
  EXPECT_EQ(swept->bytes, 12u);
  EXPECT_TRUE(Exists("a.kgs"));
  EXPECT_FALSE(Exists("orphan-1.sst"));
  EXPECT_FALSE(Exists("orphan-2.kgs"));
  EXPECT_TRUE(Exists("not-ours")) << "directories are left alone";

  SharedStateRegistry none(tmp_.path() + "/no-such-dir", FileSystem::Default());
  auto nothing = none.DeleteUnreferenced();
  ASSERT_OK(nothing);
  EXPECT_EQ(nothing->files, 0u);
}

TEST_F(SharedStateRegistryTest, DeleteIfUnregisteredKeepsRegisteredFiles) {
  SharedStateFile a = Write("a.kgs", 10);
  Write("late.kgs", 3);
  ASSERT_OK(registry_.Register(CheckpointId(1), {a}));
  EXPECT_FALSE(registry_.DeleteIfUnregistered("a.kgs"));
  EXPECT_TRUE(Exists("a.kgs"));
  EXPECT_TRUE(registry_.DeleteIfUnregistered("late.kgs"));
  EXPECT_FALSE(Exists("late.kgs"));
  EXPECT_FALSE(registry_.DeleteIfUnregistered("never-written.kgs"));
}

}  // namespace
}  // namespace keyflow
