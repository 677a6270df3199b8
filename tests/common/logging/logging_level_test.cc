// The log level at run time (ChangeLogLevel/LogLevel) and the parsers behind the logging flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/logging/logging.h"
#include "common/testing/captured_log.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LoggingLevelTest, ChangeLogLevelChangesWhatIsLoggedAndSaysSo) {
  testing::CapturedLog log;
  spdlog::default_logger_raw()->set_level(spdlog::level::info);
  KF_LOG_DEBUG("hidden before");
  ASSERT_OK(ChangeLogLevel("debug", "set by operator:alice"));
  EXPECT_EQ(LogLevel(), "debug");
  KF_LOG_DEBUG("shown after");
  ASSERT_OK(ChangeLogLevel("warn"));
  EXPECT_EQ(LogLevel(), "warn");
  KF_LOG_INFO("hidden at warn");
  ASSERT_OK(ChangeLogLevel("trace"));
  EXPECT_EQ(LogLevel(), "trace");
  ASSERT_OK(ChangeLogLevel("warning"));
  EXPECT_EQ(LogLevel(), "warn");
  ASSERT_OK(ChangeLogLevel("error"));
  EXPECT_EQ(LogLevel(), "error");
  const std::string text = log.Text();
  EXPECT_THAT(text, Not(HasSubstr("hidden")));
  EXPECT_THAT(text, HasSubstr("shown after"));
  EXPECT_THAT(text, HasSubstr("log level changed from info to debug (set by operator:alice)"));
  // Going up, the line is written before it would be hidden.
  EXPECT_THAT(text, HasSubstr("log level changed from debug to warn"));
  EXPECT_THAT(text, HasSubstr("log level changed from warn to trace"));
  EXPECT_THAT(text, HasSubstr("log level changed from trace to warn"));
  EXPECT_THAT(text, Not(HasSubstr("from warn to error")));  // neither level shows info
}

TEST(LoggingLevelTest, AnUnknownLevelIsRefusedAndChangesNothing) {
  testing::CapturedLog log;
  spdlog::default_logger_raw()->set_level(spdlog::level::info);
  for (const char* bad : {"loud", "DEBUG", "", "critical", "off", "info "}) {
    Status s = ChangeLogLevel(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.message(), "unknown log level '" + std::string(bad) +
                               "': use one of: trace, debug, info, warn, error");
    EXPECT_EQ(LogLevel(), "info");
  }
  EXPECT_EQ(ChangeLogLevel("a\nb").message(),
            "unknown log level 'a\\nb': use one of: trace, debug, info, warn, error");
  EXPECT_EQ(log.lines(), 0u);
}

TEST(LoggingLevelTest, InitLoggingRefusesAnUnknownLevel) {
  LoggingOptions o;
  o.process = "coordinator";
  o.level = "verbose";
  auto logger = MakeLogger(o);
  ASSERT_FALSE(logger.ok());
  EXPECT_EQ(logger.status().message(),
            "unknown log level 'verbose': use one of: trace, debug, info, warn, error");
}

TEST(ParseByteSizeTest, BytesAndBinaryUnits) {
  EXPECT_EQ(*ParseByteSize("1048576", "--log-max-size"), 1048576u);
  EXPECT_EQ(*ParseByteSize("100B", "--log-max-size"), 100u);
  EXPECT_EQ(*ParseByteSize("512KiB", "--log-max-size"), 512u * 1024);
  EXPECT_EQ(*ParseByteSize("64MiB", "--log-max-size"), uint64_t{64} << 20);
  EXPECT_EQ(*ParseByteSize("64mib", "--log-max-size"), uint64_t{64} << 20);
  EXPECT_EQ(*ParseByteSize("2GiB", "--log-max-size"), uint64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("1024GiB", "--log-max-size"), uint64_t{1} << 40);
}

// Why ParseByteSize refuses `text` as --log-max-size.
std::string SizeRefusal(const std::string& text) {
  return ParseByteSize(text, "--log-max-size").status().message();
}

TEST(ParseByteSizeTest, BadSizesAreSentences) {
  const std::string hint = ": give bytes or a whole number with KiB, MiB or GiB (e.g. 64MiB)";
  EXPECT_EQ(SizeRefusal("64MB"), "--log-max-size '64MB' has an unknown unit" + hint);
  EXPECT_EQ(SizeRefusal("big"), "--log-max-size 'big' is not a size" + hint);
  EXPECT_EQ(SizeRefusal("-1"), "--log-max-size '-1' is not a size" + hint);
  EXPECT_EQ(SizeRefusal(""), "--log-max-size '' is not a size" + hint);
  EXPECT_EQ(SizeRefusal("0"), "--log-max-size '0' is zero" + hint);
  EXPECT_EQ(SizeRefusal("1025GiB"), "--log-max-size '1025GiB' is more than 1 TiB" + hint);
  EXPECT_EQ(SizeRefusal("99999999999999999999999"),
            "--log-max-size '99999999999999999999999' is too large" + hint);
  EXPECT_EQ(SizeRefusal("1.5MiB"), "--log-max-size '1.5MiB' has an unknown unit" + hint);
}

TEST(ParseLogFormatTest, TextOrJson) {
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(ParseLogFormat("xml").status().message(),
            "unknown log format 'xml': use text (one key=value line per event) or json (one JSON "
            "object per line)");
}

}  // namespace
}  // namespace keyflow
