// The Kafka sink (--output kafka:...) against keyflow-kafka-mock over TCP (or the Kafka of
// KEYFLOW_KAFKA_BOOTSTRAP).
//
// KafkaSinkWriterTest drives the writers of worker/connectors/kafka/kafka_sink.h directly, one
// interleaving at a time: nothing is visible before its checkpoint completes; a crash after a
// checkpoint completed and before its transaction committed loses nothing and duplicates nothing
// (recovery commits it once; a second recovery of the same checkpoint writes nothing); a writer
// of an earlier attempt is fenced; a rescale hands writer w's committables to subtask w % P;
// at-least-once flushes at the barrier; keys, fixed partitions and timestamps.
//
// KafkaSinkJobTest runs count-window from a Kafka topic to a Kafka topic on a real cluster, with
// a worker SIGKILLed at that very instant (KEYFLOW_CRASH_AT=kafka-sink-before-commit): the topic
// holds every window exactly once. And the refusals at submit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/count_window_fixture.h"
#include "tests/integration/kafka_test_util.h"
#include "worker/connectors/kafka/kafka_sink.h"
#include "worker/sinks/builtin_sink.h"

namespace keyflow::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kOutPartitions = 2;

class KafkaSinkWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(kafka_, TestKafkaCluster::Start(dir_.path(), 1,
                                                         {"out:" + std::to_string(kOutPartitions),
                                                          "keyflow-sink-commits:1"}));
  }

  KafkaSinkSpec Spec(const std::string& extra = "") const {
    Result<KafkaSinkSpec> spec =
        KafkaSinkSpec::Parse("kafka:bootstrap=" + kafka_->bootstrap() + ",topic=out" + extra);
    EXPECT_OK(spec);
    return spec.ok() ? *spec : KafkaSinkSpec{};
  }

  std::unique_ptr<SinkWriter> Open(const KafkaSinkSpec& spec, int32_t subtask, int32_t parallelism,
                                   std::vector<std::string> restored = {},
                                   const std::string& job = "job1") {
    KafkaSinkContext c;
    c.job_id = job;
    c.subtask = subtask;
    c.parallelism = parallelism;
    c.restored_committables = std::move(restored);
    Result<std::unique_ptr<SinkWriter>> w = OpenKafkaSink(spec, c);
    EXPECT_OK(w);
    return w.ok() ? std::move(w).value() : nullptr;
  }

  static void WriteValues(SinkWriter* w, const std::vector<std::string>& values) {
    for (const std::string& v : values) ASSERT_OK(w->Write(OutputRecord(v)));
  }

  // The values in the topic, sorted.
  std::vector<std::string> Values() const {
    std::vector<std::string> out;
    for (const TestKafkaMessage& m : KafkaReadToEnd(kafka_->bootstrap(), "out", kOutPartitions)) {
      out.push_back(m.value);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  TestDir dir_;
  std::unique_ptr<TestKafkaCluster> kafka_;
};

TEST_F(KafkaSinkWriterTest, ACommittableRoundTripsAndACorruptOneIsRefused) {
  KafkaSinkCommittable c;
  c.job_id = "j";
  c.writer = 3;
  c.checkpoint = CheckpointId(7);
  c.records = {{std::string("k"), "{\"a\":1}", 1000}, {std::nullopt, "{}", std::nullopt}};
  const std::string bytes = c.Encode();
  ASSERT_OK_AND_ASSIGN(KafkaSinkCommittable back, KafkaSinkCommittable::Decode(bytes));
  EXPECT_EQ(back, c);
  std::string flipped = bytes;
  flipped[5] ^= 1;
  EXPECT_THAT(KafkaSinkCommittable::Decode(flipped).status().message(),
              HasSubstr("fails its checksum"));
  EXPECT_THAT(KafkaSinkCommittable::Decode(bytes.substr(0, 4)).status().message(),
              HasSubstr("truncated"));
  EXPECT_EQ(c.TransactionalId(), "keyflow-j-w3");
  EXPECT_EQ(KafkaSinkCommittable::HintGroup("j", 3), "keyflow-sink-j-w3");
}

// The interleaving the design exists for: checkpoint 2 completed, the process died before its
// transaction was committed.
TEST_F(KafkaSinkWriterTest, ACrashBetweenCheckpointCompletionAndCommitLosesAndDuplicatesNothing) {
  std::vector<std::string> checkpoint2;
  {
    std::unique_ptr<SinkWriter> w = Open(Spec(), 0, 1);
    ASSERT_NE(w, nullptr);
    WriteValues(w.get(), {"a1", "a2", "a3"});
    ASSERT_OK(w->PrepareCommit(CheckpointId(1)).status());
    EXPECT_EQ(w->PendingCommittables().size(), 1u);
    EXPECT_EQ(Values(), std::vector<std::string>{}) << "visible before checkpoint 1 completed";
    ASSERT_OK(w->NotifyCheckpointComplete(CheckpointId(1)));
    EXPECT_EQ(Values(), (std::vector<std::string>{"a1", "a2", "a3"}));
    WriteValues(w.get(), {"b1", "b2"});
    ASSERT_OK(w->PrepareCommit(CheckpointId(2)).status());
    checkpoint2 = w->PendingCommittables();  // checkpoint 2's sink state
    ASSERT_EQ(checkpoint2.size(), 1u);
    // Checkpoint 2 completes, and the process dies before NotifyCheckpointComplete(2).
  }
  EXPECT_EQ(Values(), (std::vector<std::string>{"a1", "a2", "a3"}));
  {
    // Recovery from checkpoint 2 commits its records.
    std::unique_ptr<SinkWriter> w = Open(Spec(), 0, 1, checkpoint2);
    ASSERT_NE(w, nullptr);
  }
  EXPECT_EQ(Values(), (std::vector<std::string>{"a1", "a2", "a3", "b1", "b2"}));
  {
    // The recovered attempt dies too, before its first checkpoint: recovery from checkpoint 2
    // again finds its marker and writes nothing.
    std::unique_ptr<SinkWriter> w = Open(Spec(), 0, 1, checkpoint2);
    ASSERT_NE(w, nullptr);
    WriteValues(w.get(), {"c1"});
    ASSERT_OK(w->PrepareCommit(CheckpointId(3)).status());
    ASSERT_OK(w->NotifyCheckpointComplete(CheckpointId(3)));
  }
  EXPECT_EQ(Values(), (std::vector<std::string>{"a1", "a2", "a3", "b1", "b2", "c1"}));
  // One marker per commit, in the commit's transaction; the hint at the last one.
  std::vector<std::string> markers;
  for (const TestKafkaMessage& m : KafkaReadToEnd(kafka_->bootstrap(), "keyflow-sink-commits", 1)) {
    markers.push_back(m.key.value_or("?") + "=" + m.value);
  }
  EXPECT_THAT(markers, ElementsAre("keyflow-job1-w0=1", "keyflow-job1-w0=2", "keyflow-job1-w0=3"));
  EXPECT_EQ(
      KafkaCommittedOffsets(kafka_->bootstrap(), "keyflow-sink-job1-w0", "keyflow-sink-commits", 1),
      (std::map<int32_t, int64_t>{{0, 2}}));
}

// A crash after the commit and before anything else: the checkpoint still holds the committable
// (it was pending at the barrier), and recovery must not write it again.
TEST_F(KafkaSinkWriterTest, ACrashRightAfterTheCommitWritesNothingTwice) {
  std::vector<std::string> checkpoint1;
  {
    std::unique_ptr<SinkWriter> w = Open(Spec(), 0, 1);
    ASSERT_NE(w, nullptr);
    WriteValues(w.get(), {"a1", "a2"});
    ASSERT_OK(w->PrepareCommit(CheckpointId(1)).status());
    checkpoint1 = w->PendingCommittables();
    ASSERT_OK(w->NotifyCheckpointComplete(CheckpointId(1)));
  }
  std::unique_ptr<SinkWriter> w = Open(Spec(), 0, 1, checkpoint1);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(Values(), (std::vector<std::string>{"a1", "a2"}));
}

// A writer of an earlier attempt (a zombie: cut off, not dead) cannot commit once a new attempt
// took its transactional id over; the new attempt commits the checkpoint instead, once.
TEST_F(KafkaSinkWriterTest, AWriterOfAnEarlierAttemptIsFencedAndItsCheckpointCommittedOnce) {
  if (kafka_->is_mock()) {
    GTEST_SKIP() << "librdkafka's mock cluster does not fence: an earlier producer of a "
                    "transactional id still commits after init_transactions of a newer one";
  }
  std::unique_ptr<SinkWriter> zombie = Open(Spec(), 0, 1);
  ASSERT_NE(zombie, nullptr);
  WriteValues(zombie.get(), {"z1", "z2"});
  ASSERT_OK(zombie->PrepareCommit(CheckpointId(1)).status());
  const std::vector<std::string> checkpoint1 = zombie->PendingCommittables();
  std::unique_ptr<SinkWriter> next = Open(Spec(), 0, 1, checkpoint1);
  ASSERT_NE(next, nullptr);
  Status late = zombie->NotifyCheckpointComplete(CheckpointId(1));
  EXPECT_FALSE(late.ok());
  EXPECT_EQ(Values(), (std::vector<std::string>{"z1", "z2"}));
}

// Three writers' pending checkpoint restored at parallelism 2: subtask 0 commits writers 0 and
// 2, subtask 1 writer 1; together everything, once.
TEST_F(KafkaSinkWriterTest, ARescaleHandsWriterWToSubtaskWModuloP) {
  std::vector<std::string> checkpoint;
  std::vector<std::unique_ptr<SinkWriter>> old;
  for (int32_t s = 0; s < 3; ++s) {
    old.push_back(Open(Spec(), s, 3));
    ASSERT_NE(old.back(), nullptr);
    WriteValues(old.back().get(), {"w" + std::to_string(s) + "-1", "w" + std::to_string(s) + "-2"});
    ASSERT_OK(old.back()->PrepareCommit(CheckpointId(4)).status());
    for (std::string& c : old.back()->PendingCommittables()) checkpoint.push_back(std::move(c));
  }
  old.clear();  // the whole job died after checkpoint 4 completed
  ASSERT_OK_AND_ASSIGN(uint64_t by0, RecoverKafkaSinkCommittables(Spec(), checkpoint, 0, 2));
  ASSERT_OK_AND_ASSIGN(uint64_t by1, RecoverKafkaSinkCommittables(Spec(), checkpoint, 1, 2));
  EXPECT_EQ(by0, 4u);
  EXPECT_EQ(by1, 2u);
  EXPECT_EQ(Values(), (std::vector<std::string>{"w0-1", "w0-2", "w1-1", "w1-2", "w2-1", "w2-2"}));
  ASSERT_OK_AND_ASSIGN(uint64_t again, RecoverKafkaSinkCommittables(Spec(), checkpoint, 0, 1));
  EXPECT_EQ(again, 0u);
}

// A savepoint of a job writing to Kafka, restored as a new job writing files: the savepoint's
// pending records are committed to the topic the first job wrote to, once.
TEST_F(KafkaSinkWriterTest, ARestoreWithAnotherOutputCommitsTheCheckpointsRecordsToItsTopic) {
  std::unique_ptr<SinkWriter> w = Open(Spec(), 0, 1);
  ASSERT_NE(w, nullptr);
  WriteValues(w.get(), {"s1", "s2"});
  ASSERT_OK(w->PrepareCommit(CheckpointId(5)).status());
  DeployTask d;
  d.attempt = AttemptNumber(1);
  d.job_id = "job2";
  d.subtask = SubtaskIndex(0);
  d.spec.parallelism = 1;
  d.spec.output_dir = dir_.Subdir("files");
  RestoreAssignment restore;
  restore.checkpoint = CheckpointId(5);
  restore.sink_committables = w->PendingCommittables();
  restore.sink_directory = "kafka:bootstrap=" + kafka_->bootstrap() + ",topic=out";
  d.restore = restore;
  w.reset();                     // the first job is gone
  for (int i = 0; i < 2; ++i) {  // and a second deployment of the new job changes nothing
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SinkWriter> files, OpenBuiltinSink(d));
    EXPECT_EQ(Values(), (std::vector<std::string>{"s1", "s2"}));
  }
}

