#include "worker/sources/file_split_reader.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

using test_util::TempDir;

constexpr int32_t kMaxParallelism = 128;

struct Read {
  std::string key;
  int64_t ts;
  SplitPosition after;
  friend bool operator==(const Read&, const Read&) = default;
};

std::ostream& operator<<(std::ostream& os, const Read& r) {
  return os << "{" << r.key << ", " << r.ts << ", " << r.after.ToString() << "}";
}

// Reads until the end of the split (or at most `limit` records).
std::vector<Read> ReadAll(FileSplitReader& reader, size_t limit = SIZE_MAX) {
  std::vector<Read> out;
  Record r;
  while (out.size() < limit) {
    Result<SplitReadResult> res = reader.Next(&r);
    EXPECT_OK(res);
    if (!res.ok() || *res == SplitReadResult::kEndOfSplit) break;
    out.push_back({std::string(r.key.bytes()), r.timestamp.millis(), reader.position()});
  }
  return out;
}

std::string Line(int i) {
  return R"({"uid":"user-)" + std::to_string(i % 7) + R"(","ts":)" + std::to_string(1000 + i) +
         R"(,"seq":)" + std::to_string(i) + "}";
}

class FileSplitReaderTest : public ::testing::Test {
 protected:
  JsonRecordParser parser_{JsonRecordFormat{}, kMaxParallelism};
  TempDir dir_;

  FileSplitReader Open(const std::string& path, SplitPosition from = SplitPosition(),
                       FileSplitReaderOptions options = {}) {
    Result<FileSplitReader> r =
        FileSplitReader::Open(SourceSplit::File(SplitId(0), path), from, &parser_, options);
    EXPECT_OK(r);
    return std::move(r).value();
  }
};

TEST_F(FileSplitReaderTest, YieldsEveryRecordWithThePositionAfterItsLine) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + Line(1) + "\n" + Line(2) + "\n");
  FileSplitReader reader = Open(path);
  std::vector<Read> got = ReadAll(reader);
  int64_t l0 = static_cast<int64_t>(Line(0).size()) + 1;
  int64_t l1 = static_cast<int64_t>(Line(1).size()) + 1;
  int64_t l2 = static_cast<int64_t>(Line(2).size()) + 1;
  std::vector<Read> expected = {
      {"user-0", 1000, SplitPosition::InFile(l0, 2)},
      {"user-1", 1001, SplitPosition::InFile(l0 + l1, 3)},
      {"user-2", 1002, SplitPosition::InFile(l0 + l1 + l2, 4)},
  };
  EXPECT_EQ(got, expected);
  Record r;
  EXPECT_EQ(*reader.Next(&r), SplitReadResult::kEndOfSplit);  // stays at the end
  EXPECT_EQ(reader.position(), SplitPosition::InFile(l0 + l1 + l2, 4));
  EXPECT_EQ(reader.records_read(), 3);
  EXPECT_EQ(reader.bad_records(), 0);
}

TEST_F(FileSplitReaderTest, ResumingFromAnyPositionYieldsExactlyTheRest) {
  std::string content;
  for (int i = 0; i < 200; ++i) content += Line(i) + "\n";
  std::string path = dir_.Write("in.jsonl", content);
  // Tiny buffers force many refills and lines straddling buffer boundaries.
  for (size_t buffer : {size_t{7}, size_t{64}, size_t{1000}, size_t{1} << 20}) {
    FileSplitReaderOptions options;
    options.read_buffer_bytes = buffer;
    FileSplitReader full = Open(path, SplitPosition(), options);
    std::vector<Read> all = ReadAll(full);
    ASSERT_EQ(all.size(), 200u);
    for (size_t half : {size_t{1}, size_t{99}, size_t{100}, size_t{199}}) {
      FileSplitReader first = Open(path, SplitPosition(), options);
      std::vector<Read> head = ReadAll(first, half);
      ASSERT_EQ(head.size(), half);
      FileSplitReader second = Open(path, first.position(), options);
      std::vector<Read> tail = ReadAll(second);
      std::vector<Read> expected(all.begin() + static_cast<ptrdiff_t>(half), all.end());
      EXPECT_EQ(tail, expected) << "buffer " << buffer << ", resumed after " << half;
    }
  }
}

