// The Kafka source (--input kafka:...) on a real two-worker cluster reading from
// keyflow-kafka-mock over TCP (or the Kafka of KEYFLOW_KAFKA_BOOTSTRAP): a bounded read of three
// partitions gives exactly the reference output and finishes; an unbounded read reads records
// produced while it runs, once each, across a worker SIGKILL and a rescale 2 -> 3 (the
// partitions come back from the checkpoint's offsets); a malformed value is skipped and named by
// topic, partition and offset; an unreachable broker or a missing topic is refused at submit.
//
// Input: the JSON Lines files of WriteJsonLinesInput, file f produced to partition f % 3 in
// order. Every key lives in one file, and a partition holds its files in event-time order, so
// no record is late and the output of count-window is known exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/kafka/consumer_lag.h"
#include "tests/integration/count_window_fixture.h"
#include "tests/integration/kafka_test_util.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kFiles = 6;
constexpr int kPartitions = 3;
constexpr int64_t kNeverMs = 1'000'000'000;  // no window closes by timeout

class KafkaSourceTest : public CountWindowClusterTest {
 protected:
  int Workers() const override { return 3; }  // jobs run at 2; a rescale goes to 3
  void SetUp() override {
    CountWindowClusterTest::SetUp();
    ASSERT_FALSE(HasFailure());
    ASSERT_OK_AND_ASSIGN(
        kafka_, TestKafkaCluster::Start(dir_.path(), 3, {"events:" + std::to_string(kPartitions)},
                                        {"no-such-topic"}));
    JsonLinesInputOptions o;
    o.files = kFiles;
    o.records_per_file = 2'000;
    o.cold_keys_per_file = 100;
    auto input = WriteJsonLinesInput(dir_.Subdir("input"), o);
    ASSERT_OK(input);
    input_ = *std::move(input);
    output_ = dir_.path() + "/out";
  }
  void TearDown() override {
    cluster_.reset();  // the workers go before the broker they read from
    kafka_.reset();
  }

  std::string Input(const std::string& extra = "") const {
    return "kafka:bootstrap=" + Semicolons(kafka_->bootstrap()) + ",topic=events" + extra;
  }
  static std::string Semicolons(std::string s) {
    std::replace(s.begin(), s.end(), ',', ';');
    return s;
  }

  // Produces the lines of file `f` to partition f % kPartitions, in order.
  void ProduceFile(int f) {
    KafkaProduceLines(kafka_->bootstrap(), "events", f % kPartitions,
                      input_.files[static_cast<size_t>(f)]);
    produced_.insert(f);
  }

  // The records of the files produced so far.
  KeyedTimestamps Produced() const {
    KeyedTimestamps in;
    for (const auto& [key, ts] : input_.records) {
      const int n = std::stoi(key.substr(key.find('-') + 1));
      if (produced_.count(n % kFiles) != 0) in[key] = ts;
    }
    return in;
  }

  // count-window over the topic, unbounded, no window closing by timeout, P = 2, into output_.
  void SubmitUnbounded() {
    ASSERT_OK(SubmitJob(*cluster_, CountWindowRunArgs(
                                       Input(), output_, kCount, kNeverMs,
                                       {"--parallelism", "2", "--checkpoint-interval", "300ms"}))
                  .status());
  }

  // Runs a keyflow-kafka-mock command; expects "ok".
  void MockCommand(const std::string& line) {
    ASSERT_OK_AND_ASSIGN(std::string answer, kafka_->Command(line));
    ASSERT_EQ(answer, "ok") << line;
  }

  std::vector<std::string> ClosedByCountSoFar() const {
    return ClosedByCount(ReferenceCountWindow(Produced(), kCount, kNeverMs));
  }

  std::unique_ptr<TestKafkaCluster> kafka_;
  JsonLinesInput input_;
  std::string output_;
  std::set<int> produced_;
};

