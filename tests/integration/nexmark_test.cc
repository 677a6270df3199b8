// The Nexmark queries that run today (worker/jobs/nexmark: q0, q1, q2, graphs without a KeyBy)
// on a real cluster, reading the library's `nexmark` source with checkpoints on: the committed
// output is compared with references computed here from the generator's events
// (nexmark_generator.h), parsed as JSON and filtered and projected without keyflow code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"
#include "worker/jobs/nexmark/nexmark_generator.h"

namespace keyflow::test {
namespace {

constexpr int64_t kEvents = 20'000;
const std::string kNexmark =
    std::string(KEYFLOW_BINARY_DIR) + "/lib/keyflow/examples/libnexmark.so";

// Every bid of the first kEvents events (two splits), as parsed JSON.
std::vector<nlohmann::json> Bids() {
  NexmarkConfig config;
  config.events = kEvents;
  config.splits = 2;
  std::vector<nlohmann::json> bids;
  std::string json;
  for (int64_t g = 0; g < kEvents; ++g) {
    NexmarkEventJson(config, g, &json);
    nlohmann::json event = nlohmann::json::parse(json);
    if (event["event_type"] == 2) bids.push_back(event["bid"]);
  }
  return bids;
}

class NexmarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterOptions options;
    options.workers = 2;
    auto cluster = Cluster::Start(dir_.Subdir("cluster"), options);
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
  }

  // Runs query `q` over kEvents events, parallelism 2, 200 ms checkpoints; returns the output
  // columns `fields` of its committed output (OutputColumns).
  std::vector<std::string> Run(const std::string& q, const std::vector<std::string>& fields) {
    const std::string output = dir_.path() + "/" + q;
    auto run = RunJob(*cluster_,
                      {"--job-library", kNexmark, "--job", q, "--input",
                       "connector:nexmark:events=" + std::to_string(kEvents) + ",splits=2",
                       "--output", output, "--parallelism", "2", "--checkpoint-interval", "200ms"},
                      Duration::Seconds(120));
    EXPECT_OK(run);
    if (!run.ok()) return {};
    EXPECT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err << cluster_->LogExcerpts();
    EXPECT_EQ(run->job.value("state", ""), "FINISHED") << run->job.dump();
    EXPECT_EQ(run->job.value("records_in", int64_t{-1}), kEvents) << run->job.dump();
    auto lines = OutputColumns(output, fields);
    EXPECT_OK(lines);
    return lines.ok() ? *lines : std::vector<std::string>{};
  }

  // The sorted columns `fields` of `rows`.
  static std::vector<std::string> Columns(const std::vector<nlohmann::json>& rows,
                                          const std::vector<std::string>& fields) {
    std::vector<std::string> lines;
    for (const nlohmann::json& row : rows) {
      auto joined = JoinedColumns(row, fields);
      EXPECT_OK(joined);
      if (joined.ok()) lines.push_back(*joined);
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(NexmarkTest, TheQueriesWithoutAKeyByAreExact) {
  const std::vector<nlohmann::json> bids = Bids();
  ASSERT_EQ(bids.size(), static_cast<size_t>(kEvents / 50 * 46)) << "46 of every 50 are bids";

  const std::vector<std::string> q0 = {"auction", "bidder", "price", "dateTime", "extra"};
  EXPECT_TRUE(SameLines(Run("q0", q0), Columns(bids, q0))) << "q0";

  std::vector<nlohmann::json> in_euro;
  for (const nlohmann::json& bid : bids) {
    nlohmann::json row = bid;
    row["price"] = static_cast<double>(bid["price"].get<int64_t>() * 908) / 1000.0;
    in_euro.push_back(row);
  }
  EXPECT_TRUE(SameLines(Run("q1", q0), Columns(in_euro, q0))) << "q1";

  std::vector<nlohmann::json> selected;
  for (const nlohmann::json& bid : bids) {
    if (bid["auction"].get<int64_t>() % 123 == 0) selected.push_back(bid);
  }
  ASSERT_FALSE(selected.empty());
  const std::vector<std::string> q2 = {"auction", "price"};
  EXPECT_TRUE(SameLines(Run("q2", q2), Columns(selected, q2))) << "q2";
}

}  // namespace
}  // namespace keyflow::test
