// A ControlServer on a loopback port whose loop runs on its own thread until Stop().
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <thread>
#include <utility>

#include "common/clock.h"
#include "coordinator/control_server.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {

class ControlServerThread {
 public:
  ~ControlServerThread() { Stop(); }

  // Binds a server with `options` to tcp://127.0.0.1:* and starts its loop.
  void Start(ZmqContext& ctx, const CoordinatorOptions& options, const Clock* clock) {
    ASSERT_EQ(::pipe(stop_), 0);
    auto server = ControlServer::Bind(ctx, "tcp://127.0.0.1:*", options, clock);
    ASSERT_OK(server);
    server_ = std::move(server).value();
    // Thread start is the happens-before edge that hands the socket to the loop's thread.
    loop_ = std::thread([this] { loop_status_ = server_->Run(stop_[0]); });
  }

  // Stops the loop (which must have ended OK) and closes the server.
  void Stop() {
    if (loop_.joinable()) {
      EXPECT_EQ(::write(stop_[1], "x", 1), 1);
      loop_.join();
      EXPECT_OK(loop_status_);
    }
    server_.reset();
    for (int& fd : stop_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }

  ControlServer* operator->() const { return server_.get(); }

 private:
  int stop_[2] = {-1, -1};
  std::unique_ptr<ControlServer> server_;
  std::thread loop_;
  Status loop_status_;
};

}  // namespace keyflow::test
