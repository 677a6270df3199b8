#include "worker/sinks/print_sink.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

// An in-memory FILE*, read back after fclose.
class MemoryStream {
 public:
  MemoryStream() { file_ = ::open_memstream(&data_, &size_); }
  ~MemoryStream() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string Close() {
    std::fclose(file_);
    file_ = nullptr;
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_ = nullptr;
};

TEST(PrintSink, WritesOneLinePerRecordWithoutPrefixAtParallelismOne) {
  MemoryStream stream;
  PrintSink sink = PrintSink::ForSubtask(SubtaskIndex(0), 1, stream.file());
  EXPECT_EQ(sink.prefix(), "");
  ASSERT_OK(sink.Write(R"({"k":1})"));
  ASSERT_OK(sink.Write(""));
  ASSERT_OK(sink.Flush());
  EXPECT_EQ(stream.Close(), "{\"k\":1}\n\n");
}

TEST(PrintSink, PrefixesTheOneBasedSubtaskIndexLikeFlinkAtHigherParallelism) {
  MemoryStream stream;
  PrintSink sink = PrintSink::ForSubtask(SubtaskIndex(2), 4, stream.file());
  ASSERT_OK(sink.Write("a"));
  ASSERT_OK(sink.Write("b"));
  ASSERT_OK(sink.Flush());
  EXPECT_EQ(stream.Close(), "3> a\n3> b\n");
}

TEST(PrintSink, BuffersWholeLinesUntilFlushAndWritesAfterWhatTheStreamHolds) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PrintSink sink = PrintSink::ForSubtask(SubtaskIndex(0), 2, f);
  ASSERT_OK(sink.Write("a"));
  EXPECT_EQ(test_util::ReadStream(f), "");  // buffered
  std::fputs("log line\n", f);              // something else writing to the same stream
  ASSERT_OK(sink.Write("b"));
  ASSERT_OK(sink.Flush());
  EXPECT_EQ(test_util::ReadStream(f), "log line\n1> a\n1> b\n");
  std::fclose(f);
}

TEST(PrintSink, WritesWhenTheBufferIsFull) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PrintSink sink(f);
  const std::string line(1023, 'x');  // 1 KiB with the newline
  for (size_t i = 0; i < PrintSink::kBufferBytes / 1024 - 1; ++i) ASSERT_OK(sink.Write(line));
  EXPECT_EQ(test_util::ReadStream(f).size(), 0u);
  ASSERT_OK(sink.Write(line));
  EXPECT_EQ(test_util::ReadStream(f).size(), PrintSink::kBufferBytes);
  std::fclose(f);
}

TEST(PrintSink, TheDestructorWritesWhatIsBuffered) {
  MemoryStream stream;
  {
    PrintSink sink(stream.file());
    ASSERT_OK(sink.Write("last"));
  }
  EXPECT_EQ(stream.Close(), "last\n");
}

}  // namespace
}  // namespace keyflow
