// Jobs as dataflow graphs (JobDefinition::graph) on a real cluster: stateless operators chained
// into the source's task before a KeyBy on a field they compute, then a keyed stage. The
// committed output is checked against references computed here from the input, without keyflow
// code; graphs this version does not run, and graph functions that are not deterministic, are
// refused with a sentence before anything runs; a function that throws before the KeyBy fails
// the job naming its operator; records the KeyBy cannot key are bad records; the chained job
// gives the same output through a worker kill as without one; and graphs without a KeyBy (a
// stateless pipeline, a pass-through) are exact, also through a worker kill.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

const std::string kGraphJobs = KEYFLOW_GRAPH_JOBS_LIBRARY;
const Duration kJobTimeout = Duration::Seconds(120);
constexpr int64_t kStartMs = 1'700'000'000'000;

std::string Example(const std::string& name) {
  return std::string(KEYFLOW_BINARY_DIR) + "/lib/keyflow/examples/lib" + name + ".so";
}

std::string Str(int64_t v) {
  return std::to_string(v);
}

class GraphJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterOptions options;
    options.workers = 2;
    auto cluster = Cluster::Start(dir_.Subdir("cluster"), options);
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
  }

  // Writes `lines` as one JSON Lines file of a new input directory; returns the directory.
  std::string Input(const std::string& name, const std::vector<std::string>& lines) {
    const std::string in = dir_.Subdir(name);
    std::ofstream out(in + "/part-0.jsonl", std::ios::binary);
    for (const std::string& l : lines) out << l << "\n";
    return in;
  }

  // `keyflow run --wait` of `job` of `library` on `input`, parallelism 2, plus `extra`.
  JobRun Run(const std::string& library, const std::string& job, const std::string& input,
             const std::string& output, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--job-library", library, "--job",    job,
                                     "--input",       input,   "--output", output,
                                     "--parallelism", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto run = RunJob(*cluster_, args, kJobTimeout);
    EXPECT_OK(run);
    return run.ok() ? *run : JobRun{};
  }

  // `keyflow run` of graph-jobs' `job` with `args`: refused (exit 2) before anything runs.
  CommandResult Refused(const std::string& job, std::vector<std::string> args) {
    std::vector<std::string> cmd = {
        "run",      "--job-library",       kGraphJobs, "--job", job, "--input", dir_.path(),
        "--output", dir_.path() + "/never"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = cluster_->Cli(cmd);
    EXPECT_OK(r);
    if (!r.ok()) return {};
    EXPECT_EQ(r->exit_code, 2) << r->out << r->err;
    return *r;
  }

  // `keyflow run ... --wait` with `args` (whose --input holds ",hold=" + release()), 300 ms
  // checkpoints: SIGKILLs worker `worker` once a checkpoint completed, restarts it, releases the
  // input and waits for the CLI. The job's status afterwards (FINISHED after a restart, checked).
  nlohmann::json RunThroughAWorkerKill(std::vector<std::string> args, int worker) {
    args.insert(args.begin(), "run");
    for (const char* a : {"--parallelism", "2", "--checkpoint-interval", "300ms", "--wait"}) {
      args.emplace_back(a);
    }
    auto cli = cluster_->StartCli(args, dir_.path() + "/run.log");
    EXPECT_OK(cli);
    if (!cli.ok()) return {};
    auto running = cluster_->WaitForStatus(
        [](const nlohmann::json& s) {
          const nlohmann::json& job = s["job"];
          return job.is_object() && job.value("state", "") == "RUNNING" &&
                 job["checkpoints"].value("latest_completed", int64_t{0}) >= 1;
        },
        Duration::Seconds(60), "a completed checkpoint");
    EXPECT_OK(running) << cluster_->LogExcerpts();
    EXPECT_OK(cluster_->KillWorker(worker));
    EXPECT_OK(cluster_->StartWorker(worker)) << cluster_->LogExcerpts();
    EXPECT_OK(WriteFileAtomically(release(), ""));
    auto exit_code = cli->Wait(Duration::Seconds(180));
    EXPECT_OK(exit_code) << cluster_->LogExcerpts();
    if (exit_code.ok()) {
      EXPECT_EQ(*exit_code, 0) << ReadFileOrEmpty(dir_.path() + "/run.log.err")
                               << cluster_->LogExcerpts();
    }
    auto status = cluster_->StatusJson();
    EXPECT_OK(status);
    if (!status.ok()) return {};
    const nlohmann::json job = (*status)["job"];
    EXPECT_EQ(job.value("state", ""), "FINISHED") << job.dump();
    EXPECT_GE(job.value("restarts", 0), 1) << job.dump();
    return job;
  }
  std::string release() const { return dir_.path() + "/release"; }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
};