TEST_F(KafkaSinkWriterTest, AtLeastOnceRecordsAreDeliveredByTheBarrierSync) {
  std::unique_ptr<SinkWriter> w = Open(Spec(",guarantee=at-least-once"), 0, 1);
  ASSERT_NE(w, nullptr);
  WriteValues(w.get(), {"x1", "x2", "x3"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SinkPreCommitSync> sync, w->PrepareCommit(CheckpointId(1)));
  ASSERT_NE(sync, nullptr);
  ASSERT_OK(sync->Run());
  EXPECT_TRUE(w->PendingCommittables().empty());
  EXPECT_EQ(Values(), (std::vector<std::string>{"x1", "x2", "x3"}));
}

// A record larger than the producer's message.max.bytes is refused when written, with a
// sentence, before it enters a checkpoint (a committable that can never be committed would fail
// every recovery); the records before it are committed as usual.
TEST_F(KafkaSinkWriterTest, AnOversizedRecordIsRefusedWhenWrittenAndNothingElseIsLost) {
  for (const std::string guarantee : {"exactly-once", "at-least-once"}) {
    SCOPED_TRACE(guarantee);
    std::unique_ptr<SinkWriter> w =
        Open(Spec(",guarantee=" + guarantee + ",key=k,kafka.message.max.bytes=2000"), 0, 1);
    ASSERT_NE(w, nullptr);
    ASSERT_OK(w->Write(OutputRecord(R"({"k":"a"})")));
    // Key "bb" (2 bytes) + a value of 1963 bytes + 36 bytes of framing: 2001 > 2000.
    const std::string big = R"({"k":"bb","pad":")" + std::string(1963 - 19, 'x') + R"("})";
    ASSERT_EQ(big.size(), 1963u);
    Status refused = w->Write(OutputRecord(big));
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.message(),
                HasSubstr("an output record of 2001 bytes (key, value and 36 bytes of framing) "
                          "is larger than the 2000 bytes a Kafka record to Kafka topic out may "
                          "have"));
    ASSERT_OK(w->Write(OutputRecord(big.substr(0, 12) + big.substr(13))));  // 2000: fits
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SinkPreCommitSync> sync,
                         w->PrepareCommit(CheckpointId(1)));
    if (sync != nullptr) {
      ASSERT_OK(sync->Run());
    }
    ASSERT_OK(w->NotifyCheckpointComplete(CheckpointId(1)));
  }
  std::vector<TestKafkaMessage> got = KafkaReadToEnd(kafka_->bootstrap(), "out", kOutPartitions);
  ASSERT_EQ(got.size(), 4u) << "two records of each guarantee, the oversized ones not";
  for (const TestKafkaMessage& m : got) EXPECT_LE(m.value.size(), 1962u) << m.value.size();
}