TEST_F(FileSplitReaderTest, HandlesCrlfEmptyLinesAndALastLineWithoutNewline) {
  std::string content = "\r\n" + Line(0) + "\r\n\n   \t\n\r\n" + Line(1) + "\n\n" + Line(2);
  std::string path = dir_.Write("in.jsonl", content);
  FileSplitReader reader = Open(path);
  std::vector<Read> got = ReadAll(reader);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].key, "user-0");
  EXPECT_EQ(got[0].after, SplitPosition::InFile(2 + static_cast<int64_t>(Line(0).size()) + 2, 3));
  EXPECT_EQ(got[1].key, "user-1");
  EXPECT_EQ(got[2].key, "user-2");
  EXPECT_EQ(got[2].after, SplitPosition::InFile(static_cast<int64_t>(content.size()), 9));
  EXPECT_EQ(reader.bad_records(), 0);
}

TEST_F(FileSplitReaderTest, EmptyFileAndBlankFileHaveNoRecords) {
  FileSplitReader empty = Open(dir_.Write("empty.jsonl", ""));
  EXPECT_TRUE(ReadAll(empty).empty());
  EXPECT_EQ(empty.position(), SplitPosition());
  FileSplitReader blank = Open(dir_.Write("blank.jsonl", "\n\r\n  \n"));
  EXPECT_TRUE(ReadAll(blank).empty());
  EXPECT_EQ(blank.position(), SplitPosition::InFile(6, 4));
}

TEST_F(FileSplitReaderTest, IgnoresAByteOrderMarkAtTheStart) {
  FileSplitReader reader = Open(dir_.Write("bom.jsonl", "\xEF\xBB\xBF" + Line(3) + "\n"));
  std::vector<Read> got = ReadAll(reader);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "user-3");
  EXPECT_EQ(reader.bad_records(), 0);
}

TEST_F(FileSplitReaderTest, VeryLongLinesGrowTheBuffer) {
  std::string big(3 << 20, 'x');
  std::string long_line = R"({"uid":"long","ts":5,"blob":")" + big + R"("})";
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + long_line + "\n" + Line(1) + "\n");
  FileSplitReaderOptions options;
  options.read_buffer_bytes = 4096;
  FileSplitReader reader = Open(path, SplitPosition(), options);
  std::vector<Read> got = ReadAll(reader);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].key, "long");
  EXPECT_EQ(got[2].key, "user-1");
}

TEST_F(FileSplitReaderTest, BadRecordsAreSkippedCountedAndReportedWithFileAndLine) {
  std::string content = Line(0) + "\n" +             // line 1
                        R"({"ts":1})" + "\n" +       // line 2: no key
                        "\n" +                       // line 3: empty, not an error
                        R"({"uid":"a","ts":1.5})" +  // line 4: fractional ts
                        "\r\n" + "not json\n" +      // line 5
                        Line(1) + "\n" +             // line 6
                        R"({"uid":"a","ts":1])";     // line 7: broken, no newline
                                                     // (a truncated one: FileChangeTest)
  std::string path = dir_.Write("bad.jsonl", content);
  std::vector<std::string> reports;
  std::vector<int64_t> offsets;
  FileSplitReaderOptions options;
  options.bad_record_callback = [&](const BadRecord& bad) {
    reports.push_back(bad.ToString());
    offsets.push_back(bad.byte_offset);
  };
  FileSplitReader reader = Open(path, SplitPosition(), options);
  std::vector<Read> got = ReadAll(reader);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].key, "user-0");
  EXPECT_EQ(got[1].key, "user-1");
  ASSERT_EQ(reports.size(), 4u);
  EXPECT_EQ(reports[0], path + ":2: missing field 'uid'");
  EXPECT_EQ(reports[1], path + ":4: field 'ts' is not an integer (epoch milliseconds)");
  EXPECT_EQ(reports[2], path + ":5: line is not a JSON object");
  EXPECT_EQ(reports[3].rfind(path + ":7: invalid JSON: ", 0), 0u) << reports[3];
  EXPECT_EQ(offsets[0], static_cast<int64_t>(Line(0).size()) + 1);
  EXPECT_EQ(reader.bad_records(), 4);
  EXPECT_EQ(reader.records_read(), 2);
  EXPECT_EQ(reader.position(), SplitPosition::InFile(static_cast<int64_t>(content.size()), 8));
}

