// Process-level tests of the built-in keyed jobs: a real coordinator and 3 workers run
// count-window (event time) and tumbling-count over JSON Lines files at parallelism 1 and 3, and
// the results are compared with a reference computed here from the job specification.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "common/key.h"
#include "common/key_group_assignment.h"
#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

constexpr Duration kJobTimeout = Duration::Seconds(90);

class KeyedJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    input_dir_ = dir_.Subdir("input");
    auto input = WriteJsonLinesInput(input_dir_, JsonLinesInputOptions{});
    ASSERT_OK(input);
    input_ = std::move(input).value();
    auto cluster = Cluster::Start(dir_.Subdir("cluster"), ClusterOptions{});
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
  }

  struct Finished {
    std::vector<nlohmann::json> lines;
    std::vector<std::string> canonical;  // sorted
  };

  // Runs the job at parallelism `p` to completion and checks what holds for every keyed job:
  // FINISHED, every record read and processed, none late or malformed, one result file per
  // subtask, every result emitted by the subtask that owns its key's key group.
  void RunAndCheck(const std::string& job, std::vector<std::string> params, int p,
                   Result<std::string> (*canonical)(const nlohmann::json&), Finished* result) {
    std::string output = dir_.path() + "/output-" + job + "-p" + std::to_string(p);
    std::vector<std::string> args = {"--job",    job,    "--input",       input_dir_,
                                     "--output", output, "--parallelism", std::to_string(p)};
    for (const std::string& param : params) args.insert(args.end(), {"--param", param});
    auto run = RunJob(*cluster_, args, kJobTimeout);
    ASSERT_OK(run);
    ASSERT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err << cluster_->LogExcerpts();
    const nlohmann::json& st = run->job;
    ASSERT_EQ(st.value("state", ""), "FINISHED") << st.dump();
    EXPECT_EQ(st.value("parallelism", 0), p);
    EXPECT_EQ(st.value("records_in", int64_t{-1}), input_.total_records);
    EXPECT_EQ(st.value("records_processed", int64_t{-1}), input_.total_records);
    EXPECT_EQ(st.value("late_records", int64_t{-1}), 0);
    EXPECT_EQ(st.value("bad_records", int64_t{-1}), 0);
    EXPECT_NE(run->cli.out.find("FINISHED"), std::string::npos) << run->cli.out;

    auto out = ReadJobOutput(output);
    ASSERT_OK(out);
    EXPECT_EQ(static_cast<int>(out->files.size()), p) << "one final part file per subtask";
    EXPECT_EQ(st.value("records_out", int64_t{-1}), static_cast<int64_t>(out->lines.size()));

    const int32_t max_parallelism = st.value("max_parallelism", 0);
    ASSERT_GT(max_parallelism, 0);
    int wrong_owner = 0;
    for (const nlohmann::json& line : out->lines) {
      auto c = canonical(line);
      ASSERT_OK(c);
      result->canonical.push_back(*c);
      std::string key = line.value("key", "");
      auto kg = AssignToKeyGroup(Key::FromBytes(key), KeyType::kString, max_parallelism);
      ASSERT_OK(kg);
      SubtaskIndex owner = ComputeOperatorIndexForKeyGroup(max_parallelism, p, *kg);
      if (line.value("subtask", -1) != owner.value() && ++wrong_owner <= 5) {
        ADD_FAILURE() << "key " << key << " (key group " << kg->value() << " of " << max_parallelism
                      << ") belongs to subtask " << owner.value()
                      << " but was emitted by: " << line.dump();
      }
    }
    EXPECT_EQ(wrong_owner, 0);
    std::sort(result->canonical.begin(), result->canonical.end());
    result->lines = std::move(out->lines);
  }

  TestDir dir_;
  std::string input_dir_;
  JsonLinesInput input_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(KeyedJobsTest, CountWindowEventTimeIsExactAndIdenticalAtParallelismOneAndThree) {
  constexpr int64_t kCount = 50;
  constexpr int64_t kTimeoutMs = 10'000;
  const std::vector<std::string> params = {"count=50", "timeout=10s", "time=event"};
  std::vector<std::string> reference = ReferenceCountWindow(input_.records, kCount, kTimeoutMs);
  std::map<std::string, int> causes;
  for (const std::string& line : reference) causes[line.substr(line.rfind('|') + 1)]++;
  ASSERT_GT(causes["count"], 100) << "the input must close windows by count (hot keys)";
  ASSERT_GT(causes["timeout"], 100) << "the input must close windows by timeout (cold keys)";

  Finished p1, p3;
  ASSERT_NO_FATAL_FAILURE(RunAndCheck("count-window", params, 1, CanonicalCountWindow, &p1));
  ASSERT_NO_FATAL_FAILURE(RunAndCheck("count-window", params, 3, CanonicalCountWindow, &p3));

  EXPECT_EQ(CountsPerKey(p1.lines), RecordsPerKey(input_.records));
  EXPECT_EQ(CountsPerKey(p3.lines), RecordsPerKey(input_.records));
  for (const nlohmann::json& line : p3.lines) {
    ASSERT_LE(line.value("count", int64_t{0}), kCount) << line.dump();
    ASSERT_NE(line.value("cause", ""), "end-of-input") << "event time closes windows by timer";
  }
  ExpectSameLines(p1.canonical, reference, "count-window P=1 vs reference");
  ExpectSameLines(p3.canonical, reference, "count-window P=3 vs reference");
  ExpectSameLines(p3.canonical, p1.canonical, "count-window P=3 vs P=1");
}

TEST_F(KeyedJobsTest, TumblingCountIsExactAndIdenticalAtParallelismOneAndThree) {
  constexpr int64_t kSizeMs = 5'000;
  std::vector<std::string> reference = ReferenceTumblingCount(input_.records, kSizeMs);

  Finished p1, p3;
  ASSERT_NO_FATAL_FAILURE(
      RunAndCheck("tumbling-count", {"size=5s"}, 1, CanonicalTumblingCount, &p1));
  ASSERT_NO_FATAL_FAILURE(
      RunAndCheck("tumbling-count", {"size=5s"}, 3, CanonicalTumblingCount, &p3));

  EXPECT_EQ(CountsPerKey(p1.lines), RecordsPerKey(input_.records));
  EXPECT_EQ(CountsPerKey(p3.lines), RecordsPerKey(input_.records));
  for (const nlohmann::json& line : p3.lines) {
    int64_t start = line.value("window_start", int64_t{1});
    ASSERT_EQ(start % kSizeMs, 0) << line.dump();
    ASSERT_EQ(line.value("window_end", int64_t{0}), start + kSizeMs) << line.dump();
  }
  ExpectSameLines(p1.canonical, reference, "tumbling-count P=1 vs reference");
  ExpectSameLines(p3.canonical, reference, "tumbling-count P=3 vs reference");
  ExpectSameLines(p3.canonical, p1.canonical, "tumbling-count P=3 vs P=1");
}

}  // namespace
}  // namespace keyflow::test
