#include "worker/sinks/print_sink.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>

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
  ASSERT_TRUE(sink.Write(R"({"k":1})").ok());
  ASSERT_TRUE(sink.Write("").ok());
  ASSERT_TRUE(sink.Flush().ok());
  EXPECT_EQ(stream.Close(), "{\"k\":1}\n\n");
}

TEST(PrintSink, PrefixesTheOneBasedSubtaskIndexLikeFlinkAtHigherParallelism) {
  MemoryStream stream;
  PrintSink sink = PrintSink::ForSubtask(SubtaskIndex(2), 4, stream.file());
  ASSERT_TRUE(sink.Write("a").ok());
  ASSERT_TRUE(sink.Write("b").ok());
  ASSERT_TRUE(sink.Flush().ok());
  EXPECT_EQ(stream.Close(), "3> a\n3> b\n");
}

}  // namespace
}  // namespace keyflow
