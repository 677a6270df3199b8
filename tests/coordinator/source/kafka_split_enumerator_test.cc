// KafkaSplitEnumerator with a scripted partition discovery (no broker): what Start and the ticks
// assign, from which offsets, to which reader; restores; bounded mode; discovery failures.
#include "coordinator/source/kafka_split_enumerator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <future>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/coordinator/source/recording_context.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using test::Encode;
using test::RecordingContext;
using ::testing::HasSubstr;

// What one discovery call was asked.
struct Call {
  std::set<KafkaTopicPartition> known;
  bool initial = false;
};

// Answers each discovery with the next scripted result (ready at once, unless `hold` is set:
// then the future is ready only once release() is called).
class ScriptedDiscovery {
 public:
  void Add(Result<std::vector<DiscoveredPartition>> r) { results_.push_back(std::move(r)); }
  KafkaPartitionDiscoverer discoverer() {
    return [this](const KafkaSourceSpec&, std::set<KafkaTopicPartition> known, bool initial) {
      calls.push_back({std::move(known), initial});
      std::promise<Result<std::vector<DiscoveredPartition>>> p;
      EXPECT_FALSE(results_.empty()) << "an unscripted discovery";
      Result<std::vector<DiscoveredPartition>> r =
          results_.empty() ? Result<std::vector<DiscoveredPartition>>(Internal("unscripted"))
                           : std::move(results_.front());
      if (!results_.empty()) results_.pop_front();
      if (hold) {
        held_ = std::move(p);
        held_result_ = std::move(r);
        return held_.get_future();
      }
      p.set_value(std::move(r));
      return p.get_future();
    };
  }
  void release() { held_.set_value(std::move(held_result_)); }

  std::vector<Call> calls;
  bool hold = false;

 private:
  std::deque<Result<std::vector<DiscoveredPartition>>> results_;
  std::promise<Result<std::vector<DiscoveredPartition>>> held_;
  Result<std::vector<DiscoveredPartition>> held_result_ = Internal("nothing held");
};

constexpr char kInput[] = "kafka:bootstrap=127.0.0.1:9092,topic=a;b,discovery=1s";

std::unique_ptr<KafkaSplitEnumerator> Create(const std::string& text, ScriptedDiscovery& d,
                                             const RestoredSplits* restored = nullptr) {
  Result<InputSpec> input = InputSpec::Parse(text);
  EXPECT_OK(input);
  Result<std::unique_ptr<KafkaSplitEnumerator>> e =
      KafkaSplitEnumerator::Create(*input, restored, d.discoverer());
  EXPECT_OK(e);
  if (!e.ok()) return nullptr;
  return std::move(e).value();
}

SourceSplitState Split(int32_t id, const std::string& topic, int32_t partition, int64_t offset,
                       int64_t stop = SourceSplit::kNoStopOffset) {
  return {SourceSplit::KafkaPartition(SplitId(id), topic, partition, stop),
          SplitPosition::InKafka(offset)};
}

TEST(KafkaSplitEnumeratorTest, StartAssignsEveryPartitionFromItsResolvedOffsetByIdModuloP) {
  ScriptedDiscovery d;
  d.Add(std::vector<DiscoveredPartition>{{"a", 0, 5, -1}, {"a", 1, 0, -1}, {"b", 0, 7, -1}});
  auto e = Create(kInput, d);
  RecordingContext ctx(2);
  ASSERT_OK(e->Start(ctx));
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_TRUE(d.calls[0].initial) << "a job without positions applies the spec's start";
  EXPECT_TRUE(d.calls[0].known.empty());
  ASSERT_EQ(ctx.assigned.size(), 3u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, Split(0, "a", 0, 5)));
  EXPECT_EQ(ctx.assigned[1], std::make_pair(0, Split(2, "b", 0, 7)));
  EXPECT_EQ(ctx.assigned[2], std::make_pair(1, Split(1, "a", 1, 0)));
  EXPECT_TRUE(ctx.ended.empty()) << "unbounded: readers wait for more partitions";
  EXPECT_EQ(e->StatusJson().dump(),
            R"({"bounded":false,"discovery_error":"","discovery_interval_ms":1000,)"
            R"("kind":"kafka","lag":[],"lag_error":"","lag_ms":-1,"lag_records":-1,"splits":3,)"
            R"("topic_pattern":"","topics":["a","b"]})");
}

