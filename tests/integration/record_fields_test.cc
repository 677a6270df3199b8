// Records with fields end to end (issue 10, requirement 1): a job that reads fields
// (testdata/field_jobs.cc, reads_fields = true) runs on a real coordinator and two workers; the
// sources parse each line once, the field tapes cross the shuffle between processes, and the
// function's typed reads agree with an independent JSON parser (nlohmann) of the same line.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

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
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
  }

  // Runs `job` (default fields-echo) on `input` at parallelism 2 and returns its output lines.
  std::vector<nlohmann::json> Echo(const std::string& input, const std::string& job = "fields-echo",
                                   const std::vector<std::string>& extra = {}) {
    const std::string output = dir_.path() + "/output-" + std::to_string(++runs_);
    std::vector<std::string> args = {"--job-library", KEYFLOW_FIELD_JOBS_LIBRARY,
                                     "--job",         job,
                                     "--input",       input,
                                     "--parallelism", "2",
                                     "--output",      output};
    args.insert(args.end(), extra.begin(), extra.end());
    auto run = RunJob(*cluster_, args, kJobTimeout);
    EXPECT_OK(run);
    if (!run.ok()) return {};
    if (!run->job.is_object()) {
      ADD_FAILURE() << "no job: " << run->cli.out << run->cli.err;
      return {};
    }
    EXPECT_EQ(run->job.value("state", ""), "FINISHED")
        << run->job.dump() << cluster_->LogExcerpts();
    auto out = ReadJobOutput(output);
    EXPECT_OK(out);
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

// A job that declares its fields (JobDefinition::fields): the sources of both kinds ship only
// those, so raw_json() on the keyed side is the input object restricted to them.
TEST_F(RecordFieldsTest, DeclaredFieldsAreTheOnlyOnesThatTravel) {
  const std::string input = dir_.Subdir("input") + "/events.jsonl";
  std::map<std::string, int> expected_raw;  // projected input object, dumped -> occurrences
  {
    std::ofstream f(input);
    for (int i = 0; i < 200; ++i) {
      nlohmann::json line = {{"uid", "u" + std::to_string(i % 5)},
                             {"ts", 1000 + i},
                             {"note", std::string(50, 'n')},
                             {"address", {{"city", "c" + std::to_string(i % 3)}}}};
      if (i % 4 != 0) line["amount"] = i * 7 - 300;
      f << line.dump() << "\n";
      nlohmann::json projected = nlohmann::json::object();
      for (const char* kept : {"amount", "address"}) {
        if (line.contains(kept)) projected[kept] = line[kept];
      }
      ++expected_raw[projected.dump()];
    }
  }
  std::vector<nlohmann::json> lines = Echo(input, "projected-echo");
  ASSERT_EQ(lines.size(), 200u);
  for (const nlohmann::json& out : lines) {
    const std::string dumped = nlohmann::json::parse(out.value("raw", std::string())).dump();
    ASSERT_EQ(expected_raw.count(dumped), 1u) << "not a projected input line: " << out.dump();
    if (--expected_raw[dumped] == 0) expected_raw.erase(dumped);
  }
  EXPECT_TRUE(expected_raw.empty());

  // Generated records: {"amount":N} only, with the amounts of the full records.
  const std::string gen = "gen:events=2000,keys=30,splits=2,seed=5,note=40";
  std::multiset<std::tuple<std::string, int64_t, int64_t>> full, seen;  // key, ts, amount
  for (const nlohmann::json& out : Echo(gen)) {
    full.insert({out.value("key", std::string()), out.value("ts", int64_t{-1}),
                 out.value("amount", int64_t{-1})});
  }
  ASSERT_EQ(full.size(), 2000u);
  for (const nlohmann::json& out : Echo(gen, "projected-echo", {"--param", "fields=amount"})) {
    const nlohmann::json raw = nlohmann::json::parse(out.value("raw", std::string("{}")));
    ASSERT_EQ(raw.size(), 1u) << out.dump();
    seen.insert({out.value("key", std::string()), out.value("ts", int64_t{-1}),
                 raw.value("amount", int64_t{-1})});
  }
  EXPECT_EQ(seen, full);
}

// A declared field name must not be empty: refused at submit, before anything is deployed.
TEST(RecordFieldsSubmitTest, AnEmptyDeclaredFieldIsRefusedAtSubmit) {
  // Port 1: nothing listens there; the refusal comes before any contact.
  auto r = RunCommand(
      {KeyflowBinary("keyflow"), "run", "--coordinator", "tcp://127.0.0.1:1", "--input",
       "gen:events=10,keys=2,splits=1,seed=1", "--job-library", KEYFLOW_FIELD_JOBS_LIBRARY, "--job",
       "projected-echo", "--param", "fields=amount,,note"},
      Duration::Seconds(20));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_EQ(r->err,
            "keyflow: job 'projected-echo' declares an empty field name in its definition's "
            "`fields`; fix the job library\n");
}

// `keyflow jobs` shows the declared fields (with the default parameters); a job without a
// declaration ships every field and shows none.
TEST(RecordFieldsSubmitTest, JobsListsTheDeclaredFields) {
  auto json = RunCommand(
      {KeyflowBinary("keyflow"), "jobs", "--job-library", KEYFLOW_FIELD_JOBS_LIBRARY, "--json"},
      Duration::Seconds(20));
  ASSERT_OK(json);
  ASSERT_EQ(json->exit_code, 0) << json->err;
  std::map<std::string, nlohmann::json> jobs;
  const nlohmann::json listed = nlohmann::json::parse(json->out);
  for (const nlohmann::json& j : listed["jobs"]) jobs[j.value("name", "")] = j;
  EXPECT_EQ(jobs["projected-echo"]["fields"], nlohmann::json({"amount", "address"}));
  EXPECT_FALSE(jobs["fields-echo"].contains("fields"));
  auto text =
      RunCommand({KeyflowBinary("keyflow"), "jobs", "--job-library", KEYFLOW_FIELD_JOBS_LIBRARY},
                 Duration::Seconds(20));
  ASSERT_OK(text);
  EXPECT_NE(text->out.find("; reads fields: yes, only amount, address (its declared fields with "
                           "the default parameters)\n"),
            std::string::npos)
      << text->out;
}

#endif  // KEYFLOW_FIELD_JOBS_LIBRARY

}  // namespace
}  // namespace keyflow::test
