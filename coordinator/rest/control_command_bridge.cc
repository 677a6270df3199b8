#include "coordinator/rest/control_command_bridge.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace keyflow {

struct ControlCommandBridge::Waiter {
  CondVar cv;
  std::optional<Reply> reply;  // guarded by the bridge's mu_
  bool closed = false;         // guarded by the bridge's mu_
};

Result<std::unique_ptr<ControlCommandBridge>> ControlCommandBridge::Create() {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    return Internal(std::string("the coordinator cannot create the REST command queue (eventfd: ") +
                    std::strerror(errno) + "): raise the open-file limit (ulimit -n) or restart");
  }
  return std::unique_ptr<ControlCommandBridge>(new ControlCommandBridge(fd));
}

ControlCommandBridge::~ControlCommandBridge() {
  Close();
  close(fd_);
}

Result<Reply> ControlCommandBridge::Submit(ControlMessage msg, Caller caller,
                                           std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto waiter = std::make_shared<Waiter>();
  MutexLock lock(&mu_);
  if (closed_) {
    return Unavailable(
        "the coordinator is stopping and takes no more commands: retry when it "
        "is back");
  }
  std::string connection = "rest:" + std::to_string(++next_id_);
  pending_.push_back(Pending{connection, std::move(msg), std::move(caller)});
  waiting_[connection] = waiter;
  const uint64_t one = 1;
  // Nonblocking; fails only if the counter would overflow, which TakePending prevents.
  [[maybe_unused]] ssize_t w = write(fd_, &one, sizeof(one));
  while (!waiter->reply && !waiter->closed) {
    if (!waiter->cv.WaitUntil(&mu_, deadline) && !waiter->reply && !waiter->closed) break;
  }
  waiting_.erase(connection);
  if (waiter->reply) return *std::move(waiter->reply);
  if (waiter->closed) {
    return Unavailable(
        "the coordinator stopped before it answered this command: check "
        "`keyflow status` when it is back to see whether it ran");
  }
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->connection == connection) {
      pending_.erase(it);
      return DeadlineExceeded("the coordinator's control loop did not take this command within " +
                              std::to_string(timeout.count()) +
                              " ms, so it was not run: retry, and check the "
                              "coordinator's log if it stays busy");
    }
  }
  return DeadlineExceeded("the coordinator did not answer within " +
                          std::to_string(timeout.count()) +
                          " ms; the command may still be running: follow it with GET /api/v1/job "
                          "(last_command, commands_in_progress)");
}

void ControlCommandBridge::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
  for (auto& [connection, waiter] : waiting_) {
    waiter->closed = true;
    waiter->cv.SignalAll();
  }
}

std::vector<ControlCommandBridge::Pending> ControlCommandBridge::TakePending() {
  MutexLock lock(&mu_);
  uint64_t count = 0;
  [[maybe_unused]] ssize_t r = read(fd_, &count, sizeof(count));  // EAGAIN when nothing is queued
  std::vector<Pending> out(std::make_move_iterator(pending_.begin()),
                           std::make_move_iterator(pending_.end()));
  pending_.clear();
  return out;
}

bool ControlCommandBridge::IsBridgePeer(const std::string& connection) {
  return connection.rfind("rest:", 0) == 0;
}

void ControlCommandBridge::Complete(const std::string& connection, Reply reply) {
  MutexLock lock(&mu_);
  auto it = waiting_.find(connection);
  if (it == waiting_.end()) return;  // timed out (or closed): a late reply is dropped
  it->second->reply = std::move(reply);
  it->second->cv.SignalAll();
  waiting_.erase(it);
}

}  // namespace keyflow