// spend-by-tier (worker/jobs/examples): Filter and Map before a KeyBy on the field the Map made.
TEST_F(GraphJobsTest, SpendByTierIsExact) {
  std::vector<std::string> lines;
  std::map<std::string, std::pair<int64_t, int64_t>> expected;  // tier|window_end -> count, sum
  for (int i = 0; i < 6000; ++i) {
    const int64_t ts = kStartMs + i * 3;
    std::string line = "{\"uid\":\"u" + Str(i % 37) + "\",\"ts\":" + Str(ts);
    if (i % 9 == 0) {
      line += ",\"amount\":null}";
    } else if (i % 13 == 0) {
      line += "}";
    } else {
      const int64_t amount = (i * 71) % 1100 - 100;
      line += ",\"amount\":" + Str(amount) + "}";
      const char* tier = amount < 0     ? "refund"
                         : amount < 300 ? "small"
                         : amount < 700 ? "medium"
                                        : "large";
      auto& agg = expected[std::string(tier) + "|" + Str(ts - ts % 1000 + 1000)];
      agg.first += 1;
      agg.second += amount;
    }
    lines.push_back(line);
  }
  std::vector<std::string> reference;
  for (const auto& [key, agg] : expected) {
    reference.push_back(key + "|" + Str(agg.first) + "|" + Str(agg.second));
  }
  std::sort(reference.begin(), reference.end());
  const std::string output = dir_.path() + "/out";
  JobRun run = Run(Example("spend-by-tier"), "spend-by-tier", Input("in", lines), output,
                   {"--param", "interval=1s"});
  EXPECT_EQ(run.cli.exit_code, 0) << run.cli.out << run.cli.err << cluster_->LogExcerpts();
  EXPECT_EQ(run.job.value("state", ""), "FINISHED") << run.job.dump();
  EXPECT_EQ(run.job.value("late_records", int64_t{-1}), 0) << run.job.dump();
  EXPECT_EQ(run.job.value("bad_records", int64_t{-1}), 0) << run.job.dump();
  auto actual = OutputColumns(output, {"tier", "window_end", "count", "sum"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, reference));
  // `keyflow status` shows the graph's tasks.
  auto status = cluster_->Cli({"status"});
  ASSERT_OK(status);
  EXPECT_THAT(status->out, HasSubstr("[source source-in -> filter with-amount -> map tier]"));
  EXPECT_THAT(status->out, HasSubstr("tier =hash(tier)=> window-sum"));
}