TEST_F(KafkaSourceTest, ABoundedReadOfThreePartitionsGivesTheReferenceOutputAndFinishes) {
  for (int f = 0; f < kFiles; ++f) ProduceFile(f);
  ASSERT_FALSE(HasFailure());
  // A secret client property (unused by a PLAINTEXT connection) must not show anywhere.
  const std::string secret = "s3cr3t-v4lue";
  ASSERT_OK(SubmitJob(*cluster_,
                      CountWindowArgs(Input(",stop=latest,kafka.sasl.password=" + secret), output_,
                                      {"--parallelism", "2", "--checkpoint-interval", "300ms"}))
                .status());
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "FINISHED"; }, "the end");
  EXPECT_THAT(job.value("input", ""), HasSubstr("kafka.sasl.password=***"));
  EXPECT_EQ(job.dump().find(secret), std::string::npos) << job.dump();
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path() + "/cluster")) {
    if (entry.path().extension() != ".log") continue;
    EXPECT_EQ(ReadFileOrEmpty(entry.path()).find(secret), std::string::npos) << entry.path();
  }
  ExpectCountWindowOutput(output_, ReferenceCountWindow(input_.records, kCount, kTimeoutMs),
                          "the bounded read");
  EXPECT_EQ(job.value("late_records", -1), 0) << job.dump();
  EXPECT_EQ(job.value("bad_records", -1), 0) << job.dump();
  EXPECT_EQ(job["source"].value("kind", ""), "kafka") << job.dump();
  EXPECT_EQ(job["source"].value("splits", 0), kPartitions) << job.dump();
  EXPECT_EQ(job["source"].value("bounded", false), true) << job.dump();
}

// ts=kafka: the values carry no time field; the event time is each record's Kafka timestamp,
// and the output is exactly the reference output of the same records with their times in "ts".
TEST_F(KafkaSourceTest, WithTsKafkaTheEventTimeIsTheKafkaTimestamp) {
  for (int f = 0; f < kFiles; ++f) {
    KafkaProduceLinesWithKafkaTimestamps(kafka_->bootstrap(), "events", f % kPartitions,
                                         input_.files[static_cast<size_t>(f)]);
  }
  ASSERT_FALSE(HasFailure());
  ASSERT_OK(SubmitJob(*cluster_, CountWindowArgs(Input(",stop=latest,ts=kafka"), output_,
                                                 {"--parallelism", "2"}))
                .status());
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "FINISHED"; }, "the end");
  ExpectCountWindowOutput(output_, ReferenceCountWindow(input_.records, kCount, kTimeoutMs),
                          "times from the Kafka timestamps");
  EXPECT_EQ(job.value("late_records", -1), 0) << job.dump();
  EXPECT_EQ(job.value("bad_records", -1), 0) << job.dump();
  EXPECT_THAT(job.value("input", ""), HasSubstr(",ts=kafka"));
}

// ts=FIELD names this source's time field in place of the job's (the values carry their time in
// "event_time" and a string in "ts"); ts= naming the key field is refused at submit.
TEST_F(KafkaSourceTest, TsFieldReplacesTheJobsTimeFieldAndMayNotBeTheKey) {
  {
    TestKafkaHandle producer =
        KafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", kafka_->bootstrap()}});
    std::ifstream in(input_.files[0]);
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json value = nlohmann::json::parse(line);
      value["event_time"] = value["ts"];
      value["ts"] = "not the time";
      KafkaProduce(producer.get(), "events", 0, value.dump());
    }
    ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    produced_.insert(0);
  }
  auto refused = cluster_->Cli(CountWindowArgs(Input(",stop=latest,ts=uid"), output_, {}),
                               Duration::Seconds(60));
  ASSERT_OK(refused);
  EXPECT_EQ(refused->exit_code, 2) << refused->out << refused->err;
  EXPECT_THAT(refused->err, HasSubstr("ts=uid is the key field too"));
  ASSERT_OK(SubmitJob(*cluster_, CountWindowArgs(Input(",stop=latest,ts=event_time"), output_,
                                                 {"--parallelism", "1"}))
                .status());
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "FINISHED"; }, "the end");
  EXPECT_EQ(job.value("bad_records", -1), 0) << job.dump();
  ExpectCountWindowOutput(output_, ReferenceCountWindow(Produced(), kCount, kTimeoutMs),
                          "times from event_time");
}

