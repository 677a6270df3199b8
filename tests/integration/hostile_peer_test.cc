// Hostile peers on every listening port while a job runs (issue 13, wire robustness), with
// security off (--insecure behaviour: anybody can connect): random bytes, truncated ZMTP
// frames, huge length prefixes, frames above the size limit, a control message of another
// protocol version, data frames with a wrong checksum, a junk flood from one socket and floods
// of connections. After each attack: no process crashed or hung, the workers' memory stayed
// bounded, the job FINISHED in its first attempt and its output equals the reference result
// (computed from the generator's events, generated_input.h) line for line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>
#include <zmq.hpp>

#include "common/file_io.h"
#include "common/protocol/control_messages.h"
#include "tests/integration/cluster.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/raw_peer.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/record_batch_builder.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

// 16 s of input at 3000 events/s, held open at its end (`hold=`) until the attacks are over:
// the job is still running during every attack however slow the machine, and finishes once the
// test releases it.
constexpr char kInput[] = "gen:events=48000,keys=600,splits=2,seed=11,skew=1,rate=3000";
constexpr int64_t kCount = 20;
constexpr int64_t kTimeoutMs = 2'000;
constexpr int64_t kMaxWorkerRss = 200 << 20;

class HostilePeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // --insecure: the hostile bytes must reach the decoders (with CURVE on, a peer without a
    // key never gets past the handshake; the security tests cover those refusals).
    auto cluster =
        Cluster::Start(dir_.Subdir("cluster"), ClusterOptions{.workers = 2, .insecure = true});
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
    output_ = dir_.path() + "/out";
  }

  // Submits count-window (event time) at parallelism 2 and waits until it processes records.
  void StartJob() {
    auto r = cluster_->Cli({"run", "--job", "count-window", "--param", "time=event", "--param",
                            "count=" + std::to_string(kCount), "--param",
                            "timeout=" + std::to_string(kTimeoutMs) + "ms", "--input",
                            std::string(kInput) + ",hold=" + release(), "--output", output_,
                            "--parallelism", "2"});
    ASSERT_OK(r);
    ASSERT_EQ(r->exit_code, 0) << r->out << r->err;
    auto st = cluster_->WaitForJobProcessingRecords();
    ASSERT_OK(st);
    for (const nlohmann::json& s : (*st)["job"]["subtasks"]) {
      for (const nlohmann::json& e : s["input_endpoints"]) data_endpoints_.push_back(e);
    }
    ASSERT_EQ(data_endpoints_.size(), 4u) << st->dump();
  }

  // The job is still running: the attack happened during the job, not after it.
  void ExpectStillRunning() {
    auto st = cluster_->StatusJson();
    ASSERT_OK(st);
    EXPECT_EQ((*st)["job"].value("state", ""), "RUNNING")
        << "the job ended before the attack was over although its input is held";
  }

  void ExpectWorkersSmall(const std::string& when) {
    for (int slot = 0; slot < 2; ++slot) {
      ChildProcess* w = cluster_->worker(slot);
      ASSERT_NE(w, nullptr);
      ASSERT_TRUE(w->Running()) << "worker " << slot << " died " << when << "\n"
                                << cluster_->LogExcerpts();
      auto rss = ResidentBytes(w->pid());
      ASSERT_OK(rss);
      EXPECT_LT(*rss, kMaxWorkerRss) << "worker " << slot << " " << when;
    }
  }

  // FINISHED in its first attempt, output equal to the reference.
  void ExpectFinishedUntouched() {
    ASSERT_OK(WriteFileAtomically(release(), ""));  // the input may end now
    auto st = cluster_->WaitForStatus(
        [](const nlohmann::json& s) {
          const std::string state = s["job"].value("state", "");
          return state == "FINISHED" || state == "FAILED" || state == "CANCELED";
        },
        Duration::Seconds(60), "the job to end");
    ASSERT_OK(st);
    const nlohmann::json& job = (*st)["job"];
    ASSERT_EQ(job.value("state", ""), "FINISHED") << job.dump() << "\n" << cluster_->LogExcerpts();
    EXPECT_EQ(job.value("restarts", -1), 0) << job.dump();
    EXPECT_EQ(job.value("last_failure", "x"), "") << job.dump();
    auto out = ReadJobOutput(output_);
    ASSERT_OK(out);
    std::vector<std::string> lines;
    for (const nlohmann::json& line : out->lines) {
      auto c = CanonicalCountWindow(line);
      ASSERT_OK(c);
      lines.push_back(*c);
    }
    std::sort(lines.begin(), lines.end());
    auto records = GeneratedKeyedTimestamps(kInput);
    ASSERT_OK(records);
    ExpectSameLines(lines, ReferenceCountWindow(*records, kCount, kTimeoutMs),
                    "count-window output after the attack");
  }

  // Opens `n` raw connections to `endpoint` and holds them (`hold`) or closes each at once.
  void ConnectionFlood(const std::string& endpoint, int n, bool hold) {
    std::vector<RawTcpConnection> held;
    for (int i = 0; i < n; ++i) {
      auto c = RawTcpConnection::Connect(endpoint);
      ASSERT_OK(c);
      if (hold) held.push_back(std::move(c).value());
    }
    if (hold) ExpectWorkersSmall("while " + std::to_string(n) + " connections were held");
  }

  std::string release() const { return dir_.path() + "/release"; }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
  std::string output_;
  std::vector<std::string> data_endpoints_;
};