TEST(KafkaSplitEnumeratorTest, TicksDiscoverNewPartitionsEveryIntervalOffTheControlThread) {
  ScriptedDiscovery d;
  d.Add(std::vector<DiscoveredPartition>{{"a", 0, 0, -1}});
  d.Add(std::vector<DiscoveredPartition>{{"a", 1, 0, -1}, {"b", 0, 3, -1}});
  d.Add(Unavailable("the Kafka brokers 127.0.0.1:9092 did not answer"));
  auto e = Create(kInput, d);
  RecordingContext ctx(2);
  ASSERT_OK(e->Start(ctx));
  ctx.assigned.clear();
  e->OnTick(ctx, 10'000);  // the first tick only schedules: next discovery at 11'000
  e->OnTick(ctx, 10'999);
  EXPECT_EQ(d.calls.size(), 1u);
  d.hold = true;
  e->OnTick(ctx, 11'000);
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_FALSE(d.calls[1].initial) << "later partitions are read from their log start";
  EXPECT_EQ(d.calls[1].known, (std::set<KafkaTopicPartition>{{"a", 0}}));
  EXPECT_TRUE(ctx.assigned.empty()) << "the discovery has not answered yet";
  e->OnTick(ctx, 11'500);
  EXPECT_TRUE(ctx.assigned.empty());
  EXPECT_EQ(d.calls.size(), 2u) << "one discovery at a time";
  d.release();
  d.hold = false;
  e->OnTick(ctx, 11'600);
  ASSERT_EQ(ctx.assigned.size(), 2u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, Split(2, "b", 0, 3)));
  EXPECT_EQ(ctx.assigned[1], std::make_pair(1, Split(1, "a", 1, 0)));
  // The next one fails: logged, shown, retried an interval later.
  e->OnTick(ctx, 12'600);
  EXPECT_THAT(e->StatusJson().value("discovery_error", ""), HasSubstr("did not answer"));
  EXPECT_EQ(e->known_splits(), 3u);
}

TEST(KafkaSplitEnumeratorTest, ARestoreHandsBackTheCheckpointedOffsetsAndReadsNewPartitionsWhole) {
  ScriptedDiscovery d;
  d.Add(std::vector<DiscoveredPartition>{{"b", 1, 0, -1}});
  RestoredSplits restored = {{"0", Encode(Split(0, "a", 0, 41))},
                             {"3", Encode(Split(3, "b", 0, 12))}};
  auto e = Create(kInput, d, &restored);
  RecordingContext ctx(3);
  ASSERT_OK(e->Start(ctx));
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_FALSE(d.calls[0].initial);
  EXPECT_EQ(d.calls[0].known, (std::set<KafkaTopicPartition>{{"a", 0}, {"b", 0}}));
  ASSERT_EQ(ctx.assigned.size(), 3u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, Split(0, "a", 0, 41)));
  EXPECT_EQ(ctx.assigned[1], std::make_pair(0, Split(3, "b", 0, 12)));
  EXPECT_EQ(ctx.assigned[2], std::make_pair(1, Split(4, "b", 1, 0)));
}

TEST(KafkaSplitEnumeratorTest, BoundedEndsEveryReaderAtStartAndNeverDiscoversAgain) {
  ScriptedDiscovery d;
  d.Add(std::vector<DiscoveredPartition>{{"a", 0, 2, 9}});
  auto e = Create("kafka:bootstrap=h:1,topic=a,stop=latest", d);
  RecordingContext ctx(2);
  ASSERT_OK(e->Start(ctx));
  ASSERT_EQ(ctx.assigned.size(), 1u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, Split(0, "a", 0, 2, 9)));
  EXPECT_EQ(ctx.ended, (std::vector<int32_t>{0, 1}));
  e->OnTick(ctx, 0);
  e->OnTick(ctx, 1'000'000);
  EXPECT_EQ(d.calls.size(), 1u);
}

// The consumer lag is measured every discovery interval (also when bounded), off the control
// thread, for the partitions known then; a failed measurement keeps the last one and says why.
TEST(KafkaSplitEnumeratorTest, TicksMeasureTheConsumerLagOfTheKnownPartitionsEveryInterval) {
  ScriptedDiscovery d;
  d.Add(std::vector<DiscoveredPartition>{{"a", 0, 0, 9}, {"a", 1, 0, 4}});
  std::vector<std::set<KafkaTopicPartition>> asked;
  std::deque<Result<std::vector<KafkaPartitionLag>>> answers;
  answers.push_back(std::vector<KafkaPartitionLag>{{"a", 0, 3, 9, 61'500}, {"a", 1, -1, 4}});
  answers.push_back(Unavailable("the Kafka brokers h:1 did not answer"));
  KafkaLagProbe probe = [&](const KafkaSourceSpec&, std::set<KafkaTopicPartition> partitions) {
    asked.push_back(std::move(partitions));
    std::promise<Result<std::vector<KafkaPartitionLag>>> p;
    p.set_value(std::move(answers.front()));
    answers.pop_front();
    return p.get_future();
  };
  ASSERT_OK_AND_ASSIGN(InputSpec input,
                       InputSpec::Parse("kafka:bootstrap=h:1,topic=a,stop=latest,discovery=1s"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KafkaSplitEnumerator> e,
                       KafkaSplitEnumerator::Create(input, nullptr, d.discoverer(), probe));
  RecordingContext ctx(1);
  ASSERT_OK(e->Start(ctx));
  EXPECT_EQ(e->StatusJson()["lag_records"], -1) << "nothing measured yet";
  e->OnTick(ctx, 0);  // schedules the first measurement at 1000
  e->OnTick(ctx, 999);
  EXPECT_TRUE(asked.empty());
  e->OnTick(ctx, 1000);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], (std::set<KafkaTopicPartition>{{"a", 0}, {"a", 1}}));
  nlohmann::json status = e->StatusJson();
  EXPECT_EQ(status["lag_records"], 6) << status.dump();  // partition 1 has no committed offset
  EXPECT_EQ(status["lag"][0]["records"], 6);
  EXPECT_EQ(status["lag"][1]["records"], -1);
  EXPECT_EQ(status["lag"][1]["end"], 4);
  EXPECT_EQ(status["lag"][0]["ms"], 61'500);
  EXPECT_EQ(status["lag"][1]["ms"], -1);
  EXPECT_EQ(status["lag_ms"], 61'500) << "the oldest partition's";
  EXPECT_EQ(status["lag_error"], "");
  e->OnTick(ctx, 1999);
  EXPECT_EQ(asked.size(), 1u);
  e->OnTick(ctx, 2000);
  ASSERT_EQ(asked.size(), 2u);
  status = e->StatusJson();
  EXPECT_EQ(status["lag_records"], 6) << "the last measurement stays";
  EXPECT_THAT(status["lag_error"].get<std::string>(), HasSubstr("did not answer"));
  EXPECT_EQ(d.calls.size(), 1u) << "bounded: no discovery after the start";
}

TEST(KafkaSplitEnumeratorTest, AFailedFirstDiscoveryFailsTheDeploymentWithItsReason) {
  ScriptedDiscovery d;
  d.Add(NotFound("the Kafka topic 'a' does not exist on h:1: create it first"));
  auto e = Create("kafka:bootstrap=h:1,topic=a", d);
  RecordingContext ctx(1);
  Status s = e->Start(ctx);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("the Kafka topic 'a' does not exist on h:1"));
  EXPECT_TRUE(ctx.assigned.empty());
}

TEST(KafkaSplitEnumeratorTest, ACheckpointOfAnotherInputIsRefused) {
  ScriptedDiscovery d;
  RestoredSplits file = {{"0", Encode({SourceSplit::File(SplitId(0), "/x.jsonl"), {}})}};
  Result<InputSpec> input = InputSpec::Parse(kInput);
  ASSERT_OK(input);
  auto e = KafkaSplitEnumerator::Create(*input, &file, d.discoverer());
  EXPECT_EQ(e.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(e.status().message(), HasSubstr("restore with the same --input"));
  RestoredSplits other_topic = {{"0", Encode(Split(0, "c", 0, 1))}};
  e = KafkaSplitEnumerator::Create(*input, &other_topic, d.discoverer());
  EXPECT_EQ(e.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(e.status().message(), HasSubstr("kafka split 0 (c-0)"));
  RestoredSplits corrupt = {{"0", "\x01\x03"}};
  e = KafkaSplitEnumerator::Create(*input, &corrupt, d.discoverer());
  EXPECT_EQ(e.status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace keyflow