// pattern=REGEX: every matching topic is read, one created while the job runs too (from its
// start, once discovered); a topic that does not match is not read.
TEST_F(KafkaSourceTest, APatternReadsTheMatchingTopicsAndOneCreatedWhileTheJobRuns) {
  if (!kafka_->is_mock()) GTEST_SKIP() << "creates topics through keyflow-kafka-mock";
  for (int f = 0; f < kPartitions; ++f) ProduceFile(f);
  ASSERT_FALSE(HasFailure());
  const std::string input = "kafka:bootstrap=" + Semicolons(kafka_->bootstrap()) +
                            ",pattern=events(-late)?,discovery=300ms";
  ASSERT_OK(SubmitJob(*cluster_,
                      CountWindowRunArgs(input, output_, kCount, kNeverMs,
                                         {"--parallelism", "2", "--checkpoint-interval", "300ms"}))
                .status());
  WaitForCountWindowOutput(output_, ClosedByCountSoFar(), "the records of topic events");
  MockCommand("create-topic events-later 1");  // does not match: never read
  KafkaProduceLines(kafka_->bootstrap(), "events-later", 0, input_.files[4]);
  MockCommand("create-topic events-late 1");
  KafkaProduceLines(kafka_->bootstrap(), "events-late", 0, input_.files[3]);
  produced_.insert(3);
  ASSERT_FALSE(HasFailure());
  WaitForCountWindowOutput(output_, ClosedByCountSoFar(), "with topic events-late");
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j["source"].value("splits", 0) == kPartitions + 1; },
      "4 partitions");
  EXPECT_EQ(job["source"].value("topic_pattern", ""), "events(-late)?") << job.dump();
  CommandResult status = MustRun({"status"});
  EXPECT_THAT(status.out, HasSubstr("Kafka topics matching /events(-late)?/: 4 partitions"));
  MustRun({"cancel"});
}

