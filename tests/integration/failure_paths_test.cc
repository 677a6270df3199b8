// Process-level failure paths: what a user sees when the coordinator is unreachable, a port is
// taken, a worker dies mid-job, the input has malformed lines, or a peer speaks another control
// protocol version. Every wait has a deadline; nothing sleeps to synchronise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <zmq.hpp>

#include "common/protocol/control_messages.h"
#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(FailurePathsTest, CliAgainstUnreachableCoordinatorExitsOneWithMessage) {
  TestDir dir;
  auto port = PickUnusedPort();
  ASSERT_OK(port);
  std::string endpoint = "tcp://127.0.0.1:" + std::to_string(*port);
  // Both at once: each waits for the CLI's request timeout (5 s).
  auto status = ChildProcess::Start({KeyflowBinary("keyflow"), "status", "--coordinator", endpoint},
                                    dir.path() + "/status.out", dir.path() + "/status.err");
  ASSERT_OK(status);
  auto run =
      ChildProcess::Start({KeyflowBinary("keyflow"), "run", "--job", "count-window", "--input",
                           "gen:events=10,keys=2,splits=1", "--coordinator", endpoint, "--wait"},
                          dir.path() + "/run.out", dir.path() + "/run.err");
  ASSERT_OK(run);

  for (auto* p : {&*status, &*run}) {
    auto code = p->Wait(Duration::Seconds(30));
    ASSERT_OK(code);
    EXPECT_EQ(*code, 1) << p->Describe();
  }
  for (const char* name : {"/status.err", "/run.err"}) {
    std::string err = ReadFileOrEmpty(dir.path() + name);
    EXPECT_THAT(err, HasSubstr("keyflow: cannot reach the coordinator at " + endpoint));
    EXPECT_THAT(err, HasSubstr("is it running?"));
    EXPECT_THAT(err, HasSubstr("--coordinator tcp://HOST:PORT"));
  }
}

// A new job into an output directory that already holds results is a usage error before
// anything is submitted (no coordinator runs at this port), not a job that fails on deploy.
TEST(FailurePathsTest, AnOutputDirectoryWithResultsIsRefusedBeforeTheJobIsSubmitted) {
  TestDir dir;
  const std::string out = dir.Subdir("out");
  std::ofstream(out + "/part-old-job-0-1-3.jsonl") << "{}\n";
  auto r = RunCommand(
      {KeyflowBinary("keyflow"), "run", "--job", "count-window", "--input",
       "gen:events=10,keys=2,splits=1", "--output", out, "--coordinator", "tcp://127.0.0.1:1"},
      Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2) << r->err;
  EXPECT_THAT(r->err, HasSubstr("output directory " + out +
                                " already holds results (part-old-job-0-1-3.jsonl): use an "
                                "empty directory for a new job, or remove them"));
  // In-progress and pre-committed files are not results: the CLI goes on to submit.
  std::filesystem::remove(out + "/part-old-job-0-1-3.jsonl");
  std::ofstream(out + "/.part-old-job-0-1-4.inprogress") << "{}\n";
  std::ofstream(out + "/_part-old-job-0-1-4-5.pending") << "{}\n";
  r = RunCommand(
      {KeyflowBinary("keyflow"), "run", "--job", "count-window", "--input",
       "gen:events=10,keys=2,splits=1", "--output", out, "--coordinator", "tcp://127.0.0.1:1"},
      Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1) << r->err;
  EXPECT_THAT(r->err, HasSubstr("cannot reach the coordinator"));
}

TEST(FailurePathsTest, WorkerAgainstUnreachableCoordinatorKeepsRetryingAndSaysSo) {
  TestDir dir;
  auto port = PickUnusedPort();
  ASSERT_OK(port);
  std::string endpoint = "tcp://127.0.0.1:" + std::to_string(*port);
  std::string log = dir.path() + "/worker.log";
  auto worker = ChildProcess::Start(
      {KeyflowBinary("keyflow-worker"), "--coordinator", endpoint, "--slot", "0", "--insecure"},
      log);
  ASSERT_OK(worker);
  std::string expected = "coordinator " + endpoint + " unreachable for ";
  Status s = WaitUntil([&] { return Contains(ReadFileOrEmpty(log), expected); },
                       Duration::Seconds(20), "the worker's retry message");
  ASSERT_OK(s) << s.message() << "\n" << Tail(log);
  EXPECT_THAT(ReadFileOrEmpty(log), HasSubstr("; retrying (is it running?)"));
  EXPECT_TRUE(worker->Running()) << "a worker waits for its coordinator, it does not exit";
}