TEST_F(FileSplitReaderTest, FailPolicyStopsAtTheFirstBadLineWithFileAndLine) {
  std::string content = Line(0) + "\n" + Line(1) + "\n" + R"({"uid":"x"})" + "\n" + Line(2) + "\n";
  std::string path = dir_.Write("bad.jsonl", content);
  FileSplitReaderOptions options;
  options.on_bad_record = BadRecordPolicy::kFail;
  FileSplitReader reader = Open(path, SplitPosition(), options);
  Record r;
  ASSERT_EQ(*reader.Next(&r), SplitReadResult::kRecord);
  ASSERT_EQ(*reader.Next(&r), SplitReadResult::kRecord);
  SplitPosition before = reader.position();
  Result<SplitReadResult> res = reader.Next(&r);
  EXPECT_EQ(res.status(), InvalidArgument(path + ":3: missing field 'ts' (--on-bad-record skip "
                                                 "would skip the line)"));
  EXPECT_EQ(reader.position(), before);  // the bad line is not consumed
  EXPECT_EQ(reader.bad_records(), 0);
}

TEST_F(FileSplitReaderTest, LineNumbersContinueAfterResumingFromAPosition) {
  std::string content = Line(0) + "\n" + Line(1) + "\n" + "oops\n" + Line(2) + "\n";
  std::string path = dir_.Write("in.jsonl", content);
  FileSplitReader first = Open(path);
  ASSERT_EQ(ReadAll(first, 2).size(), 2u);
  std::vector<std::string> reports;
  FileSplitReaderOptions options;
  options.bad_record_callback = [&](const BadRecord& bad) {
    reports.push_back(path + ":" + std::to_string(bad.line_number));
  };
  FileSplitReader second = Open(path, first.position(), options);
  std::vector<Read> rest = ReadAll(second);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].key, "user-2");
  EXPECT_EQ(reports, std::vector<std::string>{path + ":3"});
}

TEST_F(FileSplitReaderTest, OverlongLinesAreBadRecordsAndReadingGoesOn) {
  std::string long_line = R"({"uid":"long","ts":5,"blob":")" + std::string(5000, 'x') + R"("})";
  std::string content = Line(0) + "\n" + long_line + "\n" + Line(1) + "\n" + long_line;
  std::string path = dir_.Write("in.jsonl", content);
  for (size_t buffer : {size_t{16}, size_t{100}, size_t{1} << 20}) {
    std::vector<std::string> reports;
    FileSplitReaderOptions options;
    options.read_buffer_bytes = buffer;
    options.max_line_bytes = 1000;
    options.bad_record_callback = [&](const BadRecord& bad) { reports.push_back(bad.ToString()); };
    FileSplitReader reader = Open(path, SplitPosition(), options);
    std::vector<Read> got = ReadAll(reader);
    ASSERT_EQ(got.size(), 2u) << "buffer " << buffer;
    EXPECT_EQ(got[0].key, "user-0");
    EXPECT_EQ(got[1].key, "user-1");
    EXPECT_EQ(got[1].after,
              SplitPosition::InFile(static_cast<int64_t>(content.size() - long_line.size()), 4));
    std::vector<std::string> expected = {path + ":2: line is longer than the limit of 1000 bytes",
                                         path + ":4: line is longer than the limit of 1000 bytes"};
    EXPECT_EQ(reports, expected) << "buffer " << buffer;
    EXPECT_EQ(reader.position(), SplitPosition::InFile(static_cast<int64_t>(content.size()), 5));
  }
}

TEST_F(FileSplitReaderTest, ALineOfExactlyTheLimitIsAccepted) {
  std::string line = R"({"uid":"a","ts":1,"p":")";
  line += std::string(100 - line.size() - 2, 'x') + R"("})";
  ASSERT_EQ(line.size(), 100u);
  FileSplitReaderOptions options;
  options.read_buffer_bytes = 8;
  options.max_line_bytes = 100;
  FileSplitReader reader = Open(dir_.Write("in.jsonl", line + "\n"), SplitPosition(), options);
  EXPECT_EQ(ReadAll(reader).size(), 1u);
  EXPECT_EQ(reader.bad_records(), 0);
}

TEST_F(FileSplitReaderTest, ResumingBeyondTheEndOfTheFileIsAnError) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n");
  Result<FileSplitReader> r = FileSplitReader::Open(SourceSplit::File(SplitId(0), path),
                                                    SplitPosition::InFile(1000, 3), &parser_);
  EXPECT_EQ(r.status(), DataLoss("cannot resume input file '" + path +
                                 "' at byte offset 1000: the file has only " +
                                 std::to_string(Line(0).size() + 1) +
                                 " bytes; it was truncated or replaced since the "
                                 "checkpoint"));
}

