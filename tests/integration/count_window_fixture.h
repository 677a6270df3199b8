// A test fixture for count-window jobs on a real two-worker cluster (RocksDB backend and
// incremental checkpoint tests): the cluster with fast failure detection, the `keyflow run`
// arguments, and waits on `keyflow status --json` with a deadline (nothing sleeps).
//
// Threading: the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"

namespace keyflow::test {

class CountWindowClusterTest : public ::testing::Test {
 protected:
  static constexpr int64_t kCount = 20;
  static constexpr int64_t kTimeoutMs = 2'000;
  static constexpr Duration kJobWait = Duration::Seconds(90);

  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ClusterOptions o;
    o.workers = 2;
    o.coordinator_args = {"--heartbeat-interval", "100ms", "--heartbeat-timeout", "2s"};
    auto c = Cluster::Start(dir_.Subdir("cluster"), o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::move(c).value();
  }

  // `keyflow run` of count-window (event time, kCount, kTimeoutMs) on `input` into `output`.
  static std::vector<std::string> CountWindowArgs(const std::string& input,
                                                  const std::string& output,
                                                  std::vector<std::string> extra) {
    return CountWindowRunArgs(input, output, kCount, kTimeoutMs, std::move(extra));
  }

  // Runs the CLI; expects exit code 0.
  CommandResult MustRun(const std::vector<std::string>& args) {
    auto r = cluster_->Cli(args, Duration::Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
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
    EXPECT_TRUE(st.ok()) << st.status().ToString() << cluster_->LogExcerpts();
    nlohmann::json job = st.ok() ? (*st)["job"] : nlohmann::json::object();
    EXPECT_TRUE(pred(job)) << "while waiting for " << what << ": " << job.dump() << "\n"
                           << cluster_->LogExcerpts();
    return job;
  }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
};

}  // namespace keyflow::test
