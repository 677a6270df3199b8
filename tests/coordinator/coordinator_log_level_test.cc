// `keyflow log-level` on the Coordinator, message by message: SetLogLevelRequest sets the
// coordinator's level, sends SetLogLevel to every registered worker (and to workers registering
// later), answers with a sentence; an unknown level changes nothing.
#include <gtest/gtest.h>

#include "common/logging/logging.h"
#include "common/testing/captured_log.h"
#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

class CoordinatorLogLevelTest : public CoordinatorHarness {
 protected:
  void SetUp() override { spdlog::default_logger_raw()->set_level(spdlog::level::info); }

  std::vector<std::string> LevelsSentTo(const std::string& identity) {
    std::vector<std::string> levels;
    for (const SetLogLevel& m : outbox_.To<SetLogLevel>(identity)) levels.push_back(m.level);
    return levels;
  }

  testing::CapturedLog log_;  // the process's logger for this test
};

TEST_F(CoordinatorLogLevelTest, SetsItsOwnLevelAndEveryWorkersAndSaysSo) {
  Register("w0", 0);
  Register("w1", 1);
  Deliver("cli", SetLogLevelRequest{"debug", true});
  auto reply = outbox_.Last<Reply>("cli");
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->ok);
  EXPECT_EQ(reply->message, "log level is now debug on the coordinator and 2 workers");
  EXPECT_EQ(nlohmann::json::parse(reply->json),
            (nlohmann::json{{"level", "debug"}, {"workers", 2}}));
  EXPECT_EQ(LogLevel(), "debug");
  EXPECT_EQ(coord_->StatusJson(now_)["coordinator"]["log_level"], "debug");
  EXPECT_EQ(LevelsSentTo("w0"), std::vector<std::string>{"debug"});
  EXPECT_EQ(LevelsSentTo("w1"), std::vector<std::string>{"debug"});
  EXPECT_NE(log_.Text().find("log level changed from info to debug (set by a connection without "
                             "a key)"),
            std::string::npos)
      << log_.Text();
  // A worker registering later (a new one, or one that restarted) gets the level too.
  Register("w2", 2);
  EXPECT_EQ(LevelsSentTo("w2"), std::vector<std::string>{"debug"});
  Deliver("cli", SetLogLevelRequest{"warning", true});
  EXPECT_EQ(outbox_.Last<Reply>("cli")->message,
            "log level is now warn on the coordinator and 3 workers");
  EXPECT_EQ(LevelsSentTo("w0"), (std::vector<std::string>{"debug", "warn"}));
}

TEST_F(CoordinatorLogLevelTest, CoordinatorOnlyLeavesTheWorkersAlone) {
  Register("w0", 0);
  Deliver("cli", SetLogLevelRequest{"trace", false});
  EXPECT_EQ(outbox_.Last<Reply>("cli")->message, "log level is now trace on the coordinator only");
  EXPECT_EQ(LogLevel(), "trace");
  Register("w1", 1);
  EXPECT_TRUE(outbox_.To<SetLogLevel>("w0").empty());
  EXPECT_TRUE(outbox_.To<SetLogLevel>("w1").empty());
}

TEST_F(CoordinatorLogLevelTest, OneWorkerIsSingular) {
  Register("w0", 0);
  Deliver("cli", SetLogLevelRequest{"error", true});
  EXPECT_EQ(outbox_.Last<Reply>("cli")->message,
            "log level is now error on the coordinator and 1 worker");
}

TEST_F(CoordinatorLogLevelTest, AnUnknownLevelIsRefusedAndChangesNothing) {
  Register("w0", 0);
  Deliver("cli", SetLogLevelRequest{"loud", true});
  EXPECT_EQ(RefusingReply("cli"),
            "unknown log level 'loud': use one of: trace, debug, info, warn, error");
  EXPECT_EQ(LogLevel(), "info");
  EXPECT_EQ(coord_->StatusJson(now_)["coordinator"]["log_level"], "info");
  EXPECT_TRUE(outbox_.To<SetLogLevel>("w0").empty());
  Register("w1", 1);
  EXPECT_TRUE(outbox_.To<SetLogLevel>("w1").empty());
}

}  // namespace
}  // namespace keyflow::test
