#include "state/snapshot/keyed_snapshot_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/hashing.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

// A stand-in participant: a list of strings per key group.
struct FakeParticipant {
  std::map<int32_t, std::vector<std::string>> data;
  SnapshotSection section(uint8_t id, std::string name) {
    SnapshotSection s;
    s.id = id;
    s.name = std::move(name);
    s.write = [this](KeyGroupId g, BinaryWriter& w) {
      auto it = data.find(g.value());
      size_t n = it == data.end() ? 0 : it->second.size();
      w.VarU64(n);
      for (size_t i = 0; i < n; ++i) w.Bytes(it->second[i]);
    };
    s.count = [this](KeyGroupId g) -> uint64_t {
      auto it = data.find(g.value());
      return it == data.end() ? 0 : it->second.size();
    };
    s.restore = [this](KeyGroupId g, BinaryReader& r) -> Status {
      uint64_t n = r.Count(1);
      for (uint64_t i = 0; i < n && r.ok(); ++i) data[g.value()].emplace_back(r.Bytes());
      return r.status("fake section");
    };
    return s;
  }
};

class KeyedSnapshotFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int g = 0; g < 16; ++g) {
      for (int i = 0; i < g % 4; ++i) {
        a_.data[g].push_back("a" + std::to_string(g) + "-" + std::to_string(i));
      }
      if (g % 3 == 0) b_.data[g].push_back("timer-" + std::to_string(g));
    }
    sa_ = a_.section(1, "keyed state");
    sb_ = b_.section(2, "timers");
    auto info =
        WriteKeyedSnapshot(16, KeyType::kString, KeyGroupRange::Of(0, 15), {&sa_, &sb_}, &bytes_);
    ASSERT_OK(info);
    info_ = *info;
  }

  FakeParticipant a_, b_;
  SnapshotSection sa_, sb_;
  std::string bytes_;
  KeyedSnapshotInfo info_;
};