// A FlatMap emits several records per input record; each is keyed on its own. Behind the keyed
// stage a Filter and a Map run on what the function emits.
TEST_F(GraphJobsTest, OperatorsBeforeTheKeyByAndAfterTheKeyedStageAreExact) {
  std::vector<std::string> lines;
  std::map<std::string, int64_t> counts;
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "the", "mat", "é"};
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    for (int w = 0; w < i % 5; ++w) {
      const std::string& word = words[static_cast<size_t>((i + w * 3) % 7)];
      text += (w == 0 ? "" : " ") + word;
      if (word != "the") ++counts[word];
    }
    lines.push_back("{\"uid\":\"u" + Str(i % 11) + "\",\"ts\":" + Str(kStartMs + i) +
                    ",\"text\":\"" + text + "\"}");
  }
  counts["rare"] = 1;  // one record: dropped by "frequent"
  lines.push_back("{\"uid\":\"u\",\"ts\":" + Str(kStartMs) + ",\"text\":\"rare\"}");
  std::vector<std::string> reference;
  for (const auto& [word, n] : counts) {
    if (n >= 2) reference.push_back(word + "|" + Str(n) + "|" + Str(word.size()));
  }
  ASSERT_EQ(reference.size(), counts.size() - 1);
  const std::string output = dir_.path() + "/out";
  JobRun run = Run(kGraphJobs, "words", Input("in", lines), output);
  EXPECT_EQ(run.cli.exit_code, 0) << run.cli.out << run.cli.err << cluster_->LogExcerpts();
  auto actual = OutputColumns(output, {"w", "n", "bytes"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, reference));
}

// A record the KeyBy cannot key (its field missing or not an integer) is a bad record: skipped
// and counted, or the job fails naming it.
TEST_F(GraphJobsTest, ARecordWithoutItsKeyAfterTheOperatorsIsABadRecord) {
  std::vector<std::string> lines;
  std::map<int64_t, int64_t> counts;
  int64_t bad = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string line = "{\"uid\":\"u\",\"ts\":" + Str(kStartMs + i);
    if (i % 10 == 3) {
      ++bad;  // no "k"
    } else if (i % 10 == 7) {
      ++bad;
      line += ",\"k\":\"seven\"";
    } else if (i % 10 == 5) {
      line += ",\"k\":\"" + Str(i % 4) + "\"";  // a quoted integer is a long key
      ++counts[i % 4];
    } else {
      line += ",\"k\":" + Str(i % 4);
      ++counts[i % 4];
    }
    lines.push_back(line + "}");
  }
  const std::string in = Input("in", lines);
  std::vector<std::string> reference;
  for (const auto& [k, n] : counts) reference.push_back(Str(k) + "|" + Str(n));
  const std::string output = dir_.path() + "/out";
  JobRun skip = Run(kGraphJobs, "rekey", in, output);
  EXPECT_EQ(skip.cli.exit_code, 0) << skip.cli.out << skip.cli.err << cluster_->LogExcerpts();
  EXPECT_EQ(skip.job.value("bad_records", int64_t{-1}), bad) << skip.job.dump();
  auto actual = OutputColumns(output, {"k", "count"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, reference));

  JobRun fail = Run(kGraphJobs, "rekey", in, dir_.path() + "/out-fail",
                    {"--on-bad-record", "fail", "--restart-strategy", "none"});
  EXPECT_NE(fail.cli.exit_code, 0);
  EXPECT_EQ(fail.job.value("state", ""), "FAILED") << fail.job.dump();
  EXPECT_THAT(fail.job.value("failure", std::string()),
              HasSubstr("a record of job 'rekey' before its KeyBy ('count'): the key field 'k' "
                        "is missing (--on-bad-record fail)"));
}

TEST_F(GraphJobsTest, AThrowingOperatorBeforeTheKeyByFailsTheJobNamingIt) {
  const std::string in = Input("in", {"{\"uid\":\"u\",\"ts\":1,\"text\":\"fine\"}",
                                      "{\"uid\":\"u\",\"ts\":2,\"text\":\"boom\"}"});
  JobRun run = Run(kGraphJobs, "throws", in, dir_.path() + "/out", {"--restart-strategy", "none"});
  EXPECT_EQ(run.job.value("state", ""), "FAILED") << run.job.dump();
  EXPECT_THAT(run.job.value("failure", std::string()),
              HasSubstr("function of operator 'explode' of job 'throws' (libgraph-jobs.so) threw "
                        "std::runtime_error in Map: boom: boom"));
}

