#include "coordinator/rest/control_command_bridge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <future>
#include <thread>
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

ControlCommandBridge::Caller Alice() {
  return {PeerIdentity{Role::kOperator, "alice"}, "127.0.0.1"};
}

class BridgeTest : public ::testing::Test {
 protected:
  std::unique_ptr<ControlCommandBridge> bridge_ = ControlCommandBridge::Create().value();
};

TEST_F(BridgeTest, SubmitWaitsForTheControlLoopsReply) {
  EXPECT_FALSE(Readable(bridge_->fd(), 0));
  auto reply =
      std::async(std::launch::async, [&] { return bridge_->Submit(CancelJob{}, Alice(), 10s); });
  ASSERT_TRUE(Readable(bridge_->fd(), 10'000));
  std::vector<ControlCommandBridge::Pending> pending = bridge_->TakePending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_FALSE(Readable(bridge_->fd(), 0));  // drained
  EXPECT_EQ(pending[0].connection, "rest:1");
  EXPECT_TRUE(ControlCommandBridge::IsBridgePeer(pending[0].connection));
  EXPECT_TRUE(std::holds_alternative<CancelJob>(pending[0].message));
  EXPECT_EQ(pending[0].caller.identity, (PeerIdentity{Role::kOperator, "alice"}));
  EXPECT_EQ(pending[0].caller.address, "127.0.0.1");
  bridge_->Complete("rest:1", Reply{true, "job j canceled", ""});
  Result<Reply> r = reply.get();
  ASSERT_OK(r);
  EXPECT_TRUE(r->ok);
  EXPECT_EQ(r->message, "job j canceled");
}

TEST_F(BridgeTest, TwoCallersGetTheirOwnReplies) {
  auto first = std::async(std::launch::async,
                          [&] { return bridge_->Submit(CheckpointRequest{}, Alice(), 10s); });
  ASSERT_TRUE(Readable(bridge_->fd(), 10'000));
  std::vector<ControlCommandBridge::Pending> a = bridge_->TakePending();
  auto second = std::async(std::launch::async,
                           [&] { return bridge_->Submit(StopJob{"/tmp/sp"}, Alice(), 10s); });
  ASSERT_TRUE(Readable(bridge_->fd(), 10'000));
  std::vector<ControlCommandBridge::Pending> b = bridge_->TakePending();
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].connection, "rest:1");
  EXPECT_EQ(b[0].connection, "rest:2");
  EXPECT_EQ(std::get<StopJob>(b[0].message).directory, "/tmp/sp");
  bridge_->Complete("rest:2", Reply{true, "second", ""});
  bridge_->Complete("rest:1", Reply{false, "first", ""});
  EXPECT_EQ(second.get()->message, "second");
  EXPECT_EQ(first.get()->message, "first");
}

TEST_F(BridgeTest, ATimeoutBeforeTheLoopTookItMeansNotRun) {
  Result<Reply> r = bridge_->Submit(CancelJob{}, Alice(), 20ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("so it was not run"));
  EXPECT_TRUE(bridge_->TakePending().empty());  // withdrawn: the loop never runs it
}

TEST_F(BridgeTest, ALateReplyAfterATimeoutIsDropped) {
  auto reply =
      std::async(std::launch::async, [&] { return bridge_->Submit(CancelJob{}, Alice(), 200ms); });
  ASSERT_TRUE(Readable(bridge_->fd(), 10'000));
  ASSERT_EQ(bridge_->TakePending().size(), 1u);  // the loop took it...
  Result<Reply> r = reply.get();                 // ...and did not answer in time
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("may still be running"));
  bridge_->Complete("rest:1", Reply{true, "late", ""});  // no waiter: dropped
  bridge_->Complete("rest:99", Reply{true, "unknown", ""});
  EXPECT_TRUE(bridge_->TakePending().empty());
}

TEST_F(BridgeTest, CloseReleasesWaitersAndRefusesNewCommands) {
  auto reply =
      std::async(std::launch::async, [&] { return bridge_->Submit(CancelJob{}, Alice(), 60s); });
  ASSERT_TRUE(Readable(bridge_->fd(), 10'000));
  ASSERT_EQ(bridge_->TakePending().size(), 1u);
  bridge_->Close();
  Result<Reply> r = reply.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  Result<Reply> after = bridge_->Submit(CancelJob{}, Alice(), 60s);
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
}

TEST(BridgePeerTest, OnlyRestPrefixedConnections) {
  EXPECT_TRUE(ControlCommandBridge::IsBridgePeer("rest:12"));
  EXPECT_FALSE(ControlCommandBridge::IsBridgePeer("\x00\x6b\x8b\x45\x67"));
  EXPECT_FALSE(ControlCommandBridge::IsBridgePeer("xrest:1"));
  EXPECT_FALSE(ControlCommandBridge::IsBridgePeer(""));
}

}  // namespace
}  // namespace keyflow
