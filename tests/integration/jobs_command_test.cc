// `keyflow jobs` and the job-library checks of `keyflow run`, against the real binary: listing
// the built-in library and a test library (text and JSON), and the refusals, each exit 2 with
// one sentence before anything is submitted (no coordinator runs in these tests).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

const std::string kTestData =
    std::string(KEYFLOW_BINARY_DIR) + "/tests/common/job_library/testdata";

CommandResult Keyflow(std::vector<std::string> args) {
  args.insert(args.begin(), KeyflowBinary("keyflow"));
  auto r = RunCommand(args, Duration::Seconds(20));
  EXPECT_OK(r);
  return r.ok() ? *r : CommandResult{};
}

TEST(JobsCommandTest, ListsTheBuiltInJobs) {
  CommandResult r = Keyflow({"jobs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("/lib/keyflow/jobs/libkeyflow-builtin-jobs.so (keyflow SDK 0.1.0, "
                               "ABI 5)\n\ncount-window\n"));
  EXPECT_THAT(r.out,
              HasSubstr("  input: key field uid (string), timestamp field ts; reads fields: no "
                        "(key and timestamp only)\n"
                        "  --param count=<positive int>  (default 500)  records that close a "
                        "window\n"
                        "  --param timeout=<duration>  (default 12h)  window length after its "
                        "first record\n"
                        "  --param time=<choice: processing|event>  (default processing)  time "
                        "domain of the timeout\n\ntumbling-count\n"));
  EXPECT_THAT(r.out, HasSubstr("  --param size=<duration>  (default 1h)  window size\n"));
}

TEST(JobsCommandTest, ListsALibraryAsJson) {
  CommandResult r = Keyflow({"jobs", "--job-library", kTestData + "/libkf-test-jobs.so", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["library"], kTestData + "/libkf-test-jobs.so");
  EXPECT_EQ(j["abi_version"], 5);
  ASSERT_EQ(j["jobs"].size(), 5u);
  const nlohmann::json& all = j["jobs"][0];
  EXPECT_EQ(all["name"], "all-types");
  EXPECT_EQ(all["key_field"], "user");
  EXPECT_EQ(all["key_type"], "long");
  EXPECT_EQ(all["timestamp_field"], "time");
  EXPECT_EQ(all["reads_fields"], true);
  EXPECT_EQ(
      all["params"][5],
      nlohmann::json(
          {{"name", "gap"}, {"type", "duration"}, {"default", "30min"}, {"doc", "a duration"}}));
  EXPECT_EQ(all["params"][6]["choices"], nlohmann::json({"fast", "slow"}));
  EXPECT_EQ(j["jobs"][1]["params"], nlohmann::json::array());
}

TEST(JobsCommandTest, RefusesLibrariesThatCannotBeLoaded) {
  CommandResult r = Keyflow({"jobs", "--job-library", kTestData + "/libmissing.so"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "keyflow: job library " + kTestData +
                       "/libmissing.so does not exist: give the path of the lib<name>.so that "
                       "keyflow_add_job built\n");
  r = Keyflow({"jobs", "--job-library", kTestData + "/libkf-other-abi.so"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "keyflow: " + kTestData +
                       "/libkf-other-abi.so was built with keyflow SDK ABI 99 (keyflow 0.99.0); "
                       "this keyflow 0.1.0 speaks SDK ABI 5: rebuild the library against this "
                       "installation\n");
  r = Keyflow({"jobs", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(JobsCommandTest, RunChecksJobAndParamsAgainstTheLibraryBeforeSubmitting) {
  // Port 1: nothing listens there; every case must fail before contacting a coordinator.
  const std::vector<std::string> base = {"run", "--coordinator", "tcp://127.0.0.1:1", "--input",
                                         "gen:events=10,keys=2,splits=1,seed=1"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return Keyflow(args);
  };
  CommandResult r = run({"--job", "nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "keyflow: job library libkeyflow-builtin-jobs.so has no job 'nope'; its jobs are: "
            "count-window, tumbling-count (keyflow jobs lists them with their parameters)\n");
  r = run({"--job", "count-window", "--param", "count=0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "keyflow: parameter count=0 must be a positive whole number\n");
  r = run({"--job", "all-types", "--job-library", kTestData + "/libkf-test-jobs.so", "--param",
           "d=abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "keyflow: parameter d=abc must be a finite number, e.g. 0.25\n");
  r = run({"--job", "count-window", "--job-library", kTestData + "/libkf-no-entry-point.so"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is not a keyflow job library"));
}

// The job's declared input defaults (key field "user" as a long, timestamp field "time") and
// reads_fields reach the workers: echo emits key, timestamp and a field of every record.
TEST(JobsCommandTest, RunUsesTheJobsInputDefaultsAndShipsItsFields) {
  TestDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string input = dir.Subdir("input") + "/events.jsonl";
  {
    std::ofstream f(input);
    f << "{\"user\":7,\"time\":1000,\"page\":\"a\"}\n"
      << "{\"time\":1001,\"user\":8,\"uid\":\"x\",\"page\":\"b\"}\n";
  }
  ClusterOptions options;
  options.workers = 1;
  auto cluster = Cluster::Start(dir.Subdir("cluster"), options);
  ASSERT_OK(cluster);
  const std::string output = dir.path() + "/output";
  auto run = RunJob(**cluster,
                    {"--job-library", kTestData + "/libkf-test-jobs.so", "--job", "echo", "--input",
                     input, "--output", output, "--parallelism", "1"},
                    Duration::Seconds(60));
  ASSERT_OK(run);
  ASSERT_EQ(run->job.value("state", ""), "FINISHED")
      << run->job.dump() << (*cluster)->LogExcerpts();
  auto out = ReadJobOutput(output);
  ASSERT_OK(out);
  std::vector<std::string> lines;
  for (const nlohmann::json& l : out->lines) lines.push_back(l.dump());
  EXPECT_TRUE(
      SameLines(lines, {R"({"key":7,"page":"a","ts":1000})", R"({"key":8,"page":"b","ts":1001})"}));
}

}  // namespace
}  // namespace keyflow::test