TEST_F(FileSplitReaderTest, MissingFileIsANonRecoverableError) {
  std::string path = dir_.File("gone.jsonl");
  Result<FileSplitReader> r =
      FileSplitReader::Open(SourceSplit::File(SplitId(0), path), SplitPosition(), &parser_);
  EXPECT_EQ(r.status(),
            DataLoss("input file " + path + " does not exist (deleted after the job started?)"));
}

TEST_F(FileSplitReaderTest, FileUnderAPathThatIsNoDirectoryIsNonRecoverable) {
  std::string file = dir_.Write("plain", Line(0) + "\n");
  Result<FileSplitReader> r =
      FileSplitReader::Open(SourceSplit::File(SplitId(0), file + "/x"), SplitPosition(), &parser_);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
}

TEST(InputFileErrorTest, TransientErrorsAreRetriedPermanentOnesAreNot) {
  for (int err : {ENOENT, ENOTDIR, EACCES, EPERM, EISDIR, ELOOP, ENAMETOOLONG}) {
    EXPECT_TRUE(IsPermanentInputErrno(err)) << err;
    EXPECT_EQ(InputFileError("/in/a", err).code(), StatusCode::kDataLoss) << err;
  }
  for (int err : {EIO, EMFILE, ENFILE, ENOMEM, EINTR, ESTALE}) {
    EXPECT_FALSE(IsPermanentInputErrno(err)) << err;
    EXPECT_EQ(InputFileError("/in/a", err).code(), StatusCode::kIoError) << err;
  }
  EXPECT_EQ(InputFileError("/in/a", EACCES),
            DataLoss("input file /in/a cannot be read: Permission denied"));
}

// Liveness 5: the file as it was at Open, the change reported, half-written lines not records.
class FileChangeTest : public FileSplitReaderTest {
 protected:
  FileSplitReaderOptions Options(size_t buffer = 1 << 20) {
    FileSplitReaderOptions o;
    o.read_buffer_bytes = buffer;
    o.bad_record_callback = [this](const BadRecord& b) { bad_.push_back(b.ToString()); };
    o.input_change_callback = [this](const InputChange& c) { changes_.push_back(c.ToString()); };
    return o;
  }
  static void Append(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::app) << bytes;
  }
  std::string Change(const std::string& path, const std::string& what, size_t bytes) {
    return "input file " + path + " " + what + " while it was read: " + std::to_string(bytes) +
           " bytes not read (the split reads the file as it was when it was opened)";
  }
  std::vector<std::string> bad_, changes_;
};

TEST_F(FileChangeTest, GrowthDuringTheReadIsReportedAndNotRead) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + Line(1) + "\n");
  FileSplitReader reader = Open(path, SplitPosition(), Options());
  Append(path, Line(2) + "\n" + "{\"uid\":\"half");
  EXPECT_EQ(ReadAll(reader).size(), 2u);
  EXPECT_EQ(changes_, std::vector<std::string>{Change(path, "grew", Line(2).size() + 1 + 12)});
  EXPECT_TRUE(bad_.empty());
  EXPECT_EQ(reader.position().byte_offset(),
            static_cast<int64_t>(Line(0).size() + Line(1).size() + 2));
}

TEST_F(FileChangeTest, HalfWrittenLastLineOfAGrowingFileIsNotAMalformedRecord) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + "{\"uid\":\"us");
  FileSplitReader reader = Open(path, SplitPosition(), Options(8));
  Append(path, "er-1\",\"ts\":5}\n");
  EXPECT_EQ(ReadAll(reader).size(), 1u);
  EXPECT_TRUE(bad_.empty()) << bad_[0];
  EXPECT_EQ(changes_, std::vector<std::string>{Change(path, "grew", 10 + 14)});
  EXPECT_EQ(reader.position(), SplitPosition::InFile(Line(0).size() + 1, 2));
  // A restore from that position reads the line once it is complete.
  FileSplitReader again = Open(path, reader.position());
  EXPECT_EQ(ReadAll(again).size(), 1u);
}