// Writes `bytes` on a new raw connection to `endpoint`; with `expect_close`, waits until the
// peer drops the connection (ZeroMQ refused what it read), else closes it at once.
void WriteRaw(const std::string& endpoint, const std::string& bytes, bool expect_close = false) {
  auto c = RawTcpConnection::Connect(endpoint);
  ASSERT_OK(c);
  (void)c->Write(bytes);  // the peer may close before everything is written
  if (expect_close) {
    EXPECT_TRUE(c->WaitForPeerClose(Duration::Seconds(10)))
        << "the connection to " << endpoint << " stayed open";
  }
}

// A header announcing `size` bytes after a valid handshake as `socket_type`: refused at once.
void ExpectLengthRefused(const std::string& endpoint, std::string_view socket_type, uint64_t size) {
  SCOPED_TRACE("a frame of " + std::to_string(size) + " bytes");
  WriteRaw(endpoint, ZmtpGreeting() + ZmtpReady(socket_type) + ZmtpFrameHeader(size), true);
}

// A `size`-byte frame of which 10 bytes arrive before the connection drops.
void WriteTruncatedFrame(const std::string& endpoint, std::string_view socket_type, uint64_t size) {
  WriteRaw(endpoint,
           ZmtpGreeting() + ZmtpReady(socket_type) + ZmtpFrameHeader(size) + RandomBytes(10, 9));
}

TEST_F(HostilePeerTest, DataPortsDropJunkAndOversizedFramesWithoutTouchingTheJob) {
  StartJob();
  ASSERT_FALSE(HasFailure());
  zmq::context_t ctx(1);
  for (size_t i = 0; i < data_endpoints_.size(); ++i) {
    const std::string& endpoint = data_endpoints_[i];
    SCOPED_TRACE(endpoint);
    // Well-formed frames first (counted exactly below), then raw bytes.
    auto before = cluster_->StatusJson();
    ASSERT_OK(before);
    const int64_t dropped_before =
        (*before)["job"]["subtasks"][i / 2].value("dropped_frames", int64_t{0});
    // Well-formed ZeroMQ messages that are not keyflow frames, a frame of another data-plane
    // version and a keyflow frame with a wrong checksum, from a real PUSH socket.
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 30000);
    push.connect(endpoint);
    for (uint64_t seed = 0; seed < 50; ++seed) {
      std::string junk = RandomBytes(64 + seed * 20, seed);
      push.send(zmq::buffer(junk), zmq::send_flags::none);
    }
    std::string frame;
    EncodeEventFrame(SubtaskIndex(static_cast<int32_t>(i % 2)), AttemptNumber(1), 0,
                     ChannelEvent::EndOfInput(), &frame);
    std::string other_version = frame;  // a valid frame of another data-plane version
    other_version[4] = static_cast<char>(kDataPlaneVersion + 1);
    push.send(zmq::buffer(other_version), zmq::send_flags::none);
    frame[kFrameChecksumOffset] ^= 0x5a;
    push.send(zmq::buffer(frame), zmq::send_flags::none);
    // Every one of the 52 frames reaches the receiver and is dropped before anything else is
    // sent to it (the channel is read while the job processes records, at its own pace).
    const size_t subtask = i / 2;  // data_endpoints_: two channels per keyed subtask, in order
    auto dropped = cluster_->WaitForStatus(
        [&](const nlohmann::json& st) {
          return st["job"]["subtasks"][subtask].value("dropped_frames", int64_t{0}) >=
                 dropped_before + 52;
        },
        Duration::Seconds(30), "the 52 foreign frames to be dropped");
    ASSERT_OK(dropped);
    push.close();
    // 1 KiB of random bytes on a raw connection, three times (a byte other than 0xff first is
    // a ZMTP 1.0 peer to ZeroMQ: the bytes after it become messages).
    for (uint64_t seed = 1; seed <= 3; ++seed)
      WriteRaw(endpoint, RandomBytes(1024, seed * 100 + i));
    // A frame announced above the data plane's limit, and one of 2^62 bytes.
    ExpectLengthRefused(endpoint, "PUSH", kMaxDataFrameBytes + 1);
    ExpectLengthRefused(endpoint, "PUSH", uint64_t{1} << 62);
    WriteTruncatedFrame(endpoint, "PUSH", 1000);
    ConnectionFlood(endpoint, 200, /*hold=*/true);
    ConnectionFlood(endpoint, 200, /*hold=*/false);
    ASSERT_FALSE(HasFailure());
  }
  ExpectStillRunning();
  ExpectWorkersSmall("after the attacks");
  ExpectFinishedUntouched();
  // Counted per subtask in status: at least the 50 junk messages, the other version's frame and
  // the bad-checksum frame sent to each of its two channels.
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  for (const nlohmann::json& s : (*st)["job"]["subtasks"]) {
    EXPECT_GE(s.value("dropped_frames", int64_t{0}), 2 * 52) << s.dump();
  }
  for (int slot = 0; slot < 2; ++slot) {
    EXPECT_THAT(ReadFileOrEmpty(cluster_->WorkerLog(slot)), HasSubstr("dropped a data frame"))
        << "worker " << slot;
  }
}

