// The coordinator under a flood of junk, driven message by message with a manual clock:
// undecodable messages are counted, logged once per peer per minute and answered once per peer
// per second. (The real control loop under a flood: control_server_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/testing/captured_log.h"
#include "tests/coordinator/coordinator_harness.h"

namespace keyflow {
namespace {

using keyflow::testing::CapturedLog;
using ::testing::HasSubstr;

class UndecodableFloodTest : public test::CoordinatorHarness {};

TEST_F(UndecodableFloodTest, IsCountedLoggedOncePerMinuteAndAnsweredOncePerSecondPerPeer) {
  CapturedLog log;
  const Status junk = InvalidArgument("a control peer sent 3 bytes: not a control message");
  for (int i = 0; i < 10'000; ++i) coord_->OnUndecodable("flooder", junk);
  EXPECT_EQ(outbox_.To<Reply>("flooder").size(), 1u);
  EXPECT_EQ(log.lines(), 1u) << log.Text();
  EXPECT_THAT(log.Text(), HasSubstr("undecodable control message: a control peer sent 3 bytes"));
  // Another peer (a CLI of another version) gets its own answer at once.
  coord_->OnUndecodable("cli", junk);
  ASSERT_EQ(outbox_.To<Reply>("cli").size(), 1u);
  EXPECT_FALSE(outbox_.To<Reply>("cli")[0].ok);
  EXPECT_EQ(outbox_.To<Reply>("cli")[0].message, junk.message());

  clock_.Advance(Duration::Seconds(1));
  coord_->OnUndecodable("flooder", junk);
  EXPECT_EQ(outbox_.To<Reply>("flooder").size(), 2u);
  EXPECT_EQ(log.lines(), 2u);  // "cli" logged once; "flooder" waits for its minute

  clock_.Advance(Duration::Seconds(59));
  coord_->OnUndecodable("flooder", junk);
  EXPECT_EQ(log.lines(), 3u);
  EXPECT_THAT(log.Text(), HasSubstr("(10000 similar messages suppressed since the last one)"));
  EXPECT_EQ(coord_->StatusJson(now_)["coordinator"]["malformed_control_messages"], 10'003);
}

}  // namespace
}  // namespace keyflow