TEST_F(FileChangeTest, UnchangedFileKeepsItsLastLineWithoutNewline) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + Line(1));
  FileSplitReader reader = Open(path, SplitPosition(), Options(8));
  EXPECT_EQ(ReadAll(reader).size(), 2u);
  EXPECT_TRUE(changes_.empty());
}

TEST_F(FileChangeTest, ReplacementByRenameIsReportedAndTheOpenedFileIsReadToItsEnd) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + Line(1) + "\n");
  FileSplitReader reader = Open(path, SplitPosition(), Options());
  std::string next = dir_.Write("next.tmp", Line(5) + "\n");
  ASSERT_EQ(std::rename(next.c_str(), path.c_str()), 0);
  std::vector<Read> got = ReadAll(reader);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].key, "user-1");
  EXPECT_EQ(changes_, std::vector<std::string>{Change(path, "was replaced", Line(5).size() + 1)});
}

TEST_F(FileChangeTest, TruncationDuringTheReadIsReported) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + Line(1) + "\n" + Line(2) + "\n");
  const size_t size = Line(0).size() + Line(1).size() + Line(2).size() + 3;
  FileSplitReader reader = Open(path, SplitPosition(), Options(Line(0).size() + 1));
  ASSERT_EQ(ReadAll(reader, 1).size(), 1u);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(Line(0).size() + 1 + 5)), 0);
  EXPECT_TRUE(ReadAll(reader).empty());
  EXPECT_TRUE(bad_.empty());
  EXPECT_EQ(changes_,
            std::vector<std::string>{Change(path, "was truncated", size - Line(0).size() - 1)});
}

TEST_F(FileChangeTest, FailPolicyEndsTheSplitWithAnError) {
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n");
  FileSplitReaderOptions options = Options();
  options.on_input_change = InputChangePolicy::kFail;
  FileSplitReader reader = Open(path, SplitPosition(), options);
  Append(path, Line(1) + "\n");
  Record r;
  EXPECT_EQ(*reader.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(reader.Next(&r).status(),
            DataLoss(Change(path, "grew", Line(1).size() + 1) + " (--on-input-change fail)"));
}

// A file still being written when its split is opened: its last line is not finished yet.
std::string HalfWritten(const std::string& path, int line, size_t bytes) {
  return "input file " + path + " ends in a half-written line (line " + std::to_string(line) +
         " has no newline and is not yet a complete JSON object): " + std::to_string(bytes) +
         " bytes not read (the split reads the file as it was when it was opened; a restore from "
         "a checkpoint reads the line once it is complete)";
}

TEST_F(FileChangeTest, HalfWrittenLastLineIsNotReadAndARestoreReadsItOnceComplete) {
  for (size_t buffer : {size_t{8}, size_t{1} << 20}) {
    SCOPED_TRACE("read buffer " + std::to_string(buffer));
    bad_.clear();
    changes_.clear();
    const std::string full = R"({"uid":"user-9","ts":42})";
    const std::string head = R"({"uid":"user-9","ts":4)";
    std::string path = dir_.Write("in-" + std::to_string(buffer) + ".jsonl", Line(0) + "\n" + head);
    FileSplitReader reader = Open(path, SplitPosition(), Options(buffer));
    std::vector<Read> first = ReadAll(reader);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].key, "user-0");
    EXPECT_EQ(reader.bad_records(), 0);
    EXPECT_TRUE(bad_.empty()) << bad_[0];
    EXPECT_EQ(changes_, std::vector<std::string>{HalfWritten(path, 2, head.size())});
    const SplitPosition checkpointed = reader.position();
    EXPECT_EQ(checkpointed, SplitPosition::InFile(static_cast<int64_t>(Line(0).size() + 1), 2));

    // The writer finishes the line; a restore from the checkpointed position reads it once.
    Append(path, full.substr(head.size()) + "\n");
    FileSplitReader again = Open(path, checkpointed, Options(buffer));
    const auto end = static_cast<int64_t>(Line(0).size() + full.size() + 2);
    EXPECT_EQ(ReadAll(again), (std::vector<Read>{{"user-9", 42, SplitPosition::InFile(end, 3)}}));
    EXPECT_EQ(again.bad_records(), 0);
    EXPECT_TRUE(bad_.empty());
    EXPECT_EQ(changes_.size(), 1u) << "the completed file is read without a change";
  }
}