TEST(FailurePathsTest, CoordinatorOnPortInUseExitsOneWithClearError) {
  TestDir dir;
  auto first = Cluster::Start(dir.path(), ClusterOptions{.workers = 0});
  ASSERT_OK(first);
  std::string port = (*first)->endpoint().substr((*first)->endpoint().rfind(':') + 1);
  std::string log = dir.path() + "/second-coordinator.log";
  std::vector<std::string> argv = {KeyflowBinary("keyflow-coordinator"), "--port", port,
                                   "--checkpoint-dir", dir.path() + "/checkpoints"};
  for (const std::string& arg : (*first)->SecurityArgs("")) argv.push_back(arg);
  auto second = ChildProcess::Start(argv, log);
  ASSERT_OK(second);
  auto code = second->Wait(Duration::Seconds(20));
  ASSERT_OK(code);
  EXPECT_EQ(*code, 1);
  std::string text = ReadFileOrEmpty(log);
  EXPECT_THAT(text, HasSubstr("address tcp://127.0.0.1:" + port + " is already in use"));
  EXPECT_THAT(text, HasSubstr("choose another --port"));
  EXPECT_TRUE((*first)->coordinator().Running()) << "the first coordinator is unaffected";
}

TEST(FailurePathsTest, WorkerKilledMidJobFailsTheJobNamingItAndRunWaitExitsPromptly) {
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  // Rate-limited: ~60 s of input, so the job is certainly still running when the worker dies.
  std::string log = dir.path() + "/run.out";
  auto run = c.StartCli(
      {"run", "--job", "count-window", "--input",
       "gen:events=1200000,keys=3000,splits=3,seed=1,rate=20000", "--parallelism", "3", "--wait"},
      log);
  ASSERT_OK(run);
  auto running = c.WaitForJobProcessingRecords();
  ASSERT_OK(running);

  auto killed = c.KillWorker(1);
  ASSERT_OK(killed);
  int64_t killed_at = MonotonicMillis();
  auto code = run->Wait(Duration::Seconds(20));
  int64_t exit_ms = MonotonicMillis() - killed_at;
  ASSERT_OK(code) << code.status().ToString() << "\n" << c.LogExcerpts();
  EXPECT_EQ(*code, 1) << ReadFileOrEmpty(log) << ReadFileOrEmpty(log + ".err");
  EXPECT_LT(exit_ms, 8000) << "keyflow run --wait must notice the failure within seconds";

  std::string pid = "pid " + std::to_string(*killed);
  std::string summary = ReadFileOrEmpty(log);
  EXPECT_THAT(summary, HasSubstr(" FAILED after "));
  EXPECT_THAT(summary, HasSubstr("reason:"));
  EXPECT_THAT(summary, HasSubstr("slot 1"));
  EXPECT_THAT(summary, HasSubstr(pid));
  auto st = c.StatusJson();
  ASSERT_OK(st);
  const nlohmann::json& job = (*st)["job"];
  EXPECT_EQ(job.value("state", ""), "FAILED");
  EXPECT_THAT(job.value("failure", ""), HasSubstr(pid));
  EXPECT_THAT(job.value("failure", ""), HasSubstr("was lost"));
}

class BadRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    input_ = dir_.Subdir("input");
    // Three files (three splits). Line numbers are 1-based.
    WriteFile("a.jsonl", 1, {});
    WriteFile("b.jsonl", 2, {{5, "{\"uid\":\"broken\",\"ts\":"}});  // invalid JSON
    WriteFile("c.jsonl", 3,
              {{10, "{\"ts\":1700000000000}"},                  // missing key
               {20, "{\"uid\":\"k\",\"ts\":\"yesterday\"}"}});  // ts not a number
    auto cluster = Cluster::Start(dir_.Subdir("cluster"), ClusterOptions{});
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
  }

  // 300 good lines of keys "<file>-0..9", with the given bad lines at the given line numbers.
  void WriteFile(const std::string& name, int file, const std::map<int, std::string>& bad_lines) {
    std::ofstream out(input_ + "/" + name);
    int line = 0;
    for (int i = 0; i < 300;) {
      ++line;
      if (auto it = bad_lines.find(line); it != bad_lines.end()) {
        out << it->second << "\n";
        continue;
      }
      std::string key = "f" + std::to_string(file) + "-" + std::to_string(i % 10);
      out << "{\"uid\":\"" << key << "\",\"ts\":" << 1'700'000'000'000 + i * 10 << "}\n";
      ++good_[key];
      ++i;
    }
  }

  TestDir dir_;
  std::string input_;
  std::map<std::string, int64_t> good_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(BadRecordsTest, SkipPolicyFinishesAndCountsMalformedLines) {
  std::string output = dir_.path() + "/out-skip";
  auto run = RunJob(*cluster_,
                    {"--job", "tumbling-count", "--param", "size=1h", "--input", input_, "--output",
                     output, "--parallelism", "3", "--on-bad-record", "skip"},
                    Duration::Seconds(60));
  ASSERT_OK(run);
  EXPECT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err;
  EXPECT_EQ(run->job.value("state", ""), "FINISHED") << run->job.dump();
  EXPECT_EQ(run->job.value("bad_records", int64_t{-1}), 3);
  EXPECT_EQ(run->job.value("records_in", int64_t{-1}), 900);
  EXPECT_THAT(run->cli.out, HasSubstr("malformed records: 3"));
  auto out = ReadJobOutput(output);
  ASSERT_OK(out);
  EXPECT_EQ(CountsPerKey(out->lines), good_);
  // Each skipped line is reported with file and line in the worker logs.
  std::string logs;
  for (int i = 0; i < 3; ++i) logs += ReadFileOrEmpty(cluster_->WorkerLog(i));
  EXPECT_THAT(logs, HasSubstr(input_ + "/b.jsonl:5: "));
  EXPECT_THAT(logs, HasSubstr(input_ + "/c.jsonl:10: "));
  EXPECT_THAT(logs, HasSubstr(input_ + "/c.jsonl:20: "));
}

TEST_F(BadRecordsTest, FailPolicyFailsTheJobNamingFileAndLine) {
  // Parallelism 1: one source reads a.jsonl, b.jsonl, c.jsonl in order, so b.jsonl:5 is the
  // first malformed line it meets.
  auto run = RunJob(*cluster_,
                    {"--job", "tumbling-count", "--input", input_, "--output",
                     dir_.path() + "/out-fail", "--parallelism", "1", "--on-bad-record", "fail"},
                    Duration::Seconds(60));
  ASSERT_OK(run);
  EXPECT_EQ(run->cli.exit_code, 1) << run->cli.out << run->cli.err;
  EXPECT_EQ(run->job.value("state", ""), "FAILED") << run->job.dump();
  EXPECT_THAT(run->job.value("failure", ""), HasSubstr(input_ + "/b.jsonl:5: "));
  EXPECT_THAT(run->cli.out, HasSubstr("b.jsonl:5"));
}

TEST(FailurePathsTest, PeerWithAnotherProtocolVersionGetsAnErrorReply) {
  TestDir dir;
  // A plain (keyless) peer: only an --insecure coordinator lets it speak at all.
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 0, .insecure = true});
  ASSERT_OK(cluster);
  zmq::context_t ctx(1);
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::rcvtimeo, 10'000);
  dealer.connect((*cluster)->endpoint());
  // A well-formed StatusRequest, but stamped with protocol version 99.
  std::string frame = EncodeControlMessage(StatusRequest{});
  uint32_t version = 99;
  std::memcpy(frame.data(), &version, sizeof(version));
  ASSERT_TRUE(dealer.send(zmq::buffer(frame), zmq::send_flags::none));
  zmq::message_t reply;
  ASSERT_TRUE(dealer.recv(reply, zmq::recv_flags::none)) << "no reply within 10 s";

  auto decoded = DecodeControlMessage(
      std::string_view(static_cast<const char*>(reply.data()), reply.size()), "the coordinator");
  ASSERT_OK(decoded);
  ASSERT_TRUE(std::holds_alternative<Reply>(*decoded)) << ControlMessageName(*decoded);
  const Reply& r = std::get<Reply>(*decoded);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.message, HasSubstr("speaks control protocol version 99"));
  EXPECT_THAT(r.message,
              HasSubstr("this process speaks version " + std::to_string(kControlProtocolVersion)));
  EXPECT_THAT(r.message, HasSubstr("run the same keyflow version on all hosts"));
  EXPECT_THAT(ReadFileOrEmpty((*cluster)->CoordinatorLog()),
              HasSubstr("undecodable control message"));
  // The coordinator keeps serving well-behaved peers.
  auto st = (*cluster)->StatusJson();
  EXPECT_OK(st);
}

}  // namespace
}  // namespace keyflow::test
