// Records with fields end to end (issue 10, requirement 1): a job that reads fields
// (testdata/field_jobs.cc, reads_fields = true) runs on a real coordinator and two workers; the
// sources parse each line once, the field tapes cross the shuffle between processes, and the
// function's typed reads agree with an independent JSON parser (nlohmann) of the same line.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"

namespace keyflow::test {
namespace {

#ifdef KEYFLOW_FIELD_JOBS_LIBRARY

constexpr Duration kJobTimeout = Duration::Seconds(60);

class RecordFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ClusterOptions options;
    options.workers = 2;
    auto cluster = Cluster::Start(dir_.Subdir("cluster"), options);
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_ = std::move(cluster).value();
  }

  // Runs fields-echo on `input` at parallelism 2 and returns its output lines.
  std::vector<nlohmann::json> Echo(const std::string& input) {
    const std::string output = dir_.path() + "/output-" + std::to_string(++runs_);
    auto run = RunJob(*cluster_,
                      {"--job-library", KEYFLOW_FIELD_JOBS_LIBRARY, "--job", "fields-echo",
                       "--input", input, "--parallelism", "2", "--output", output},
                      kJobTimeout);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    if (!run.ok()) return {};
    if (!run->job.is_object()) {
      ADD_FAILURE() << "no job: " << run->cli.out << run->cli.err;
      return {};
    }
    EXPECT_EQ(run->job.value("state", ""), "FINISHED")
        << run->job.dump() << cluster_->LogExcerpts();
    auto out = ReadJobOutput(output);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? out->lines : std::vector<nlohmann::json>{};
  }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
  int runs_ = 0;
};

TEST_F(RecordFieldsTest, FileRecordsReachTheFunctionWithEveryField) {
  const std::string input = dir_.Subdir("input") + "/events.jsonl";
  std::map<std::string, int> expected_raw;  // input line, parsed and dumped -> occurrences
  {
    std::ofstream f(input);
    for (int i = 0; i < 300; ++i) {
      std::string line =
          "{\"uid\":\"u" + std::to_string(i % 7) + "\",\"ts\":" + std::to_string(1000 + i);
      if (i % 5 != 0) line += ",\"amount\":" + std::to_string(i * 3 - 400);
      line += ",\"address\":{\"zip\":" + std::to_string(i) + ",\"city\":\"c\\u00e9" +
              std::to_string(i % 4) + "\"}";
      line += ",\"tags\":[" + std::string(i % 4 == 0 ? "" : "1") +
              std::string(i % 4 >= 2 ? ",[2]" : "") + std::string(i % 4 == 3 ? ",{}" : "") + "]";
      if (i % 2 == 0) line += ",\"nothing\":null";
      line += "}";
      f << line << "\n";
      ++expected_raw[nlohmann::json::parse(line).dump()];
    }
  }
  std::vector<nlohmann::json> lines = Echo(input);
  ASSERT_EQ(lines.size(), 300u);
  for (const nlohmann::json& out : lines) {
    // raw_json() is the line as compact JSON (escapes normalised): the same JSON value.
    const std::string raw = out.value("raw", std::string());
    const nlohmann::json in = nlohmann::json::parse(raw);  // the independent reference
    ASSERT_EQ(expected_raw.count(in.dump()), 1u) << "raw_json() is no input line: " << out.dump();
    if (--expected_raw[in.dump()] == 0) expected_raw.erase(in.dump());
    EXPECT_EQ(out.value("key", std::string()), in["uid"].get<std::string>());
    EXPECT_EQ(out.value("ts", int64_t{-1}), in["ts"].get<int64_t>());
    if (in.contains("amount")) {
      EXPECT_EQ(out.value("amount", int64_t{-1}), in["amount"].get<int64_t>()) << raw;
    } else {
      EXPECT_EQ(out.value("amount_error", std::string()), "field 'amount' is missing") << raw;
    }
    EXPECT_EQ(out.value("city", std::string()), in["address"]["city"].get<std::string>());
    EXPECT_EQ(out.value("tags", int64_t{-1}), static_cast<int64_t>(in["tags"].size()));
    EXPECT_EQ(out.value("missing_is_null", false), in.contains("nothing")) << raw;
  }
  EXPECT_TRUE(expected_raw.empty());
}

TEST_F(RecordFieldsTest, GeneratedRecordsCarryAmountAndNote) {
  std::vector<nlohmann::json> lines = Echo("gen:events=3000,keys=40,splits=4,seed=11,note=30");
  ASSERT_EQ(lines.size(), 3000u);
  int64_t sum = 0;
  for (const nlohmann::json& out : lines) {
    const nlohmann::json in = nlohmann::json::parse(out.value("raw", std::string("{}")));
    ASSERT_TRUE(in.contains("amount")) << out.dump();
    EXPECT_EQ(out.value("key", std::string()), in["uid"].get<std::string>());
    EXPECT_EQ(out.value("ts", int64_t{-1}), in["ts"].get<int64_t>());
    EXPECT_EQ(out.value("amount", int64_t{-1}), in["amount"].get<int64_t>());
    EXPECT_EQ(in["note"].get<std::string>().size(), 30u);
    sum += in["amount"].get<int64_t>();
  }
  EXPECT_GT(sum, 0);
}

#endif  // KEYFLOW_FIELD_JOBS_LIBRARY

}  // namespace
}  // namespace keyflow::test
