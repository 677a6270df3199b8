// Multi-host: the coordinator and three workers in three network namespaces (three "hosts" on
// a private LAN), talking only over the namespaces' addresses (--bind, --data-host), run
// count-window to completion with exact per-key totals. Skipped when network namespaces are
// unavailable (not root, no iproute2).
#include <gtest/gtest.h>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/network_namespaces.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

TEST(MultiHostTest, CountWindowAcrossThreeNetworkNamespacesHasExactTotals) {
  auto ns = NetworkNamespaces::Create(3);
  if (!ns.ok() && ns.status().code() == StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "network namespaces unavailable: " << ns.status().message();
  }
  ASSERT_OK(ns);
  const NetworkNamespaces& hosts = **ns;

  TestDir dir;
  JsonLinesInputOptions input_options;
  input_options.files = 3;
  input_options.records_per_file = 20'000;
  input_options.cold_keys_per_file = 500;
  auto input = WriteJsonLinesInput(dir.Subdir("input"), input_options);
  ASSERT_OK(input);

  // Namespace 0 holds the coordinator and worker 0; namespaces 1 and 2 one worker each. The
  // file system is shared (like a shared mount on real hosts); the network is not.
  ClusterOptions options;
  options.coordinator_prefix = hosts.Exec(0);
  options.coordinator_bind = "tcp://" + hosts.address(0) + ":0";
  options.coordinator_host = hosts.address(0);
  options.cli_prefix = hosts.Exec(0);
  for (int i = 0; i < 3; ++i) {
    options.placement.push_back(WorkerPlacement{hosts.Exec(i), /*data_host=*/hosts.address(i),
                                                /*bind_host=*/hosts.address(i)});
  }
  {
    // The cluster is destroyed (its processes killed) before the namespaces are deleted.
    auto cluster = Cluster::Start(dir.Subdir("cluster"), options);
    ASSERT_OK(cluster);
    Cluster& c = **cluster;

    auto st = c.StatusJson();
    ASSERT_OK(st);
    for (const nlohmann::json& w : (*st)["workers"]) {
      int slot = w.value("slot", -1);
      ASSERT_GE(slot, 0);
      EXPECT_EQ(w.value("data_host", ""), hosts.address(slot)) << w.dump();
    }

    std::string output = dir.path() + "/output";
    auto run = RunJob(
        c,
        {"--job", "count-window", "--param", "time=event", "--param", "count=50", "--param",
         "timeout=10s", "--input", dir.path() + "/input", "--output", output, "--parallelism", "3"},
        Duration::Seconds(90));
    ASSERT_OK(run);
    ASSERT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err << c.LogExcerpts();
    EXPECT_EQ(run->job.value("state", ""), "FINISHED");
    EXPECT_EQ(run->job.value("records_in", int64_t{-1}), input->total_records);

    auto out = ReadJobOutput(output);
    ASSERT_OK(out);
    EXPECT_EQ(CountsPerKey(out->lines), RecordsPerKey(input->records));
    std::vector<std::string> canonical;
    for (const nlohmann::json& line : out->lines) {
      auto c = CanonicalCountWindow(line);
      ASSERT_OK(c);
      canonical.push_back(*c);
    }
    std::sort(canonical.begin(), canonical.end());
    EXPECT_TRUE(canonical == ReferenceCountWindow(input->records, 50, 10'000))
        << "count-window results differ from the reference";
  }
}

}  // namespace
}  // namespace keyflow::test