TEST_F(KafkaSinkWriterTest, KeysComeFromTheFieldTimestampsFromTheRecordAndPartitionsAreFixed) {
  std::unique_ptr<SinkWriter> w = Open(Spec(",key=user,partition=1"), 0, 1);
  ASSERT_NE(w, nullptr);
  ASSERT_OK(w->Write(OutputRecord(R"({"user":"u\"1","n":1})", Timestamp(1'700'000'000'123))));
  ASSERT_OK(w->Write(OutputRecord(R"({"n":2,"user":42})", Timestamp(1'700'000'000'456))));
  ASSERT_OK(w->Write(OutputRecord(R"({"n":3})")));
  ASSERT_OK(w->PrepareCommit(CheckpointId(1)).status());
  ASSERT_OK(w->NotifyCheckpointComplete(CheckpointId(1)));
  std::vector<TestKafkaMessage> got = KafkaReadToEnd(kafka_->bootstrap(), "out", kOutPartitions);
  ASSERT_EQ(got.size(), 3u);
  for (const TestKafkaMessage& m : got) EXPECT_EQ(m.partition, 1);
  EXPECT_EQ(got[0].key, std::optional<std::string>("u\"1"));
  EXPECT_EQ(got[0].timestamp_ms, 1'700'000'000'123);
  EXPECT_EQ(got[1].key, std::optional<std::string>("42"));
  EXPECT_EQ(got[1].timestamp_ms, 1'700'000'000'456);
  EXPECT_EQ(got[2].key, std::nullopt);
  EXPECT_EQ(got[2].value, R"({"n":3})");
}

TEST_F(KafkaSinkWriterTest, KeyedRecordsGoToKafkasDefaultMurmur2Partition) {
  std::unique_ptr<SinkWriter> w = Open(Spec(",key=k"), 0, 1);
  ASSERT_NE(w, nullptr);
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK(w->Write(OutputRecord("{\"k\":\"key-" + std::to_string(i) + "\"}")));
  }
  ASSERT_OK(w->PrepareCommit(CheckpointId(1)).status());
  ASSERT_OK(w->NotifyCheckpointComplete(CheckpointId(1)));
  std::vector<TestKafkaMessage> got = KafkaReadToEnd(kafka_->bootstrap(), "out", kOutPartitions);
  ASSERT_EQ(got.size(), 20u);
  // The Java client's partition of each key (murmur2, positive, mod 2), computed independently.
  auto murmur2 = [](const std::string& data) {
    const uint32_t m = 0x5bd1e995;
    const int r = 24;
    uint32_t h = 0x9747b28c ^ static_cast<uint32_t>(data.size());
    size_t i = 0;
    for (; i + 4 <= data.size(); i += 4) {
      uint32_t k;
      std::memcpy(&k, data.data() + i, 4);
      k *= m;
      k ^= k >> r;
      k *= m;
      h *= m;
      h ^= k;
    }
    switch (data.size() & 3) {
      case 3:
        h ^= static_cast<uint32_t>(static_cast<uint8_t>(data[i + 2])) << 16;
        [[fallthrough]];
      case 2:
        h ^= static_cast<uint32_t>(static_cast<uint8_t>(data[i + 1])) << 8;
        [[fallthrough]];
      case 1:
        h ^= static_cast<uint8_t>(data[i]);
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (h & 0x7fffffff) % kOutPartitions;
  };
  for (const TestKafkaMessage& m : got) {
    ASSERT_TRUE(m.key.has_value());
    EXPECT_EQ(m.partition, static_cast<int32_t>(murmur2(*m.key))) << *m.key;
  }
}

// count-window from topic "events" to topic "results" on a two-worker cluster; worker 1 dies by
// SIGKILL in its first NotifyCheckpointComplete with pending records, before the commit.
class KafkaSinkJobTest : public CountWindowClusterTest {
 protected:
  static constexpr int kPartitions = 3;
  static constexpr int64_t kNeverMs = 1'000'000'000;
  void Configure(ClusterOptions* o) const override {
    o->placement.resize(2);
    o->placement[1].prefix = {"env", "KEYFLOW_CRASH_AT=kafka-sink-before-commit"};
  }
  void SetUp() override {
    CountWindowClusterTest::SetUp();
    ASSERT_FALSE(HasFailure());
    ASSERT_OK_AND_ASSIGN(
        kafka_, TestKafkaCluster::Start(
                    dir_.path(), 1,
                    {"events:" + std::to_string(kPartitions),
                     "results:" + std::to_string(kOutPartitions), "keyflow-sink-commits:1"},
                    {"nope", "no-markers"}));
    JsonLinesInputOptions o;
    o.files = 3;
    o.records_per_file = 2'000;
    o.cold_keys_per_file = 100;
    ASSERT_OK_AND_ASSIGN(input_, WriteJsonLinesInput(dir_.Subdir("input"), o));
  }
  void TearDown() override {
    cluster_.reset();
    kafka_.reset();
  }
  std::string Bootstrap() const {
    std::string s = kafka_->bootstrap();
    std::replace(s.begin(), s.end(), ',', ';');
    return s;
  }
  void ProduceFile(int f) {
    KafkaProduceLines(kafka_->bootstrap(), "events", f % kPartitions,
                      input_.files[static_cast<size_t>(f)]);
  }
  // The canonical count-window lines in topic "results".
  std::vector<std::string> Results() const {
    std::vector<std::string> out;
    for (const TestKafkaMessage& m :
         KafkaReadToEnd(kafka_->bootstrap(), "results", kOutPartitions)) {
      Result<std::string> line =
          CanonicalCountWindow(nlohmann::json::parse(m.value, nullptr, false));
      out.push_back(line.ok() ? *line : "unparsable: " + m.value);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<TestKafkaCluster> kafka_;
  JsonLinesInput input_;
};

TEST_F(KafkaSinkJobTest,
       AWorkerKilledBetweenCheckpointCompletionAndCommitLosesAndDuplicatesNothing) {
  for (int f = 0; f < 3; ++f) ProduceFile(f);
  ASSERT_FALSE(HasFailure());
  // A secret client property (unused by a PLAINTEXT connection) must not show anywhere.
  const std::string secret = "s3cr3t-s1nk";
  const std::string output =
      "kafka:bootstrap=" + Bootstrap() + ",topic=results,key=key,kafka.sasl.password=" + secret;
  ASSERT_OK(
      SubmitJob(*cluster_, CountWindowRunArgs("kafka:bootstrap=" + Bootstrap() + ",topic=events",
                                              output, kCount, kNeverMs,
                                              {"--parallelism", "2", "--checkpoint-interval",
                                               "300ms", "--replacement-timeout", "1s"}))
          .status());
  // Worker 1 dies at its first commit; the job goes on at parallelism 1 on worker 0, whose
  // recovery commits writer 1's pending checkpoint (1 % 1 = 0) and its own.
  const std::vector<std::string> expected =
      ClosedByCount(ReferenceCountWindow(input_.records, kCount, kNeverMs));
  std::vector<std::string> actual;
  EXPECT_OK(WaitUntil(
      [&] {
        actual = Results();
        return actual.size() >= expected.size();
      },
      Duration::Seconds(90), "every window in topic results"));
  EXPECT_TRUE(SameLines(actual, expected)) << cluster_->LogExcerpts();
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "RUNNING"; }, "running");
  EXPECT_GE(job.value("attempt", 0), 2) << job.dump();
  EXPECT_THAT(ReadFileOrEmpty(cluster_->WorkerLog(1)),
              HasSubstr("crash point kafka-sink-before-commit reached"));
  // Writer 1's pending checkpoint was committed by the recovery (nothing of it was before).
  EXPECT_THAT(cluster_->LogExcerpts(),
              ::testing::ContainsRegex("kafka sink recovery writer=1 job=[^ ]+ committables=[0-9]+ "
                                       "marker_before=0 records_written=[1-9]"));
  EXPECT_THAT(job.value("output", ""), HasSubstr("kafka.sasl.password=***"));
  EXPECT_EQ(job.dump().find(secret), std::string::npos) << job.dump();
  EXPECT_EQ(cluster_->LogExcerpts().find(secret), std::string::npos);
  // Later checkpoints add nothing (no window is left to close) and duplicate nothing.
  const int64_t seen = job["checkpoints"].value("latest_completed", int64_t{0});
  WaitForJob(
      [&](const nlohmann::json& j) {
        return j["checkpoints"].value("latest_completed", int64_t{0}) >= seen + 2;
      },
      "two more checkpoints");
  EXPECT_TRUE(SameLines(Results(), expected));
  MustRun({"cancel"});
}

TEST_F(KafkaSinkJobTest,
       SubmitRefusesExactlyOnceWithoutCheckpointsAShortTransactionTimeoutAndAMissingTopic) {
  const std::string in = "kafka:bootstrap=" + Bootstrap() + ",topic=events";
  const std::string out = "kafka:bootstrap=" + Bootstrap() + ",topic=results";
  struct Case {
    std::string output;
    std::vector<std::string> extra;
    std::string says;
  };
  const std::vector<Case> cases = {
      {out, {}, "commits at checkpoints: set --checkpoint-interval"},
      {out + ",kafka.transaction.timeout.ms=30000",
       {"--checkpoint-interval", "10s"},
       "kafka.transaction.timeout.ms=30000 is shorter than the checkpoint interval (10000 ms) "
       "plus 60 s"},
      {"kafka:bootstrap=" + Bootstrap() + ",topic=nope", {"--checkpoint-interval", "1s"}, "nope"},
      {out + ",partition=5", {"--checkpoint-interval", "1s"}, "has 2 partitions, no partition 5"},
      {out + ",markers=no-markers",
       {"--checkpoint-interval", "1s"},
       "exactly-once writes a commit marker per transaction to topic no-markers, which is not "
       "there"},
      {out + ",guarantee=maybe", {}, "guarantee 'maybe' is neither"},
      {out + ",kafka.transactional.id=x", {}, "the property 'transactional.id' is keyflow's own"},
  };
  for (const Case& c : cases) {
    const std::vector<std::string> args =
        CountWindowRunArgs(in, c.output, kCount, kNeverMs, c.extra);
    ASSERT_OK_AND_ASSIGN(CommandResult r, cluster_->Cli(args, Duration::Seconds(60)));
    EXPECT_EQ(r.exit_code, 2) << c.output << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << c.output;
  }
  ASSERT_OK_AND_ASSIGN(nlohmann::json status, cluster_->StatusJson());
  EXPECT_FALSE(status["job"].is_object()) << "a refused job was deployed: " << status.dump();
}

}  // namespace
}  // namespace keyflow::test
