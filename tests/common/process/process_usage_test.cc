// process_usage: parsing of captured /proc text, and this test process's own usage.
#include "common/process/process_usage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

// A real /proc/<pid>/stat line whose command name contains a space and ')' (a process may name
// itself anything): utime 1234, stime 567.
constexpr std::string_view kStat =
    "4242 (keyflow-wor ker)) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 567 0 0 20 0 3 0 "
    "3716422 313344000 1000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
constexpr std::string_view kStatm = "76500 2500 412 5 0 12300 0\n";

TEST(ProcessUsageTest, ParsesUserAndSystemTicksAfterTheLastParenthesis) {
  auto t = ParseProcStatCpuTicks(kStat);
  ASSERT_OK(t);
  EXPECT_EQ(t->user, 1234);
  EXPECT_EQ(t->system, 567);
}

TEST(ProcessUsageTest, ParsesResidentPagesOfStatm) {
  auto pages = ParseStatmResidentPages(kStatm);
  ASSERT_OK(pages);
  EXPECT_EQ(*pages, 2500);
}

TEST(ProcessUsageTest, CombinesIntoBytesAndMilliseconds) {
  auto u = ParseProcessUsage(kStat, kStatm, /*ticks_per_second=*/100, /*page_size=*/4096,
                             /*open_fds=*/17);
  ASSERT_OK(u);
  EXPECT_EQ(u->rss_bytes, 2500 * 4096);
  EXPECT_EQ(u->cpu_user_ms, 12340);
  EXPECT_EQ(u->cpu_system_ms, 5670);
  EXPECT_EQ(u->open_fds, 17);
}

TEST(ProcessUsageTest, RefusesTruncatedOrGarbledText) {
  EXPECT_EQ(ParseProcStatCpuTicks("4242 keyflow S 1 2 3").status().code(),
            StatusCode::kCorruption);                                       // no ')'
  EXPECT_EQ(ParseProcStatCpuTicks("4242 (k) S 1 2 3 4 5").status().code(),  // short
            StatusCode::kCorruption);
  EXPECT_EQ(ParseProcStatCpuTicks("1 (k) S 1 1 1 0 -1 0 0 0 0 0 x1 2 0").status().message(),
            "utime is not a non-negative integer: 'x1'");
  EXPECT_EQ(ParseStatmResidentPages("76500").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseStatmResidentPages("76500 -3").status().code(), StatusCode::kCorruption);
}

TEST(ProcessUsageTest, CountsADescriptorThisProcessOpens) {
  auto before = CountOpenFds("/proc/self/fd");
  ASSERT_OK(before);
  int fd = ::open("/proc/self/stat", O_RDONLY);
  ASSERT_GE(fd, 0);
  auto during = CountOpenFds("/proc/self/fd");
  ::close(fd);
  ASSERT_OK(during);
  EXPECT_EQ(*during, *before + 1);
  EXPECT_EQ(CountOpenFds("/nonexistent/fd").status().code(), StatusCode::kIoError);
}

TEST(ProcessUsageTest, ReadsThisProcessFromProc) {
  auto u = ReadProcessUsage();
  ASSERT_OK(u);
  EXPECT_GT(u->rss_bytes, 1 << 20);  // a gtest binary is larger than 1 MiB resident
  EXPECT_GE(u->open_fds, 3);         // stdin, stdout, stderr
  EXPECT_GE(u->cpu_user_ms + u->cpu_system_ms, 0);
}

}  // namespace
}  // namespace keyflow