TEST_F(GraphJobsTest, AGraphThatDiffersOnTheWorkersFailsTheDeployment) {
  const std::string in = Input("in", {"{\"uid\":\"u\",\"ts\":1}"});
  JobRun run =
      Run(kGraphJobs, "unstable", in, dir_.path() + "/out", {"--restart-strategy", "none"});
  EXPECT_EQ(run.job.value("state", ""), "FAILED") << run.job.dump();
  EXPECT_THAT(run.job.value("failure", std::string()),
              HasSubstr("job 'unstable' of libgraph-jobs.so builds another graph on this worker "
                        "than at submit"));
  EXPECT_THAT(run.job.value("failure", std::string()),
              HasSubstr("its graph function must depend on its parameters only"));
}

// Refused at `keyflow run`, exit 2, with one sentence each: invalid graphs, graphs of a shape
// this version does not run yet, a graph function that throws, and key flags on a graph job.
TEST_F(GraphJobsTest, GraphsThatCannotRunAreRefusedAtRun) {
  const std::string shape = "' of libgraph-jobs.so builds an invalid graph: ";
  EXPECT_THAT(Refused("shape", {"--param", "shape=dangling"}).err,
              HasSubstr("job 'shape" + shape +
                        "the output of map 'lost' goes nowhere: add a Sink() behind it or remove "
                        "it"));
  EXPECT_THAT(Refused("shape", {"--param", "shape=unread-side-output"}).err,
              HasSubstr("job 'shape" + shape +
                        "side output 'late' of keyed-process 'count' is read by nobody"));
  EXPECT_THAT(Refused("shape", {"--param", "shape=two-stage"}).err,
              HasSubstr("job 'shape': the job's graph has more than one keyed stage "
                        "(keyed-process 'second'), which this version of keyflow does not run "
                        "yet"));
  EXPECT_THAT(Refused("shape", {"--param", "shape=two-sinks"}).err,
              HasSubstr("the job's graph has more than one sink (sink 'sink-copy')"));
  EXPECT_THAT(Refused("shape", {"--param", "shape=union"}).err,
              HasSubstr("the job's graph uses a union"));
  EXPECT_THAT(Refused("shape", {"--param", "shape=throws"}).err,
              HasSubstr("job 'shape' (libgraph-jobs.so) threw std::invalid_argument in graph: no "
                        "such shape: throws"));
  EXPECT_THAT(Refused("pass-no-fields", {}).err,
              HasSubstr("job 'pass-no-fields' has no KeyBy, so its records reach the sink as "
                        "their JSON fields, but its definition sets reads_fields = false: set "
                        "reads_fields = true"));
  EXPECT_THAT(Refused("words", {"--key-field", "word"}).err,
              HasSubstr("job 'words' is a graph: its KeyBy names the key field and type, so drop "
                        "--key-field and --key-type"));
  auto status = cluster_->StatusJson();
  ASSERT_OK(status);
  EXPECT_FALSE((*status)["job"].is_object()) << "nothing was submitted: " << status->dump();
}

// The chained job through a SIGKILL of a worker after a checkpoint: the committed output equals
// that of the same job without a failure (the generator's input is deterministic), with no
// window lost or repeated.
TEST_F(GraphJobsTest, AChainedJobGivesTheSameOutputThroughAWorkerKill) {
  const std::string gen = "gen:events=16000,keys=400,splits=2,seed=23,rate=5000";
  const std::vector<std::string> fields = {"tier", "window_end", "count", "sum"};
  const std::string calm = dir_.path() + "/calm";
  JobRun reference_run =
      Run(Example("spend-by-tier"), "spend-by-tier", gen, calm, {"--param", "interval=1s"});
  ASSERT_EQ(reference_run.cli.exit_code, 0) << reference_run.cli.err << cluster_->LogExcerpts();
  auto reference = OutputColumns(calm, fields);
  ASSERT_OK(reference);
  ASSERT_GT(reference->size(), 4u);

  const std::string output = dir_.path() + "/killed";
  const nlohmann::json job = RunThroughAWorkerKill(
      {"--job-library", Example("spend-by-tier"), "--job", "spend-by-tier", "--param",
       "interval=1s", "--input", gen + ",hold=" + release(), "--output", output},
      1);
  EXPECT_EQ(job.value("late_records", int64_t{-1}), 0) << job.dump();
  auto actual = OutputColumns(output, fields);
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, *reference));
}

