// A test fixture for count-window jobs on a real two-worker cluster (RocksDB backend and
// incremental checkpoint tests): the cluster with fast failure detection, the `keyflow run`
// arguments and reference output, waits on `keyflow status --json` with a deadline (nothing
// sleeps), and the steps of the kill-a-worker-then-rescale runs.
//
// Threading: the test's thread.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {

class CountWindowClusterTest : public ::testing::Test {
 protected:
  static constexpr int64_t kCount = 20;
  static constexpr int64_t kTimeoutMs = 2'000;
  static constexpr Duration kJobWait = Duration::Seconds(90);
  // About 6 s of input at 4000 events/s: long enough to kill a worker and rescale mid-run.
  static constexpr char kSixSecondsOfInput[] =
      "gen:events=24000,keys=600,splits=2,seed=11,skew=1,rate=4000";

  // Workers of the cluster (slots 0..N-1); a fixture may want more.
  virtual int Workers() const { return 2; }
  // A fixture's changes to the cluster's options (e.g. a worker's environment).
  virtual void Configure(ClusterOptions*) const {}

  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ClusterOptions o;
    o.workers = Workers();
    // A killed worker's respawn takes its slot over at once (two missed heartbeats), so the
    // timeout only decides when a stalled machine (seen: 3 s on 2 loaded cores) counts a live
    // worker as lost and aborts the checkpoint a test waits for: 5 s, not 2.
    o.coordinator_args = {"--heartbeat-interval", "100ms", "--heartbeat-timeout", "5s"};
    Configure(&o);
    auto c = Cluster::Start(dir_.Subdir("cluster"), o);
    ASSERT_OK(c);
    cluster_ = std::move(c).value();
  }

  // `keyflow run` of count-window (event time, kCount, kTimeoutMs) on `input` into `output`.
  static std::vector<std::string> CountWindowArgs(const std::string& input,
                                                  const std::string& output,
                                                  std::vector<std::string> extra) {
    return CountWindowRunArgs(input, output, kCount, kTimeoutMs, std::move(extra));
  }

  // What a failure-free run of CountWindowArgs(input, ...) commits (ReferenceCountWindowRun).
  static std::vector<std::string> Reference(const std::string& input) {
    return ReferenceCountWindowRun(input, kCount, kTimeoutMs);
  }

  // Runs the CLI; expects exit code 0.
  CommandResult MustRun(const std::vector<std::string>& args) {
    auto r = cluster_->Cli(args, Duration::Seconds(60));
    EXPECT_OK(r);
    if (!r.ok()) return CommandResult{};
    EXPECT_EQ(r->exit_code, 0) << ::testing::PrintToString(args) << "\n"
                               << r->out << r->err << cluster_->LogExcerpts();
    return *r;
  }

  // Waits until `pred` holds for the status's job (or the job ended); expects `pred`.
  nlohmann::json WaitForJob(const std::function<bool(const nlohmann::json&)>& pred,
                            const std::string& what) {
    auto st = cluster_->WaitForStatus(
        [&](const nlohmann::json& s) {
          if (!s["job"].is_object()) return false;
          const std::string state = s["job"].value("state", "");
          return pred(s["job"]) || state == "FAILED" || state == "CANCELED" || state == "FINISHED";
        },
        kJobWait, what);
    EXPECT_OK(st) << st.status().ToString() << cluster_->LogExcerpts();
    nlohmann::json job = st.ok() ? (*st)["job"] : nlohmann::json::object();
    EXPECT_TRUE(pred(job)) << "while waiting for " << what << ": " << job.dump() << "\n"
                           << cluster_->LogExcerpts();
    return job;
  }

  // Waits until the committed count-window output in `output` is exactly `expected` (checkpoints
  // commit it); expects that.
  void WaitForCountWindowOutput(const std::string& output, const std::vector<std::string>& expected,
                                const std::string& what) {
    ASSERT_FALSE(expected.empty());
    Result<std::vector<std::string>> actual = std::vector<std::string>{};
    auto st = cluster_->WaitForStatus(
        [&](const nlohmann::json&) {
          actual = CanonicalCountWindowOutput(output);
          return actual.ok() && *actual == expected;
        },
        Duration::Seconds(60), what);
    ASSERT_OK(actual);
    EXPECT_TRUE(SameLines(*actual, expected)) << what << "\n" << cluster_->LogExcerpts();
  }

  // `keyflow stop`, then waits until the job is CANCELED; the savepoint directory it printed
  // ("job stopped with savepoint N: DIR ..."), or "" after a test failure.
  std::string StopWithSavepoint() {
    CommandResult stopped = MustRun({"stop"});
    std::smatch m;
    EXPECT_TRUE(
        std::regex_search(stopped.out, m, std::regex("job stopped with savepoint [0-9]+: (\\S+) ")))
        << stopped.out;
    WaitForJob([](const nlohmann::json& j) { return j.value("state", "") == "CANCELED"; },
               "the stop");
    return m.empty() ? std::string() : std::string(m[1]);
  }

  // SIGKILLs worker `slot`, starts it again and waits until the job runs a new attempt restored
  // from a checkpoint; `job`: the job's status then.
  void KillAndRestartWorker(int slot, nlohmann::json* job) {
    auto killed = cluster_->KillWorker(slot);
    ASSERT_OK(killed);
    ASSERT_OK(cluster_->StartWorker(slot));
    *job = WaitForJob(
        [](const nlohmann::json& j) {
          return j.value("attempt", 0) >= 2 && j.value("state", "") == "RUNNING" &&
                 j.value("restored_from", 0) > 0;
        },
        "the restarted attempt");
  }

  // `keyflow rescale 1` of the running `attempt`, then waits for the job to finish in the next
  // attempt at parallelism 1; returns the job's final status.
  nlohmann::json RescaleToOneUntilTheEnd(int attempt) {
    CommandResult rescaled = MustRun({"rescale", "1", "--timeout", "60s"});
    EXPECT_THAT(rescaled.out, ::testing::HasSubstr("runs at parallelism 1"));
    nlohmann::json job = WaitForJob(
        [](const nlohmann::json& j) { return j.value("state", "") == "FINISHED"; }, "the end");
    EXPECT_EQ(job.value("attempt", 0), attempt + 1);
    EXPECT_EQ(job.value("parallelism", 0), 1);
    return job;
  }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
};

}  // namespace keyflow::test
