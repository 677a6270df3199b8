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

// Writes key groups 2-3 (M = 8) with U32Section(`extra`), then restores key groups 0-7 of those
// bytes, read as the file `file`, with U32Section("") into `restored`.
Status WriteThenRestore(const std::string& extra, const std::string& file,
                        std::vector<uint32_t>* restored) {
  std::vector<uint32_t> unused;
  SnapshotSection writer = U32Section(extra, &unused);
  std::string bytes;
  KF_RETURN_IF_ERROR(
      WriteKeyedSnapshot(8, KeyType::kString, KeyGroupRange::Of(2, 3), {&writer}, &bytes).status());
  SnapshotSection reader_section = U32Section("", restored);
  StringSource source(bytes, file);
  KF_ASSIGN_OR_RETURN(KeyedSnapshotReader reader, KeyedSnapshotReader::Open(source));
  return reader.Restore(KeyGroupRange::Of(0, 7), {&reader_section});
}

TEST(KeyedSnapshotFormatRegressionTest, RefusesSectionBytesTheRestoreDidNotRead) {
  std::vector<uint32_t> restored;
  Status s = WriteThenRestore("new-field", "/ckpt/chk-4/subtask-0.kgs", &restored);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("snapshot /ckpt/chk-4/subtask-0.kgs is corrupted"));
  EXPECT_THAT(s.message(),
              HasSubstr("9 bytes of the keyed state of key group 2 were not read by its restore"));
}

TEST(KeyedSnapshotFormatRegressionTest, RestoresSectionsThatReadExactlyTheirBytes) {
  std::vector<uint32_t> restored;
  ASSERT_OK(WriteThenRestore("", "mem", &restored));
  EXPECT_EQ(restored, (std::vector<uint32_t>{20, 30}));
}

}  // namespace
}  // namespace keyflow