// Without a KeyBy every operator runs in the source task and what it emits goes to the sink of
// the same subtask: one output record per word, each exactly once; the pass-through job writes
// every input record as it came.
TEST_F(GraphJobsTest, AGraphWithoutAKeyByIsExact) {
  std::vector<std::string> lines;
  std::vector<std::string> reference;
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "the", "mat", "é"};
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    for (int w = 0; w < i % 5; ++w) {
      const std::string& word = words[static_cast<size_t>((i + w * 3) % 7)];
      text += (w == 0 ? "" : " ") + word;
      if (word != "the") reference.push_back(word + "|" + Str(word.size()));
    }
    lines.push_back("{\"uid\":\"u" + Str(i % 11) + "\",\"ts\":" + Str(kStartMs + i) +
                    ",\"text\":\"" + text + "\"}");
  }
  std::sort(reference.begin(), reference.end());
  const std::string in = Input("in", lines);
  const std::string output = dir_.path() + "/out";
  JobRun run = Run(kGraphJobs, "lengths", in, output);
  EXPECT_EQ(run.cli.exit_code, 0) << run.cli.out << run.cli.err << cluster_->LogExcerpts();
  EXPECT_EQ(run.job.value("state", ""), "FINISHED") << run.job.dump();
  auto actual = OutputColumns(output, {"w", "len"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, reference));
  auto status = cluster_->Cli({"status"});
  ASSERT_OK(status);
  EXPECT_THAT(status->out, HasSubstr("[source source-in -> flat-map split -> filter not-the -> "
                                     "map length -> sink sink-out]"));

  const std::string passed = dir_.path() + "/passed";
  JobRun pass = Run(kGraphJobs, "pass", in, passed);
  EXPECT_EQ(pass.cli.exit_code, 0) << pass.cli.out << pass.cli.err << cluster_->LogExcerpts();
  auto copied = OutputColumns(passed, {"uid", "ts", "text"});
  ASSERT_OK(copied);
  std::vector<std::string> inputs;
  for (const std::string& l : lines) {
    const nlohmann::json j = nlohmann::json::parse(l);
    inputs.push_back(j["uid"].get<std::string>() + "|" + j["ts"].dump() + "|" +
                     j["text"].get<std::string>());
  }
  std::sort(inputs.begin(), inputs.end());
  EXPECT_TRUE(SameLines(*copied, inputs));
}

// The pass-through job through a SIGKILL of a worker after a checkpoint: every generated record
// is in the committed output exactly once.
TEST_F(GraphJobsTest, AGraphWithoutAKeyByIsExactlyOnceThroughAWorkerKill) {
  constexpr int64_t kEvents = 12000;
  const std::string output = dir_.path() + "/killed";
  RunThroughAWorkerKill(
      {"--job-library", kGraphJobs, "--job", "pass", "--input",
       "gen:events=" + Str(kEvents) + ",keys=300,splits=2,seed=5,rate=4000,hold=" + release(),
       "--output", output},
      0);
  auto actual = OutputColumns(output, {"uid", "ts", "amount", "note"});
  ASSERT_OK(actual);
  ASSERT_EQ(actual->size(), static_cast<size_t>(kEvents));
  std::set<std::string> distinct(actual->begin(), actual->end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kEvents)) << "a record written twice";
}

}  // namespace
}  // namespace keyflow::test
