// Regression test from the hardening pass (issue 6): KeyedSnapshotReader::Restore ignored bytes
// of a section that the participant's restore did not read. The block checksum covers them, so
// they are not damage but a writer/reader disagreement (say, a field a newer writer appends):
// restoring without them silently loses state. Now they are Corruption naming the section.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/file_io.h"
#include "state/snapshot/keyed_snapshot_format.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

// A participant that stores one u32 per key group; `extra` bytes are appended when writing.
SnapshotSection U32Section(std::string extra, std::vector<uint32_t>* restored) {
  SnapshotSection s;
  s.id = 1;
  s.name = "keyed state";
  s.write = [extra](KeyGroupId g, BinaryWriter& w) {
    w.U32(static_cast<uint32_t>(g.value()) * 10);
    w.Raw(extra.data(), extra.size());
  };
  s.count = [](KeyGroupId) -> uint64_t { return 1; };
  s.restore = [restored](KeyGroupId, BinaryReader& r) {
    restored->push_back(r.U32());
    return r.status("u32 section");
  };
  return s;
}

TEST(KeyedSnapshotFormatRegressionTest, RefusesSectionBytesTheRestoreDidNotRead) {
  std::vector<uint32_t> unused;
  SnapshotSection writer = U32Section("new-field", &unused);
  std::string bytes;
  ASSERT_OK(WriteKeyedSnapshot(8, KeyType::kString, KeyGroupRange::Of(2, 3), {&writer}, &bytes));

  std::vector<uint32_t> restored;
  SnapshotSection reader_section = U32Section("", &restored);
  StringSource source(bytes, "/ckpt/chk-4/subtask-0.kgs");
  Result<KeyedSnapshotReader> reader = KeyedSnapshotReader::Open(source);
  ASSERT_OK(reader);
  Status s = reader->Restore(KeyGroupRange::Of(0, 7), {&reader_section});
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("snapshot /ckpt/chk-4/subtask-0.kgs is corrupted"));
  EXPECT_THAT(s.message(),
              HasSubstr("9 bytes of the keyed state of key group 2 were not read by its restore"));
}

TEST(KeyedSnapshotFormatRegressionTest, RestoresSectionsThatReadExactlyTheirBytes) {
  std::vector<uint32_t> unused;
  SnapshotSection writer = U32Section("", &unused);
  std::string bytes;
  ASSERT_OK(WriteKeyedSnapshot(8, KeyType::kString, KeyGroupRange::Of(2, 3), {&writer}, &bytes));
  std::vector<uint32_t> restored;
  SnapshotSection reader_section = U32Section("", &restored);
  StringSource source(bytes, "mem");
  Result<KeyedSnapshotReader> reader = KeyedSnapshotReader::Open(source);
  ASSERT_OK(reader);
  ASSERT_OK(reader->Restore(KeyGroupRange::Of(0, 7), {&reader_section}));
  EXPECT_EQ(restored, (std::vector<uint32_t>{20, 30}));
}

}  // namespace
}  // namespace keyflow