TEST_F(KafkaSourceTest, RecordsProducedWhileItRunsAreReadOnceAcrossAWorkerKillAndARescale) {
  for (int f = 0; f < 3; ++f) ProduceFile(f);
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(SubmitUnbounded());
  WaitForCountWindowOutput(output_, ClosedByCountSoFar(), "the records there at the start");
  ProduceFile(3);
  nlohmann::json job;
  KillAndRestartWorker(1, &job);
  ASSERT_FALSE(HasFailure());
  WaitForCountWindowOutput(output_, ClosedByCountSoFar(), "after the worker kill");
  // A rescale 2 -> 3 moves the partitions with their checkpointed offsets.
  CommandResult rescaled = MustRun({"rescale", "3", "--timeout", "60s"});
  EXPECT_THAT(rescaled.out, HasSubstr("runs at parallelism 3"));
  ProduceFile(4);
  ProduceFile(5);
  WaitForCountWindowOutput(output_, ClosedByCountSoFar(), "after the rescale");
  job = WaitForJob([](const nlohmann::json& j) { return j.value("state", "") == "RUNNING"; },
                   "running");
  EXPECT_EQ(job.value("late_records", -1), 0) << job.dump();
  EXPECT_EQ(job.value("parallelism", 0), 3);
  // Completed checkpoints commit their offsets to the group (for lag monitoring): once all is
  // read, the end of every partition (two files of records_per_file each).
  const std::map<int32_t, int64_t> end = {{0, 4'000}, {1, 4'000}, {2, 4'000}};
  std::map<int32_t, int64_t> committed;
  EXPECT_OK(WaitUntil(
      [&] {
        committed = KafkaCommittedOffsets(kafka_->bootstrap(), "keyflow", "events", kPartitions);
        return committed == end;
      },
      Duration::Seconds(30), "the group's committed offsets at the end of each partition"));
  EXPECT_EQ(committed, end);
  MustRun({"cancel"});
}

// The consumer lag: the end offset minus the group's committed offset, per partition (none
// committed: unknown), and the age of the oldest record behind, from the brokers; and on a running
// job, in its status, once completed checkpoints committed every record's offset: zero.
TEST_F(KafkaSourceTest, TheConsumerLagIsTheEndMinusTheGroupsCommittedOffset) {
  {
    TestKafkaHandle producer =
        KafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", kafka_->bootstrap()}});
    for (int i = 0; i < 10; ++i) KafkaProduce(producer.get(), "events", 0, "{}", 1'000 + i);
    ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    TestKafkaHandle consumer = KafkaClient(
        RD_KAFKA_CONSUMER, {{"bootstrap.servers", kafka_->bootstrap()}, {"group.id", "g"}});
    rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offsets, "events", 0)->offset = 4;
    EXPECT_EQ(rd_kafka_commit(consumer.get(), offsets, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(offsets);
  }
  ASSERT_OK_AND_ASSIGN(KafkaSourceSpec spec, KafkaSourceSpec::Parse(Input(",group=g")));
  ASSERT_OK_AND_ASSIGN(
      std::vector<KafkaPartitionLag> lag,
      MeasureKafkaLag(spec, {{"events", 0}, {"events", 1}}, Duration::Seconds(10), 61'004));
  // Partition 0's oldest record behind is offset 4, Kafka timestamp 1004: 60 s old at 61004.
  EXPECT_EQ(lag, (std::vector<KafkaPartitionLag>{{"events", 0, 4, 10, 60'000},
                                                 {"events", 1, -1, 0, -1}}));
  EXPECT_EQ(lag[0].records(), 6);
  EXPECT_EQ(lag[1].records(), -1);
}

TEST_F(KafkaSourceTest, ARunningJobsConsumerLagReachesZeroOnceCheckpointsCoverEveryRecord) {
  for (int f = 0; f < kPartitions; ++f) ProduceFile(f);
  ASSERT_FALSE(HasFailure());
  ASSERT_OK(SubmitJob(*cluster_,
                      CountWindowRunArgs(Input(",discovery=300ms"), output_, kCount, kNeverMs,
                                         {"--parallelism", "2", "--checkpoint-interval", "300ms"}))
                .status());
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) {
        const nlohmann::json& src = j["source"];
        if (!src.is_object() || src.value("lag_records", int64_t{-1}) != 0) return false;
        if (src.value("lag_ms", int64_t{-1}) != 0) return false;  // no record behind: 0 s
        if (src["lag"].size() != 3u) return false;
        for (const nlohmann::json& p : src["lag"]) {
          if (p.value("end", 0) != 2'000 || p.value("committed", 0) != 2'000) return false;
        }
        return true;
      },
      "a consumer lag of zero on each of the 3 partitions");
  CommandResult status = MustRun({"status"});
  EXPECT_THAT(status.out, HasSubstr("3 partitions, consumer lag 0 records"));
  MustRun({"cancel"});
}

TEST_F(KafkaSourceTest, AMalformedValueIsSkippedAndNamedByTopicPartitionAndOffset) {
  {
    TestKafkaHandle producer =
        KafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", kafka_->bootstrap()}});
    KafkaProduce(producer.get(), "events", 1, R"({"uid":"a","ts":1700000000000})");
    KafkaProduce(producer.get(), "events", 1, R"({"uid":"a","ts":)");
    KafkaProduce(producer.get(), "events", 1, R"({"uid":"a","ts":1700000000001})");
    ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  ASSERT_OK(SubmitJob(*cluster_, CountWindowRunArgs(Input(",stop=latest"), output_, 2, kNeverMs,
                                                    {"--parallelism", "1"}))
                .status());
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "FINISHED"; }, "the end");
  EXPECT_EQ(job.value("bad_records", -1), 1) << job.dump();
  ExpectCountWindowOutput(output_, {"a|2|1700000000000|1700000000001|count"}, "one window");
  EXPECT_THAT(cluster_->LogExcerpts(),
              HasSubstr("bad record skipped: topic events partition 1 offset 1: invalid JSON"));
}

// The brokers go away while the job runs (every one of them down, then the partition leaders
// move): the readers wait and reconnect, checkpoints go on, and the output is exact.
TEST_F(KafkaSourceTest, ABrokerOutageAndLeaderChangesLoseAndDuplicateNothing) {
  if (!kafka_->is_mock()) GTEST_SKIP() << "drives keyflow-kafka-mock's brokers";
  for (int f = 0; f < 2; ++f) ProduceFile(f);
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(SubmitUnbounded());
  WaitForCountWindowOutput(output_, ClosedByCountSoFar(), "before the outage");
  for (int broker = 1; broker <= 3; ++broker) {
    ASSERT_NO_FATAL_FAILURE(MockCommand("broker-down " + std::to_string(broker)));
  }
  // Checkpoints do not need the brokers: two complete while they are down.
  const int64_t seen =
      WaitForJob([](const nlohmann::json&) { return true; }, "status")["checkpoints"].value(
          "latest_completed", int64_t{0});
  nlohmann::json job = WaitForJob(
      [&](const nlohmann::json& j) {
        return j["checkpoints"].value("latest_completed", int64_t{0}) > seen + 1;
      },
      "two checkpoints during the outage");
  EXPECT_EQ(job.value("state", ""), "RUNNING");
  EXPECT_EQ(job.value("restarts", -1), 0) << "an outage is waited out, not a failure";
  for (int broker = 1; broker <= 3; ++broker) {
    ASSERT_NO_FATAL_FAILURE(MockCommand("broker-up " + std::to_string(broker)));
  }
  for (int p = 0; p < kPartitions; ++p) {
    ASSERT_NO_FATAL_FAILURE(
        MockCommand("leader events " + std::to_string(p) + " " + std::to_string(3 - p)));
  }
  for (int f = 2; f < kFiles; ++f) ProduceFile(f);
  WaitForCountWindowOutput(output_, ClosedByCountSoFar(), "after the outage and leader moves");
  job = WaitForJob([](const nlohmann::json& j) { return j.value("state", "") == "RUNNING"; },
                   "running");
  EXPECT_EQ(job.value("restarts", -1), 0);
  MustRun({"cancel"});
}

// Partition 2 gets no records. Without idleness it holds event time at its minimum forever: the
// last window of each key (closed only by the watermark) never closes. With idle=2s it stops
// counting and the watermark follows partitions 0 and 1; once those are read to their end they go
// idle too, and when every channel is idle the keyed subtasks flush the largest watermark seen
// (Flink's valve), so the job ends at max over partitions 0 and 1 — deterministically, whichever
// goes idle first — and exactly the windows whose deadline that passed close. The idle timeout
// must exceed any pause of a reader that still has records (a partition declared idle while its
// reader stalls lets the other one move event time past its records, which then arrive late):
// with 300 ms a loaded 2-core machine lost 206 windows that way (CI), hence 2 s.
TEST_F(KafkaSourceTest, AnEmptyPartitionStallsEventTimeUnlessPartitionsMayGoIdle) {
  for (int f : {0, 1, 3, 4}) ProduceFile(f);  // partitions 0 and 1 only
  ASSERT_FALSE(HasFailure());
  const KeyedTimestamps in = Produced();
  constexpr int64_t kNeverCount = 1'000'000;
  const std::vector<std::string> reference = ReferenceCountWindow(in, kNeverCount, kTimeoutMs);
  // The watermark once everything is read and idle: max over partitions 0 and 1 of their largest
  // timestamp, minus the default bound (1 s) and 1 ms.
  std::map<int, int64_t> max_ts;  // by file
  for (const auto& [key, ts] : in) {
    const int f = std::stoi(key.substr(key.find('-') + 1)) % kFiles;
    for (int64_t t : ts) max_ts[f] = std::max(max_ts[f], t);
  }
  const int64_t watermark = std::max(max_ts[3], max_ts[4]) - 1'000 - 1;
  // A key's last window closes only by the watermark; the others close at a later record.
  std::map<std::string, std::string> last;  // key -> its last window's line
  for (const std::string& line : reference) {
    const std::string key = line.substr(0, line.find('|'));
    const int64_t start = std::stoll(line.substr(line.find('|', key.size() + 1) + 1));
    auto it = last.find(key);
    if (it == last.end() ||
        std::stoll(it->second.substr(it->second.find('|', key.size() + 1) + 1)) < start) {
      last[key] = line;
    }
  }
  std::vector<std::string> by_records, with_idleness;
  for (const std::string& line : reference) {
    const std::string key = line.substr(0, line.find('|'));
    const bool is_last = last[key] == line;
    const int64_t time = std::stoll(line.substr(line.rfind('|', line.rfind('|') - 1) + 1));
    if (!is_last) by_records.push_back(line);
    if (!is_last || time <= watermark) with_idleness.push_back(line);
  }
  ASSERT_LT(by_records.size(), with_idleness.size());

  ASSERT_OK(SubmitJob(*cluster_,
                      CountWindowRunArgs(Input(), output_, kNeverCount, kTimeoutMs,
                                         {"--parallelism", "2", "--checkpoint-interval", "300ms"}))
                .status());
  WaitForCountWindowOutput(output_, by_records, "the windows closed by later records");
  // Everything is read and a checkpoint after that committed: still no window by watermark.
  const int64_t total = input_.total_records * 4 / kFiles;
  nlohmann::json job = WaitForJob(
      [&](const nlohmann::json& j) { return j.value("records_in", int64_t{0}) == total; },
      "every record read");
  const int64_t seen = job["checkpoints"].value("latest_completed", int64_t{0});
  job = WaitForJob(
      [&](const nlohmann::json& j) {
        return j["checkpoints"].value("latest_completed", int64_t{0}) > seen + 1;
      },
      "two more checkpoints");
  ExpectCountWindowOutput(output_, by_records, "without idleness");
  EXPECT_EQ(job.value("watermark", int64_t{0}), std::numeric_limits<int64_t>::min()) << job.dump();
  MustRun({"cancel"});
  WaitForJob([](const nlohmann::json& j) { return j.value("state", "") == "CANCELED"; },
             "the cancel");

  const std::string idle_output = dir_.path() + "/out-idle";
  ASSERT_OK(SubmitJob(*cluster_,
                      CountWindowRunArgs(Input(",idle=2s"), idle_output, kNeverCount, kTimeoutMs,
                                         {"--parallelism", "2", "--checkpoint-interval", "300ms"}))
                .status());
  job = WaitForJob(
      [&](const nlohmann::json& j) { return j.value("watermark", int64_t{0}) == watermark; },
      "the largest watermark of partitions 0 and 1, all partitions idle");
  EXPECT_EQ(job.value("late_records", int64_t{-1}), 0) << "a reader stalled longer than idle=";
  WaitForCountWindowOutput(idle_output, with_idleness, "with idle partitions");
  MustRun({"cancel"});
}

TEST_F(KafkaSourceTest, AnUnreachableBrokerOrAMissingTopicIsRefusedAtSubmit) {
  auto missing =
      cluster_->Cli({"run", "--job", "count-window", "--input",
                     "kafka:bootstrap=" + Semicolons(kafka_->bootstrap()) + ",topic=no-such-topic"},
                    Duration::Seconds(60));
  ASSERT_OK(missing);
  EXPECT_EQ(missing->exit_code, 2) << missing->out << missing->err;
  EXPECT_THAT(missing->err, HasSubstr("the Kafka topic 'no-such-topic' does not exist on"));
  auto unreachable = cluster_->Cli(
      {"run", "--job", "count-window", "--input", "kafka:bootstrap=127.0.0.1:1,topic=events"},
      Duration::Seconds(60));
  ASSERT_OK(unreachable);
  EXPECT_EQ(unreachable->exit_code, 2) << unreachable->out << unreachable->err;
  EXPECT_THAT(unreachable->err, HasSubstr("the Kafka brokers 127.0.0.1:1 did not answer"));
  // A failed authentication: the mock speaks no SASL, so a SASL client's login fails there as a
  // refused one does on a real broker (librdkafka reports both as an authentication error). It
  // is named as such, the password is not, and for the sink as for the source.
  const std::string sasl =
      ",kafka.security.protocol=SASL_PLAINTEXT,kafka.sasl.mechanism=PLAIN,"
      "kafka.sasl.username=alice,kafka.sasl.password=s3cret";
  const std::string bootstrap = "kafka:bootstrap=" + Semicolons(kafka_->bootstrap());
  auto refused =
      cluster_->Cli({"run", "--job", "count-window", "--input", bootstrap + ",topic=events" + sasl},
                    Duration::Seconds(60));
  ASSERT_OK(refused);
  EXPECT_EQ(refused->exit_code, 2) << refused->out << refused->err;
  EXPECT_THAT(refused->err, HasSubstr("refused keyflow's authentication: "));
  EXPECT_THAT(refused->err, HasSubstr("SASL"));
  EXPECT_THAT(refused->err,
              HasSubstr("(check kafka.security.protocol, kafka.sasl.mechanism and the "
                        "credentials)"));
  EXPECT_THAT(refused->err, Not(HasSubstr("s3cret")));
  auto refused_sink = cluster_->Cli({"run", "--job", "count-window", "--input", Input(), "--output",
                                     bootstrap + ",topic=out,guarantee=at-least-once" + sasl},
                                    Duration::Seconds(60));
  ASSERT_OK(refused_sink);
  EXPECT_EQ(refused_sink->exit_code, 2) << refused_sink->out << refused_sink->err;
  EXPECT_THAT(refused_sink->err, HasSubstr("refused keyflow's authentication: "));
  EXPECT_THAT(refused_sink->err, Not(HasSubstr("s3cret")));
  auto status = cluster_->Cli({"status", "--json"}, Duration::Seconds(30));
  ASSERT_OK(status);
  EXPECT_THAT(status->out, HasSubstr("\"job\": null")) << "nothing was submitted";
}

}  // namespace
}  // namespace keyflow::test