TEST_F(FileChangeTest, EveryCutOfTheLastLineIsHalfWrittenNeverMalformed) {
  // Cuts inside strings, escapes, a multi-byte character, numbers, literals, nested values and
  // between members: each is left for later, and the completed line is then read exactly once.
  const std::string last =
      "{\"uid\":\"u\\u00e9-\xC3\xA9\",\"ts\":-12,\"x\":[1.5e+3,true,false,null,{\"y\":\"\\n\"}]}";
  for (size_t cut = 1; cut < last.size(); ++cut) {
    SCOPED_TRACE("cut after byte " + std::to_string(cut));
    changes_.clear();
    std::string path =
        dir_.Write("cut-" + std::to_string(cut) + ".jsonl", Line(0) + "\n" + last.substr(0, cut));
    FileSplitReader reader = Open(path, SplitPosition(), Options(16));
    EXPECT_EQ(ReadAll(reader).size(), 1u);
    EXPECT_EQ(reader.bad_records(), 0);
    EXPECT_EQ(changes_, std::vector<std::string>{HalfWritten(path, 2, cut)});
    Append(path, last.substr(cut));  // complete, still without a final newline
    FileSplitReader again = Open(path, reader.position(), Options(16));
    std::vector<Read> rest = ReadAll(again);
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].key, "u\xC3\xA9-\xC3\xA9");
    EXPECT_EQ(rest[0].ts, -12);
    EXPECT_EQ(again.bad_records(), 0);
  }
  EXPECT_TRUE(bad_.empty()) << bad_[0];
}

TEST_F(FileChangeTest, HalfWrittenLastLineUnderFailIsDataLossWithThePositionBeforeIt) {
  const std::string head = R"({"uid":"user-3","ts")";
  std::string path = dir_.Write("in.jsonl", Line(0) + "\n" + head);
  FileSplitReaderOptions options = Options();
  options.on_input_change = InputChangePolicy::kFail;
  options.on_bad_record = BadRecordPolicy::kFail;
  FileSplitReader reader = Open(path, SplitPosition(), options);
  Record r;
  EXPECT_EQ(*reader.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(reader.Next(&r).status(),
            DataLoss(HalfWritten(path, 2, head.size()) + " (--on-input-change fail)"));
  EXPECT_EQ(reader.position(), SplitPosition::InFile(static_cast<int64_t>(Line(0).size() + 1), 2));
  EXPECT_EQ(reader.bad_records(), 0);
  EXPECT_TRUE(changes_.empty());
}

TEST_F(FileChangeTest, CompleteLastLinesWithoutNewlineStayRecordsOrBadRecords) {
  // Complete and valid: a record. Complete but invalid, or not JSON whatever follows: malformed.
  std::string good = dir_.Write("good.jsonl", Line(0) + "\n" + Line(1) + " \r");
  FileSplitReader g = Open(good, SplitPosition(), Options(8));
  EXPECT_EQ(ReadAll(g).size(), 2u);
  EXPECT_EQ(g.bad_records(), 0);
  for (const std::string last :
       {R"({"uid":"user-1"})", R"({"uid":"user-1","ts":5}})", R"([{"uid":"user-1")",
        R"({"uid":"user-1",,)", "{\"uid\":\"\x01", R"({"uid":01)"}) {
    SCOPED_TRACE(last);
    bad_.clear();
    std::string path = dir_.Write("bad.jsonl", Line(0) + "\n" + last);
    FileSplitReader reader = Open(path, SplitPosition(), Options(8));
    EXPECT_EQ(ReadAll(reader).size(), 1u);
    EXPECT_EQ(reader.bad_records(), 1);
    ASSERT_EQ(bad_.size(), 1u);
    EXPECT_EQ(bad_[0].substr(0, path.size() + 3), path + ":2:");
  }
  EXPECT_TRUE(changes_.empty()) << changes_[0];
}

TEST(BadRecordPolicy, ParsesSkipAndFail) {
  EXPECT_EQ(*ParseBadRecordPolicy("skip"), BadRecordPolicy::kSkip);
  EXPECT_EQ(*ParseBadRecordPolicy("fail"), BadRecordPolicy::kFail);
  EXPECT_EQ(ParseBadRecordPolicy("ignore").status(),
            InvalidArgument("unknown --on-bad-record policy 'ignore'; use skip or fail"));
  EXPECT_EQ(BadRecordPolicyName(BadRecordPolicy::kFail), "fail");
}

}  // namespace
}  // namespace keyflow