TEST_F(HostilePeerTest, ControlPortSurvivesJunkAnotherVersionAndAFloodFromOneSocket) {
  StartJob();
  ASSERT_FALSE(HasFailure());
  const std::string endpoint = cluster_->endpoint();
  const auto log_before = std::filesystem::file_size(cluster_->CoordinatorLog());
  for (uint64_t seed = 1; seed <= 3; ++seed) WriteRaw(endpoint, RandomBytes(1024, seed));
  ExpectLengthRefused(endpoint, "DEALER", uint64_t{kMaxControlMessageBytes} + 1);
  ExpectLengthRefused(endpoint, "DEALER", uint64_t{1} << 62);
  WriteTruncatedFrame(endpoint, "DEALER", 5000);

  zmq::context_t ctx(1);
  // A valid StatusRequest of another protocol version gets an error reply.
  {
    zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.set(zmq::sockopt::rcvtimeo, 10'000);
    dealer.connect(endpoint);
    std::string frame = EncodeControlMessage(StatusRequest{});
    uint32_t version = kControlProtocolVersion + 1;
    std::memcpy(frame.data(), &version, sizeof(version));
    ASSERT_TRUE(dealer.send(zmq::buffer(frame), zmq::send_flags::none));
    zmq::message_t reply;
    ASSERT_TRUE(dealer.recv(reply, zmq::recv_flags::none)) << "no reply within 10 s";
    auto decoded = DecodeControlMessage(
        std::string_view(static_cast<const char*>(reply.data()), reply.size()), "the test");
    ASSERT_OK(decoded);
    ASSERT_TRUE(std::holds_alternative<Reply>(*decoded));
    EXPECT_THAT(std::get<Reply>(*decoded).message,
                HasSubstr("speaks control protocol version " +
                          std::to_string(kControlProtocolVersion + 1)));
  }
  // One socket sends junk as fast as it can for 3 s (at most 3 M messages): heartbeats must
  // keep being served (no worker lost: the job would restart) and the log must stay small.
  int64_t flooded = 0;
  {
    zmq::socket_t flood(ctx, zmq::socket_type::dealer);
    flood.set(zmq::sockopt::linger, 0);
    flood.set(zmq::sockopt::sndhwm, 100'000);
    flood.connect(endpoint);
    const int64_t end = MonotonicMillis() + 3000;
    while (MonotonicMillis() < end && flooded < 3'000'000) {
      for (int k = 0; k < 1000; ++k) {
        if (flood.send(zmq::str_buffer("junk"), zmq::send_flags::dontwait)) ++flooded;
      }
    }
  }
  ConnectionFlood(endpoint, 200, /*hold=*/true);
  ConnectionFlood(endpoint, 200, /*hold=*/false);
  ExpectStillRunning();
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  EXPECT_GT((*st)["coordinator"].value("malformed_control_messages", int64_t{0}), 1000)
      << "flooded " << flooded;
  ExpectWorkersSmall("after the attacks");
  ExpectFinishedUntouched();
  const auto log_after = std::filesystem::file_size(cluster_->CoordinatorLog());
  EXPECT_LT(log_after - log_before, 64u << 10)
      << "the coordinator log grew by " << (log_after - log_before) << " bytes for " << flooded
      << " junk messages";
}

}  // namespace
}  // namespace keyflow::test