TEST_F(KeyedSnapshotFormatTest, InfoDescribesEveryKeyGroupWithCounts) {
  EXPECT_EQ(info_.range, KeyGroupRange::Of(0, 15));
  ASSERT_EQ(info_.key_groups.size(), 16u);
  EXPECT_EQ(info_.entry(KeyGroupId(7)).counts, (std::vector<uint64_t>{3, 0}));
  EXPECT_EQ(info_.entry(KeyGroupId(9)).counts, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(info_.file_size, bytes_.size());
  StringSource src(bytes_, "mem");
  auto reader = KeyedSnapshotReader::Open(src);
  ASSERT_OK(reader);
  EXPECT_EQ(reader->info().index_checksum, info_.index_checksum);
  EXPECT_EQ(reader->info().section_names, (std::vector<std::string>{"keyed state", "timers"}));
  for (int g = 0; g < 16; ++g) {
    EXPECT_EQ(reader->info().entry(KeyGroupId(g)).offset, info_.entry(KeyGroupId(g)).offset);
  }
}

TEST_F(KeyedSnapshotFormatTest, RestoresOnlyTheTargetKeyGroupsReadingOnlyTheirBytes) {
  StringSource src(bytes_, "mem");
  auto reader = KeyedSnapshotReader::Open(src);
  ASSERT_OK(reader);
  FakeParticipant ra, rb;
  SnapshotSection a = ra.section(1, "keyed state"), b = rb.section(2, "timers");
  ASSERT_OK(reader->Restore(KeyGroupRange::Of(6, 9), {&a, &b}));
  EXPECT_EQ(ra.data.size(), 3u);  // 6, 7, 9 have entries (8 has 0)
  EXPECT_EQ(ra.data[7], a_.data[7]);
  EXPECT_EQ(rb.data[6], b_.data[6]);
  EXPECT_EQ(rb.data[9], b_.data[9]);
  EXPECT_EQ(rb.data.count(3), 0u);
  uint64_t expected = 0;
  for (int g = 6; g <= 9; ++g) expected += info_.entry(KeyGroupId(g)).length;
  EXPECT_EQ(reader->bytes_read(), expected);
}

TEST_F(KeyedSnapshotFormatTest, EveryTruncationIsDetected) {
  for (size_t len = 0; len < bytes_.size(); ++len) {
    StringSource src(bytes_.substr(0, len), "snap");
    auto reader = KeyedSnapshotReader::Open(src);
    if (!reader.ok()) {
      EXPECT_EQ(reader.status().code(), StatusCode::kCorruption) << len;
      continue;
    }
    FakeParticipant ra, rb;
    SnapshotSection a = ra.section(1, "s"), b = rb.section(2, "t");
    EXPECT_FALSE(reader->Restore(KeyGroupRange::Of(0, 15), {&a, &b}).ok()) << len;
  }
}

TEST_F(KeyedSnapshotFormatTest, EveryFlippedByteIsDetected) {
  for (size_t pos = 0; pos < bytes_.size(); ++pos) {
    std::string broken = bytes_;
    broken[pos] = static_cast<char>(broken[pos] ^ 0x5A);
    StringSource src(broken, "snap");
    auto reader = KeyedSnapshotReader::Open(src);
    if (!reader.ok()) {
      // Also a byte of the version field: the header checksum is verified before the version.
      EXPECT_EQ(reader.status().code(), StatusCode::kCorruption)
          << "byte " << pos << ": " << reader.status().ToString();
      continue;
    }
    FakeParticipant ra, rb;
    SnapshotSection a = ra.section(1, "s"), b = rb.section(2, "t");
    Status st = reader->Restore(KeyGroupRange::Of(0, 15), {&a, &b});
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << "byte " << pos << ": " << st.ToString();
  }
}

// checkpoint/README.md "Format versions": a flipped version byte fails the header checksum
// (Corruption: the job may fall back to an earlier checkpoint); an intact header of a version
// this build does not read is a version skew (FailedPrecondition: the job fails).
TEST_F(KeyedSnapshotFormatTest, AFlippedVersionByteIsCorruptionAndAnIntactNewerVersionIsASkew) {
  std::string flipped = bytes_;
  flipped[8] = static_cast<char>(flipped[8] ^ 0x04);  // version 3 -> 7
  StringSource flipped_src(flipped, "/c/subtask-0.kgs");
  EXPECT_EQ(KeyedSnapshotReader::Open(flipped_src).status(),
            Corruption("snapshot /c/subtask-0.kgs is corrupted or truncated: header checksum "
                       "mismatch"));

  // Version 4 as a newer writer would write it: the header's layout, its checksum over it.
  std::string newer = bytes_;
  const uint32_t version = 4;
  std::memcpy(newer.data() + 8, &version, 4);
  const size_t header_len = 8 + 4 + 4 + 1 + 4 + 4 + 1 + (2 + 11) + (2 + 6);  // two sections
  const uint64_t sum = Checksum64(newer.data(), header_len);
  std::memcpy(newer.data() + header_len, &sum, 8);
  StringSource newer_src(newer, "/c/subtask-0.kgs");
  EXPECT_EQ(KeyedSnapshotReader::Open(newer_src).status(),
            FailedPrecondition("snapshot /c/subtask-0.kgs was written in format version 4, which "
                               "this keyflow cannot read (it reads format versions 1 to 3); "
                               "restore it with a keyflow that reads format version 4, or from "
                               "an earlier checkpoint or savepoint"));
}

TEST_F(KeyedSnapshotFormatTest, CorruptionMessageNamesTheFileAndKeyGroup) {
  std::string broken = bytes_;
  const auto& e = info_.entry(KeyGroupId(5));
  broken[e.offset + e.length - 9] ^= 1;  // last payload byte of key group 5
  StringSource src(broken, "/ckpt/chk-3/subtask-0.kgs");
  auto reader = KeyedSnapshotReader::Open(src);
  ASSERT_OK(reader);
  FakeParticipant ra, rb;
  SnapshotSection a = ra.section(1, "s"), b = rb.section(2, "t");
  Status st = reader->Restore(KeyGroupRange::Of(0, 15), {&a, &b});
  EXPECT_EQ(
      st.message(),
      "snapshot /ckpt/chk-3/subtask-0.kgs is corrupted or truncated: checksum mismatch in key "
      "group 5");
}

TEST_F(KeyedSnapshotFormatTest, UnknownSectionIsRefused) {
  StringSource src(bytes_, "snap");
  auto reader = KeyedSnapshotReader::Open(src);
  ASSERT_OK(reader);
  FakeParticipant ra;
  SnapshotSection a = ra.section(1, "s");
  EXPECT_EQ(reader->Restore(KeyGroupRange::Of(0, 15), {&a}).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(KeyedSnapshotFormatTest, SameDataGivesSameBytesThroughAFile) {
  TempDir dir;
  std::string again;
  ASSERT_TRUE(
      WriteKeyedSnapshot(16, KeyType::kString, KeyGroupRange::Of(0, 15), {&sa_, &sb_}, &again)
          .ok());
  EXPECT_EQ(again, bytes_);
  ASSERT_OK(WriteFileAtomically(dir.File("s.kgs"), bytes_));
  auto file = OpenRandomAccessFile(dir.File("s.kgs"));
  ASSERT_OK(file);
  auto reader = KeyedSnapshotReader::Open(**file);
  ASSERT_OK(reader);
  EXPECT_EQ(reader->info().index_checksum, info_.index_checksum);
}

}  // namespace
}  // namespace keyflow

namespace keyflow {
namespace {

// Format 3: a file of a key-group-incremental checkpoint holds only the key groups appended.
TEST_F(KeyedSnapshotFormatTest, ASparseFileHoldsExactlyTheKeyGroupsWritten) {
  std::string bytes;
  KeyedSnapshotWriter w(16, KeyType::kString, KeyGroupRange::Of(0, 15), {&sa_, &sb_},
                        [&](std::string_view b) {
                          bytes.append(b);
                          return Status::Ok();
                        });
  ASSERT_OK(w.Begin());
  std::string block;
  for (int g : {3, 7, 12}) {
    block.clear();
    SerializeKeyGroupBlock(KeyGroupId(g), {&sa_, &sb_}, &block);
    ASSERT_TRUE(
        w.AppendKeyGroup(KeyGroupId(g), block, {sa_.count(KeyGroupId(g)), sb_.count(KeyGroupId(g))})
            .ok());
  }
  auto written = w.Finish();
  ASSERT_OK(written);
  EXPECT_EQ(written->file_checksum, Checksum64(bytes));
  EXPECT_FALSE(written->full());

  StringSource src(bytes, "sparse.kgs");
  auto reader = KeyedSnapshotReader::Open(src);
  ASSERT_OK(reader);
  EXPECT_EQ(reader->info().format_version, 3u);
  EXPECT_EQ(reader->info().range, KeyGroupRange::Of(0, 15));
  std::vector<int32_t> held;
  for (const KeyGroupEntry& e : reader->info().key_groups) held.push_back(e.key_group.value());
  EXPECT_EQ(held, (std::vector<int32_t>{3, 7, 12}));
  EXPECT_EQ(reader->info().find(KeyGroupId(7))->counts, (std::vector<uint64_t>{3, 0}));
  EXPECT_EQ(reader->info().find(KeyGroupId(8)), nullptr);

  FakeParticipant ra, rb;
  SnapshotSection a = ra.section(1, "keyed state"), b = rb.section(2, "timers");
  ASSERT_OK(reader->RestoreKeyGroup(KeyGroupId(7), {&a, &b}));
  ASSERT_OK(reader->RestoreKeyGroup(KeyGroupId(12), {&a, &b}));
  EXPECT_EQ(ra.data[7], a_.data[7]);
  EXPECT_EQ(rb.data[12], b_.data[12]);
  EXPECT_EQ(ra.data.count(3), 0u);  // not asked for
  Status absent = reader->RestoreKeyGroup(KeyGroupId(8), {&a, &b});
  EXPECT_EQ(absent.code(), StatusCode::kNotFound);
  EXPECT_NE(absent.message().find("sparse.kgs holds no block of key group 8"), std::string::npos)
      << absent.message();
}

TEST_F(KeyedSnapshotFormatTest, AFullFileOfFormatThreeListsEveryKeyGroupAndPinsItsChecksum) {
  EXPECT_TRUE(info_.full());
  EXPECT_EQ(info_.format_version, 3u);
  EXPECT_EQ(info_.file_checksum, Checksum64(bytes_));
  for (int g = 0; g < 16; ++g) EXPECT_EQ(info_.key_groups[g].key_group, KeyGroupId(g));
}

TEST_F(KeyedSnapshotFormatTest, ASparseIndexOutOfOrderIsCorruption) {
  // Swap the key group ids of the first two index entries (3 and 7 become 7 and 3) and fix
  // the index checksum: the reader still refuses the order.
  std::string bytes;
  KeyedSnapshotWriter w(16, KeyType::kString, KeyGroupRange::Of(0, 15), {&sa_},
                        [&](std::string_view b) {
                          bytes.append(b);
                          return Status::Ok();
                        });
  ASSERT_OK(w.Begin());
  std::string block;
  for (int g : {3, 7}) {
    block.clear();
    SerializeKeyGroupBlock(KeyGroupId(g), {&sa_}, &block);
    ASSERT_OK(w.AppendKeyGroup(KeyGroupId(g), block, {sa_.count(KeyGroupId(g))}));
  }
  auto info = w.Finish();
  ASSERT_OK(info);
  BinaryReader footer(std::string_view(bytes).substr(bytes.size() - kKeyedSnapshotFooterSize));
  uint64_t index_offset = footer.U64(), index_length = footer.U64();
  // entry := i32 g, u64 offset, u64 length, varint count (1 byte here) = 21 bytes, after the
  // 1-byte entry count.
  int32_t first = 7, second = 3;
  std::memcpy(&bytes[index_offset + 1], &first, 4);
  std::memcpy(&bytes[index_offset + 1 + 21], &second, 4);
  uint64_t sum = Checksum64(bytes.data() + index_offset, index_length - 8);
  std::memcpy(&bytes[index_offset + index_length - 8], &sum, 8);
  StringSource src(bytes, "swapped.kgs");
  auto reader = KeyedSnapshotReader::Open(src);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kCorruption);
  EXPECT_NE(reader.status().message().find("out of order"), std::string::npos)
      << reader.status().message();
}

}  // namespace
}  // namespace keyflow
