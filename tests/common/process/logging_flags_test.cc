// The logging flags of the binaries (AddLoggingFlags, LoggingOptionsFromFlags) and the CLI's
// --log-level/--log-format before or after its command (ExtractCliLoggingFlags).
#include "common/process/logging_flags.h"

#include <gtest/gtest.h>
#include "tests/testutil/status_matchers.h"

namespace keyflow::cli {
namespace {

Result<LoggingOptions> Parse(const std::vector<std::string>& args) {
  po::options_description opts;
  LoggingFlags flags;
  AddLoggingFlags(opts, &flags);
  po::variables_map vm;
  int code = -1;
  if (!ParseCommandLine("usage", opts, {}, args, &vm, &code)) {
    return InvalidArgument("did not parse, exit code " + std::to_string(code));
  }
  return LoggingOptionsFromFlags("worker-1", flags);
}

TEST(LoggingFlagsTest, DefaultsAndValues) {
  auto d = Parse({});
  ASSERT_OK(d);
  EXPECT_EQ(d->process, "worker-1");
  EXPECT_EQ(d->file, "");
  EXPECT_EQ(d->level, "info");
  EXPECT_EQ(d->format, LogFormat::kText);
  EXPECT_EQ(d->max_size_bytes, uint64_t{64} << 20);
  EXPECT_EQ(d->max_files, 5);
  auto o = Parse({"--log-file", "/tmp/w.log", "--log-level", "debug", "--log-format", "json",
                  "--log-max-size", "1MiB", "--log-max-files", "9"});
  ASSERT_OK(o);
  EXPECT_EQ(o->file, "/tmp/w.log");
  EXPECT_EQ(o->level, "debug");
  EXPECT_EQ(o->format, LogFormat::kJson);
  EXPECT_EQ(o->max_size_bytes, uint64_t{1} << 20);
  EXPECT_EQ(o->max_files, 9);
}

TEST(LoggingFlagsTest, BadValuesNameTheFlag) {
  EXPECT_EQ(Parse({"--log-level", "loud"}).status().message(),
            "--log-level: unknown log level 'loud': use one of: trace, debug, info, warn, error");
  EXPECT_EQ(Parse({"--log-format", "xml"}).status().message(),
            "--log-format: unknown log format 'xml': use text (one key=value line per event) or "
            "json (one JSON object per line)");
  EXPECT_EQ(Parse({"--log-max-size", "10MB"}).status().message(),
            "--log-max-size '10MB' has an unknown unit: give bytes or a whole number with KiB, "
            "MiB or GiB (e.g. 64MiB)");
  EXPECT_EQ(Parse({"--log-max-files", "0"}).status().message(),
            "--log-max-files 0 is out of range: give a number of rotated files from 1 to 1000");
  EXPECT_EQ(Parse({"--log-max-files", "1001"}).status().message(),
            "--log-max-files 1001 is out of range: give a number of rotated files from 1 to 1000");
  EXPECT_EQ(Parse({"--log-max-files", "many"}).status().message(), "did not parse, exit code 2");
}

TEST(ExtractCliLoggingFlagsTest, TakesTheFlagsWhereverTheyAre) {
  std::vector<std::string> args = {"--log-level", "debug", "status", "--json", "--log-format=json"};
  LoggingFlags flags;
  ASSERT_OK(ExtractCliLoggingFlags(&args, &flags));
  EXPECT_EQ(args, (std::vector<std::string>{"status", "--json"}));
  EXPECT_EQ(flags.level, "debug");
  EXPECT_EQ(flags.format, "json");
  args = {"log-level", "trace", "--log-level=error", "--coordinator", "tcp://h:1"};
  ASSERT_OK(ExtractCliLoggingFlags(&args, &flags));
  EXPECT_EQ(args, (std::vector<std::string>{"log-level", "trace", "--coordinator", "tcp://h:1"}));
  EXPECT_EQ(flags.level, "error");
}

TEST(ExtractCliLoggingFlagsTest, AFlagWithoutAValueIsAnError) {
  std::vector<std::string> args = {"status", "--log-level"};
  LoggingFlags flags;
  EXPECT_EQ(ExtractCliLoggingFlags(&args, &flags).message(),
            "--log-level needs a value (e.g. --log-level debug)");
}

}  // namespace
}  // namespace keyflow::cli
